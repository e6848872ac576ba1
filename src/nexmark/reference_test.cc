#include "nexmark/reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nexmark/canonical_row.h"
#include "sql/database.h"

namespace weir::nexmark {
namespace {

constexpr int64_t kEvents = 50'000;

struct TimedBid {
  Bid bid;
  int64_t time;
};
struct TimedPerson {
  Person person;
  int64_t time;
};
struct TimedAuction {
  Auction auction;
  int64_t time;
};

// The events as plain structs, for the brute-force models, and a database loaded with them.
class NexmarkReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    generator_ = new NexmarkGenerator(NexmarkConfig{});
    auto db = sql::Database::OpenInMemory(2);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value().release();
    Status s = LoadEvents(*db_, *generator_, kEvents);
    ASSERT_TRUE(s.ok()) << s.ToString();
    bids_ = new std::vector<TimedBid>;
    people_ = new std::vector<TimedPerson>;
    auctions_ = new std::vector<TimedAuction>;
    for (int64_t n = 0; n < kEvents; ++n) {
      Event e = generator_->EventAt(n);
      int64_t t = e.timestamp.value();
      switch (e.kind()) {
        case EventKind::kPerson:
          people_->push_back({e.person(), t});
          break;
        case EventKind::kAuction:
          auctions_->push_back({e.auction(), t});
          break;
        case EventKind::kBid:
          bids_->push_back({e.bid(), t});
          break;
      }
    }
  }
  static void TearDownTestSuite() {
    delete db_;
    delete generator_;
    delete bids_;
    delete people_;
    delete auctions_;
  }

  static std::multiset<std::string> Reference(Query q) {
    std::multiset<std::string> rows;
    Status s = ReferenceRows(*db_, q, [&](std::string_view row) { rows.emplace(row); });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return rows;
  }

  static std::string Row(const std::function<void(CanonicalRow&)>& fill) {
    CanonicalRow row;
    fill(row);
    return std::string(row.str());
  }

  static inline NexmarkGenerator* generator_ = nullptr;
  static inline sql::Database* db_ = nullptr;
  static inline std::vector<TimedBid>* bids_ = nullptr;
  static inline std::vector<TimedPerson>* people_ = nullptr;
  static inline std::vector<TimedAuction>* auctions_ = nullptr;
};

int64_t FloorTo(int64_t t, int64_t size) { return t / size * size; }

TEST(CanonicalRow, JoinsCellsAndEscapesText) {
  CanonicalRow row;
  row.Int(-3);
  row.Double(0.1);
  row.Fixed4(2.0 / 3);
  row.Text("a|b\\c");
  row.Null();
  EXPECT_EQ(row.str(), "-3|0.10000000000000001|0.6667|a\\|b\\\\c|\\N");
  row.Clear();
  row.Text("x");
  EXPECT_EQ(row.str(), "x");
}

TEST_F(NexmarkReference, LoadsEveryEvent) {
  int64_t total = 0;
  Status s = db_->Query(
      "SELECT (SELECT COUNT(*) FROM person) + (SELECT COUNT(*) FROM auction) + "
      "(SELECT COUNT(*) FROM bid)",
      [&](const sql::Row& row) { total = row.Int(0); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(total, kEvents);
}

TEST_F(NexmarkReference, EveryQueryRuns) {
  for (Query q : kAllQueries) {
    int64_t rows = 0;
    Status s = ReferenceRows(*db_, q, [&](std::string_view) { ++rows; });
    EXPECT_TRUE(s.ok()) << QueryName(q) << ": " << s.ToString();
    EXPECT_GT(rows, 0) << QueryName(q);
  }
}

TEST_F(NexmarkReference, Q0AndQ1MatchBruteForce) {
  std::multiset<std::string> q0, q1;
  for (const auto& [b, t] : *bids_) {
    q0.insert(Row([&](CanonicalRow& r) {
      r.Int(b.auction), r.Int(b.bidder), r.Int(b.price), r.Int(t), r.Text(b.extra);
    }));
    q1.insert(Row([&](CanonicalRow& r) {
      r.Int(b.auction), r.Int(b.bidder), r.Double(static_cast<double>(b.price) * 0.908), r.Int(t),
          r.Text(b.extra);
    }));
  }
  EXPECT_EQ(Reference(Query::kQ0), q0);
  EXPECT_EQ(Reference(Query::kQ1), q1);
}

TEST_F(NexmarkReference, Q2MatchesBruteForce) {
  std::multiset<std::string> expected;
  for (const auto& [b, t] : *bids_) {
    if (b.auction % 123 == 0) {
      expected.insert(Row([&](CanonicalRow& r) { r.Int(b.auction), r.Int(b.price); }));
    }
  }
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(Reference(Query::kQ2), expected);
}

TEST_F(NexmarkReference, Q3MatchesBruteForce) {
  std::map<int64_t, const Person*> people;
  for (const auto& p : *people_) people[p.person.id] = &p.person;
  std::multiset<std::string> expected;
  for (const auto& [a, t] : *auctions_) {
    auto it = people.find(a.seller);
    if (a.category != 10 || it == people.end()) continue;
    const Person& p = *it->second;
    if (p.state != "OR" && p.state != "ID" && p.state != "CA") continue;
    expected.insert(Row(
        [&](CanonicalRow& r) { r.Text(p.name), r.Text(p.city), r.Text(p.state), r.Int(a.id); }));
  }
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(Reference(Query::kQ3), expected);
}

TEST_F(NexmarkReference, Q4MatchesBruteForce) {
  std::map<int64_t, std::vector<const TimedBid*>> bids_by_auction;
  for (const auto& b : *bids_) bids_by_auction[b.bid.auction].push_back(&b);
  std::map<int64_t, std::pair<int64_t, int64_t>> sum_count;  // category -> (sum, count)
  for (const auto& [a, t] : *auctions_) {
    int64_t final_price = -1;
    for (const TimedBid* b : bids_by_auction[a.id]) {
      if (b->time >= t && b->time <= a.expires_ms) {
        final_price = std::max(final_price, b->bid.price);
      }
    }
    if (final_price < 0) continue;
    sum_count[a.category].first += final_price;
    sum_count[a.category].second += 1;
  }
  std::multiset<std::string> expected;
  for (const auto& [category, sc] : sum_count) {
    expected.insert(Row([&](CanonicalRow& r) {
      r.Int(category), r.Fixed4(static_cast<double>(sc.first) / static_cast<double>(sc.second));
    }));
  }
  EXPECT_EQ(expected.size(), 5u);
  EXPECT_EQ(Reference(Query::kQ4), expected);
}

TEST_F(NexmarkReference, Q5MatchesBruteForce) {
  std::map<int64_t, std::map<int64_t, int64_t>> counts;  // window start -> auction -> count
  for (const auto& [b, t] : *bids_) {
    for (int64_t k = 0; k < 5; ++k) counts[(t / 2000 - k) * 2000][b.auction]++;
  }
  std::multiset<std::string> expected;
  for (const auto& [start, by_auction] : counts) {
    int64_t max = 0;
    for (const auto& [auction, n] : by_auction) max = std::max(max, n);
    for (const auto& [auction, n] : by_auction) {
      if (n == max)
        expected.insert(Row([&](CanonicalRow& r) { r.Int(auction), r.Int(n), r.Int(start); }));
    }
  }
  EXPECT_EQ(Reference(Query::kQ5), expected);
}

TEST_F(NexmarkReference, Q7MatchesBruteForce) {
  std::map<int64_t, int64_t> max_price;
  for (const auto& [b, t] : *bids_) {
    int64_t& m = max_price[FloorTo(t, 10000)];
    m = std::max(m, b.price);
  }
  std::multiset<std::string> expected;
  for (const auto& [b, t] : *bids_) {
    if (b.price != max_price[FloorTo(t, 10000)]) continue;
    expected.insert(Row([&](CanonicalRow& r) {
      r.Int(b.auction), r.Int(b.price), r.Int(b.bidder), r.Int(t), r.Text(b.extra);
    }));
  }
  EXPECT_EQ(Reference(Query::kQ7), expected);
}

TEST_F(NexmarkReference, Q8MatchesBruteForce) {
  std::set<std::pair<int64_t, int64_t>> sellers;  // (seller, window start)
  for (const auto& [a, t] : *auctions_) sellers.emplace(a.seller, FloorTo(t, 10000));
  std::set<std::string> expected;
  for (const auto& [p, t] : *people_) {
    if (!sellers.count({p.id, FloorTo(t, 10000)})) continue;
    expected.insert(
        Row([&](CanonicalRow& r) { r.Int(p.id), r.Text(p.name), r.Int(FloorTo(t, 10000)); }));
  }
  EXPECT_FALSE(expected.empty());
  std::multiset<std::string> want(expected.begin(), expected.end());
  EXPECT_EQ(Reference(Query::kQ8), want);
}

TEST_F(NexmarkReference, Q11MatchesBruteForce) {
  std::map<int64_t, std::vector<int64_t>> times;
  for (const auto& [b, t] : *bids_) times[b.bidder].push_back(t);
  std::multiset<std::string> expected;
  for (auto& [bidder, ts] : times) {
    std::sort(ts.begin(), ts.end());
    size_t first = 0;
    for (size_t i = 1; i <= ts.size(); ++i) {
      if (i == ts.size() || ts[i] - ts[i - 1] > 10000) {
        expected.insert(Row([&](CanonicalRow& r) {
          r.Int(bidder), r.Int(static_cast<int64_t>(i - first)), r.Int(ts[first]),
              r.Int(ts[i - 1] + 1);
        }));
        first = i;
      }
    }
  }
  EXPECT_EQ(Reference(Query::kQ11), expected);
}

TEST_F(NexmarkReference, Q12MatchesBruteForce) {
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;  // (bidder, window start) -> count
  for (const auto& [b, t] : *bids_) counts[{b.bidder, FloorTo(t, 10000)}]++;
  std::multiset<std::string> expected;
  for (const auto& [key, n] : counts) {
    expected.insert(Row([&](CanonicalRow& r) {
      r.Int(key.first), r.Int(n), r.Int(key.second), r.Int(key.second + 10000);
    }));
  }
  EXPECT_EQ(Reference(Query::kQ12), expected);
}

}  // namespace
}  // namespace weir::nexmark
