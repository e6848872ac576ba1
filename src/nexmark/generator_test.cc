#include "nexmark/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nexmark/java_random.h"

// Counts operator new calls, for the test that in-place generation allocates nothing. The tests
// run on one thread.
namespace {
int64_t heap_allocations = 0;
}  // namespace

// GCC sees free() of what it takes for new's memory (it is malloc's) when it inlines these.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t size) {
  ++heap_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (simdjson's parser uses it): every unaligned new and delete is then
// malloc and free, which AddressSanitizer checks as a matched pair.
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  ++heap_allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace weir::nexmark {
namespace {

std::string Json(const Event& e) {
  std::string out;
  e.AppendJson(out);
  return out;
}

TEST(JavaRandom, MatchesJavaUtilRandom) {
  // Values printed by java.util.Random on any JVM.
  EXPECT_EQ(JavaRandom(0).NextInt(), -1155484576);
  EXPECT_EQ(JavaRandom(42).NextInt(), -1170105035);
  EXPECT_DOUBLE_EQ(JavaRandom(0).NextDouble(), 0.730967787376657);
}

// Java's nextExactString arithmetic, one draw at a time.
std::string JavaLetters(const std::vector<int32_t>& draws) {
  std::string letters;
  for (int32_t rnd : draws) {
    for (int k = 0; k < 6; ++k) {
      letters.push_back(static_cast<char>('a' + rnd % 26));
      rnd /= 26;
    }
  }
  return letters;
}

TEST(JavaRandom, JumpsAheadAsStepsDo) {
  for (int64_t seed : {int64_t{0}, int64_t{1}, int64_t{-7}, int64_t{123456789012345}}) {
    for (int count = 1; count <= JavaRandom::kJumpBlock; ++count) {
      JavaRandom stepped(seed);
      JavaRandom jumped(seed);
      int32_t block[JavaRandom::kJumpBlock];
      jumped.NextIntBlock(block, count);
      for (int k = 0; k < count; ++k) EXPECT_EQ(block[k], stepped.NextInt()) << seed << " " << k;
      JavaRandom ahead = stepped;  // the draws of the block past `count`, not consumed
      for (int k = count; k < JavaRandom::kJumpBlock; ++k) EXPECT_EQ(block[k], ahead.NextInt());
      EXPECT_EQ(jumped.NextInt(), stepped.NextInt()) << seed << " " << count;
    }
    JavaRandom stepped(seed);
    JavaRandom skipped(seed);
    for (int k = 0; k < 29; ++k) stepped.NextInt();
    skipped.Skip(29);
    EXPECT_EQ(skipped.NextInt(), stepped.NextInt());
  }
}

// The letters of `extra` follow Java's signed arithmetic for every draw, both the portable way
// and with SIMD (when this CPU has it), including the extremes of int32 and the boundaries of
// the base-26 digits.
TEST(NexmarkLetters, BothWaysFollowJavaArithmetic) {
  std::vector<int32_t> draws = {INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1};
  for (int64_t power = 26; power <= INT32_MAX; power *= 26) {
    for (int64_t v : {power - 1, power, power + 1}) {
      draws.push_back(static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX)));
      draws.push_back(static_cast<int32_t>(-std::min<int64_t>(v, INT32_MAX)));
    }
  }
  std::mt19937 random(14);
  while (draws.size() < 400'000) draws.push_back(static_cast<int32_t>(random()));
  draws.resize(draws.size() / internal::kLetterBlockDraws * internal::kLetterBlockDraws);
  const std::string expected = JavaLetters(draws);
  std::vector<bool> ways = {false};
  if (internal::CpuHasSimdLetters()) ways.push_back(true);
  for (bool simd : ways) {
    std::string letters(expected.size(), '\0');
    for (size_t i = 0; i < draws.size(); i += internal::kLetterBlockDraws) {
      internal::LettersOfDraws(&draws[i], &letters[6 * i], simd);
    }
    EXPECT_EQ(letters, expected) << "simd " << simd;
  }
}

TEST(NexmarkLetters, FromAStateAreThoseOfTheDrawsThatFollowIt) {
  std::vector<bool> ways = {false};
  if (internal::CpuHasSimdLetters()) ways.push_back(true);
  for (int64_t seed = -3; seed < 3000; ++seed) {
    JavaRandom random(seed * 7919);
    random.NextInt();
    const uint64_t state = random.state();
    const int blocks = 1 + static_cast<int>(seed & 3);
    std::vector<int32_t> draws;
    for (int k = 0; k < blocks * internal::kLetterBlockDraws; ++k)
      draws.push_back(random.NextInt());
    for (bool simd : ways) {
      std::string letters(draws.size() * 6, '\0');
      internal::LettersOfState(state, blocks, letters.data(), simd);
      ASSERT_EQ(letters, JavaLetters(draws)) << "seed " << seed << " simd " << simd;
    }
  }
}

TEST(NexmarkGenerator, MixIsOnePersonThreeAuctionsFortySixBidsPerFifty) {
  NexmarkGenerator gen({});
  for (int64_t block = 0; block < 200; ++block) {
    int counts[3] = {0, 0, 0};
    for (int64_t i = 0; i < kProportionDenominator; ++i) {
      counts[static_cast<int>(gen.EventAt(block * kProportionDenominator + i).kind())]++;
    }
    EXPECT_EQ(counts[0], 1) << "block " << block;
    EXPECT_EQ(counts[1], 3) << "block " << block;
    EXPECT_EQ(counts[2], 46) << "block " << block;
  }
}

TEST(NexmarkGenerator, OutOfOrderGroupsKeepTheMixAndShuffleWithinTheGroup) {
  NexmarkConfig config;
  config.out_of_order_group_size = 1000;
  NexmarkGenerator gen(config);
  for (int64_t group = 0; group < 5; ++group) {
    int counts[3] = {0, 0, 0};
    std::set<int64_t> ids;
    for (int64_t i = 0; i < 1000; ++i) {
      const Event e = gen.EventAt(group * 1000 + i);
      counts[static_cast<int>(e.kind())]++;
      ids.insert(e.event_id);
    }
    EXPECT_EQ(counts[0], 20);
    EXPECT_EQ(counts[1], 60);
    EXPECT_EQ(counts[2], 920);
    ASSERT_EQ(ids.size(), 1000u) << "a permutation of the group";
    EXPECT_EQ(*ids.begin(), group * 1000);
    EXPECT_EQ(*ids.rbegin(), group * 1000 + 999);
  }
}

TEST(NexmarkGenerator, IdsStartAtOneThousandAndIncreaseByOne) {
  NexmarkGenerator gen({});
  int64_t next_person = kFirstPersonId;
  int64_t next_auction = kFirstAuctionId;
  for (int64_t n = 0; n < 5000; ++n) {
    const Event e = gen.EventAt(n);
    if (e.kind() == EventKind::kPerson) {
      ASSERT_EQ(e.person().id, next_person++);
    } else if (e.kind() == EventKind::kAuction) {
      ASSERT_EQ(e.auction().id, next_auction++);
      EXPECT_GE(e.auction().category, kFirstCategoryId);
      EXPECT_LT(e.auction().category, kFirstCategoryId + kNumCategories);
    }
  }
  EXPECT_EQ(next_person, kFirstPersonId + 100);
  EXPECT_EQ(next_auction, kFirstAuctionId + 300);
}

// Walks the stream in order, checking every reference against the ids generated so far.
void CheckReferences(const NexmarkConfig& config, int64_t events) {
  NexmarkGenerator gen(config);
  int64_t last_person = -1;
  int64_t last_auction = -1;
  for (int64_t n = 0; n < events; ++n) {
    const Event e = gen.EventAt(n);
    switch (e.kind()) {
      case EventKind::kPerson:
        last_person = e.person().id;
        break;
      case EventKind::kAuction:
        last_auction = e.auction().id;
        ASSERT_GE(e.auction().seller, kFirstPersonId);
        ASSERT_LE(e.auction().seller, last_person + config.person_id_lead) << Json(e);
        break;
      case EventKind::kBid:
        ASSERT_GE(e.bid().auction, kFirstAuctionId);
        ASSERT_LE(e.bid().auction, last_auction + config.auction_id_lead) << Json(e);
        ASSERT_GE(e.bid().bidder, kFirstPersonId);
        // The hot bidder is the second person of the latest batch of 100 (BidGenerator), so
        // for the 49 events after each batch's first person it is one id ahead, whatever the lead.
        if (e.bid().bidder !=
            ((last_person - kFirstPersonId) / kHotBatch) * kHotBatch + 1 + kFirstPersonId) {
          ASSERT_LE(e.bid().bidder, last_person + config.person_id_lead) << Json(e);
        }
        break;
    }
  }
}

TEST(NexmarkGenerator, ReferencesAreAtMostTheReferenceLeadAhead) {
  CheckReferences(NexmarkConfig{}, 200'000);
}

TEST(NexmarkGenerator, WithoutLeadBidsAndAuctionsReferenceOnlyGeneratedIds) {
  NexmarkConfig config;
  config.person_id_lead = 0;
  config.auction_id_lead = 0;
  CheckReferences(config, 200'000);
}

TEST(NexmarkGenerator, HotAuctionsBiddersAndChannelsHaveTheReferenceShares) {
  NexmarkGenerator gen({});
  int64_t bids = 0, hot_auction = 0, hot_bidder = 0, hot_channel = 0;
  const std::set<std::string> hot_channels(std::begin(kHotChannels), std::end(kHotChannels));
  for (int64_t n = 0; n < 200'000; ++n) {
    const Event e = gen.EventAt(n);
    if (e.kind() != EventKind::kBid) continue;
    ++bids;
    hot_auction += (e.bid().auction - kFirstAuctionId) % kHotBatch == 0;
    hot_bidder += (e.bid().bidder - kFirstPersonId) % kHotBatch == 1;
    hot_channel += hot_channels.count(e.bid().channel);
  }
  // Hot with probability 1 - 1/ratio, plus the few random picks that land on the hot id.
  EXPECT_NEAR(static_cast<double>(hot_auction) / bids, 0.5, 0.03);
  EXPECT_NEAR(static_cast<double>(hot_bidder) / bids, 0.75, 0.03);
  EXPECT_NEAR(static_cast<double>(hot_channel) / bids, 0.5, 0.03);
}

// A bid's channel "channel-<k>" has a url whose channel_id, when it has one, is Java's
// Math.abs(Integer.reverse(k)), written as the bid is made: Integer.reverse bit by bit here, and
// channel 1, whose reverse is Integer.MIN_VALUE (Math.abs leaves it negative), among them. A
// channel keeps one url; nine in ten have an id.
TEST(NexmarkGenerator, ChannelUrlsCarryJavasReversedChannelNumber) {
  auto java_id = [](int32_t k) {
    uint32_t x = static_cast<uint32_t>(k), r = 0;
    for (int i = 0; i < 32; ++i, x >>= 1) r = (r << 1) | (x & 1);
    const auto reversed = static_cast<int32_t>(r);
    return std::to_string(reversed == INT32_MIN ? int64_t{reversed} : std::abs(reversed));
  };
  NexmarkGenerator gen({});
  std::map<std::string, std::string> url_of_channel;
  int64_t with_id = 0, numbered = 0;
  bool saw_channel_one = false;
  Event e;
  for (int64_t n = 0; n < 1'000'000; ++n) {
    gen.EventAt(n, e);
    if (e.kind() != EventKind::kBid || !e.bid().channel.starts_with("channel-")) continue;
    const Bid& b = e.bid();
    const int32_t k = std::stoi(b.channel.substr(8));
    ASSERT_EQ(b.channel, "channel-" + std::to_string(k));
    ASSERT_TRUE(b.url.starts_with("https://www.nexmark.com/")) << b.url;
    const size_t id_at = b.url.find("&channel_id=");
    if (id_at != std::string::npos) {
      ASSERT_EQ(b.url.substr(id_at + 12), java_id(k)) << b.url;
      ++with_id;
    }
    ASSERT_EQ(url_of_channel.emplace(b.channel, b.url).first->second, b.url);
    ++numbered;
    saw_channel_one |= k == 1 && id_at != std::string::npos;
  }
  EXPECT_NEAR(static_cast<double>(with_id) / static_cast<double>(numbered), 0.9, 0.02);
  EXPECT_TRUE(saw_channel_one);
}

TEST(NexmarkGenerator, PricesAreLogUniformCentsFromOneDollarToAMillion) {
  NexmarkGenerator gen({});
  int64_t bids = 0, below_thousand_dollars = 0;
  for (int64_t n = 0; n < 100'000; ++n) {
    const Event e = gen.EventAt(n);
    if (e.kind() == EventKind::kBid) {
      ASSERT_GE(e.bid().price, 100);
      ASSERT_LE(e.bid().price, 100'000'000);
      ++bids;
      below_thousand_dollars += e.bid().price < 100'000;
    } else if (e.kind() == EventKind::kAuction) {
      ASSERT_GE(e.auction().initial_bid, 100);
      ASSERT_LE(e.auction().initial_bid, 100'000'000);
      ASSERT_GT(e.auction().reserve, e.auction().initial_bid);
      ASSERT_GT(e.auction().expires_ms, e.timestamp.value());
    }
  }
  // round(10^(6U) * 100) < 10^5 exactly when U < 1/2.
  EXPECT_NEAR(static_cast<double>(below_thousand_dollars) / bids, 0.5, 0.02);
}

TEST(NexmarkGenerator, SameNumberGivesSameEvent) {
  NexmarkGenerator a({});
  NexmarkGenerator b({});
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{49}, int64_t{12345}, int64_t{9'999'999}}) {
    EXPECT_EQ(Json(a.EventAt(n)), Json(a.EventAt(n)));
    EXPECT_EQ(Json(a.EventAt(n)), Json(b.EventAt(n)));
  }
}

// The stream itself is pinned: a faster generator or another way of building its records must
// produce the same bytes, or every figure checked against DuckDB and every stored benchmark
// silently stops describing the same events. One event is shown whole; the first 20,000 are
// hashed (FNV-1a 64 of their JSON lines).
TEST(NexmarkGenerator, TheStreamIsPinned) {
  NexmarkGenerator generator({});
  EXPECT_EQ(
      Json(generator.EventAt(7)),
      R"({"type":"bid","auction":1000,"bidder":1001,"price":3126206,"channel":"channel-6254",)"
      R"("url":"https://www.nexmark.com/vlg/suo/kiyd/item.htm?query=1&channel_id=1981284352",)"
      R"("dateTime":1700000000000,)"
      R"("extra":"KUUY`RJaVNU`^QIWNHgdvnfxZQ]H_PbustqrpqasinNX`Q[_YKKNP\\woaecePJPO[X"})");
  uint64_t hash = 14695981039346656037ull;
  for (int64_t n = 0; n < 20'000; ++n) {
    for (char c : Json(generator.EventAt(n)) + "\n") {
      hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    }
  }
  EXPECT_EQ(hash, 6994744061497862240ull);
}

// One Event written over and over, as a source fills its slots, holds each event as a new one
// would, whatever kinds it held before.
TEST(NexmarkGenerator, AnEventWrittenInPlaceEqualsANewOne) {
  NexmarkConfig shuffled;
  shuffled.out_of_order_group_size = 100;
  shuffled.seed = 3;
  for (const NexmarkConfig& config : {NexmarkConfig{}, shuffled}) {
    NexmarkGenerator generator(config);
    Event reused;
    for (int64_t n = 0; n < 5'000; ++n) {
      generator.EventAt(n, reused);
      const Event fresh = generator.EventAt(n);
      ASSERT_EQ(reused.kind(), fresh.kind());
      ASSERT_EQ(reused.number, fresh.number);
      ASSERT_EQ(reused.event_id, fresh.event_id);
      ASSERT_EQ(Json(reused), Json(fresh)) << n;
      ASSERT_EQ(reused.ModelBytes(), fresh.ModelBytes());
    }
    // Backwards and jumping: nothing of the previous event leaks into the next.
    for (int64_t n : {int64_t{4999}, int64_t{0}, int64_t{1'000'003}, int64_t{3}, int64_t{50}}) {
      generator.EventAt(n, reused);
      ASSERT_EQ(Json(reused), Json(generator.EventAt(n))) << n;
    }
  }
}

TEST(NexmarkGenerator, GeneratingInPlaceAllocatesNothingOnceTheStringsHaveGrown) {
  NexmarkGenerator generator({});
  int64_t before = heap_allocations;
  const Event fresh = generator.EventAt(0);
  ASSERT_GT(heap_allocations, before) << "the count sees a new event's strings";
  Event event;
  for (int64_t n = 0; n < 20'000; ++n) generator.EventAt(n, event);
  before = heap_allocations;
  for (int64_t n = 20'000; n < 220'000; ++n) generator.EventAt(n, event);
  EXPECT_EQ(heap_allocations - before, 0);
}

TEST(NexmarkEvent, WriteValueIntoAReusedValueEqualsToValue) {
  NexmarkGenerator generator({});
  // A value of another type first, then an object with other and more members.
  Value reused("not an object");
  generator.EventAt(0).WriteValue(reused);
  EXPECT_EQ(reused, generator.EventAt(0).ToValue());
  reused = Value::MakeObject({{"a", 1},
                              {"b", "x"},
                              {"c", 2},
                              {"d", 3},
                              {"e", 4},
                              {"f", 5},
                              {"g", 6},
                              {"h", 7},
                              {"i", 8},
                              {"j", 9},
                              {"k", 10},
                              {"l", 11}});
  std::set<std::pair<EventKind, EventKind>> transitions;
  EventKind previous = EventKind::kBid;
  for (int64_t n = 1; n < 3'000; ++n) {
    const Event e = generator.EventAt(n);
    e.WriteValue(reused);
    ASSERT_EQ(reused, e.ToValue()) << Json(e);
    ASSERT_EQ(reused.ToJson(), Json(e));
    transitions.insert({previous, e.kind()});
    previous = e.kind();
  }
  // The value held each kind before being rewritten as each kind it follows in the stream.
  EXPECT_TRUE(transitions.count({EventKind::kBid, EventKind::kPerson}));
  EXPECT_TRUE(transitions.count({EventKind::kPerson, EventKind::kAuction}));
  EXPECT_TRUE(transitions.count({EventKind::kAuction, EventKind::kAuction}));
  EXPECT_TRUE(transitions.count({EventKind::kAuction, EventKind::kBid}));
  EXPECT_TRUE(transitions.count({EventKind::kBid, EventKind::kBid}));
}

TEST(NexmarkGenerator, ADifferentSeedGivesADifferentStreamOfTheSameShape) {
  NexmarkConfig seeded;
  seeded.seed = 7;
  NexmarkGenerator a({});
  NexmarkGenerator b(seeded);
  for (int64_t n = 0; n < 100; ++n) {
    const Event x = a.EventAt(n);
    const Event y = b.EventAt(n);
    EXPECT_EQ(x.kind(), y.kind());
    EXPECT_EQ(x.timestamp, y.timestamp);
    EXPECT_NE(Json(x), Json(y));
  }
}

TEST(NexmarkGenerator, JsonTextAndValueAgree) {
  NexmarkGenerator gen({});
  for (int64_t n = 0; n < 200; ++n) {
    const Event e = gen.EventAt(n);
    Result<Value> parsed = Value::Parse(Json(e));
    ASSERT_TRUE(parsed.ok()) << Json(e);
    EXPECT_EQ(*parsed, e.ToValue()) << Json(e);
  }
}

TEST(NexmarkGenerator, ExtraPadsTheModelSizesToTheConfiguredAverages) {
  NexmarkGenerator gen({});
  double model[3] = {0, 0, 0};
  double json[3] = {0, 0, 0};
  int64_t count[3] = {0, 0, 0};
  for (int64_t n = 0; n < 100'000; ++n) {
    const Event e = gen.EventAt(n);
    const int k = static_cast<int>(e.kind());
    model[k] += static_cast<double>(e.ModelBytes());
    json[k] += static_cast<double>(Json(e).size());
    count[k]++;
  }
  const double targets[3] = {200, 500, 100};
  const char* names[3] = {"person", "auction", "bid"};
  for (int k = 0; k < 3; ++k) {
    const double model_avg = model[k] / static_cast<double>(count[k]);
    const double json_avg = json[k] / static_cast<double>(count[k]);
    std::printf("%s: model %.1f bytes, JSON %.1f bytes (target %.0f)\n", names[k], model_avg,
                json_avg, targets[k]);
    EXPECT_NEAR(model_avg, targets[k], 0.15 * targets[k]) << names[k];
  }
}

TEST(NexmarkGenerator, TimestampsFollowTheRateInOrder) {
  NexmarkConfig config;
  config.events_per_second = 10000;  // 100 us an event
  NexmarkGenerator gen(config);
  int64_t previous = INT64_MIN;
  for (int64_t n = 0; n < 100'000; ++n) {
    const Event e = gen.EventAt(n);
    ASSERT_EQ(e.timestamp.value(), config.first_event_ms + n / 10);
    ASSERT_GE(e.timestamp.value(), previous);
    previous = e.timestamp.value();
  }
}

TEST(NexmarkGenerator, OutOfOrderTimestampsStayWithinTheirGroup) {
  NexmarkConfig config;
  config.events_per_second = 1000;  // 1 ms an event, so every shuffle shows
  config.out_of_order_group_size = 100;
  NexmarkGenerator gen(config);
  int64_t decreases = 0;
  int64_t previous = INT64_MIN;
  for (int64_t n = 0; n < 10'000; ++n) {
    const Event e = gen.EventAt(n);
    const int64_t group_start = (n / 100) * 100;
    ASSERT_EQ(gen.GeneratorWatermark(n).value(), config.first_event_ms + group_start);
    ASSERT_GE(e.timestamp.value(), gen.GeneratorWatermark(n).value());
    ASSERT_LT(e.timestamp.value(), config.first_event_ms + group_start + 100);
    decreases += e.timestamp.value() < previous;
    previous = e.timestamp.value();
  }
  EXPECT_GT(decreases, 0);
}

TEST(NexmarkGenerator, WatermarkIsFourSecondsBehindEventTime) {
  EXPECT_EQ(NexmarkGenerator::WatermarkFor(EventTime(10'000)), Watermark(6'000));
}

TEST(NexmarkConfig, RejectsNonPositiveRatesAndRatios) {
  NexmarkConfig config;
  EXPECT_TRUE(config.Validate().ok());
  config.events_per_second = 0;
  EXPECT_FALSE(config.Validate().ok());
  config = {};
  config.hot_auction_ratio = 0;
  EXPECT_FALSE(config.Validate().ok());
  config = {};
  config.out_of_order_group_size = 0;
  EXPECT_FALSE(config.Validate().ok());
}

}  // namespace
}  // namespace weir::nexmark
