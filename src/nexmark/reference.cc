#include "nexmark/reference.h"

#include <algorithm>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "nexmark/canonical_row.h"

namespace weir::nexmark {
namespace {

constexpr std::string_view kCreateTables = R"sql(
CREATE OR REPLACE TABLE person (
  id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
  state VARCHAR, dateTime BIGINT, extra VARCHAR);
CREATE OR REPLACE TABLE auction (
  id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
  dateTime BIGINT, expires BIGINT, seller BIGINT, category BIGINT, extra VARCHAR);
CREATE OR REPLACE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT,
  extra VARCHAR);
)sql";

// Appends one event to the table of its kind (kCreateTables: the fields of each kind, in order).
class EventTables {
 public:
  EventTables(sql::Appender person, sql::Appender auction, sql::Appender bid)
      : person_(std::move(person)), auction_(std::move(auction)), bid_(std::move(bid)) {}

  Status Append(const Event& event) {
    sql::Appender& table = event.kind() == EventKind::kPerson    ? person_
                           : event.kind() == EventKind::kAuction ? auction_
                                                                 : bid_;
    // The tables' columns are the event's fields, in order.
    struct Row : Event::FieldSink {
      explicit Row(sql::Appender& t) : table(t) {}
      void Int(std::string_view, int64_t v) override { table.AppendInt(v); }
      void Text(std::string_view, std::string_view v) override { table.AppendText(v); }
      sql::Appender& table;
    } row(table);
    event.ForEachField(row);
    return table.EndRow();
  }

  Status Close() {
    WEIR_RETURN_IF_ERROR(person_.Close());
    WEIR_RETURN_IF_ERROR(auction_.Close());
    return bid_.Close();
  }

 private:
  sql::Appender person_;
  sql::Appender auction_;
  sql::Appender bid_;
};

}  // namespace

Status LoadEvents(sql::Database& db, const NexmarkGenerator& generator, int64_t events) {
  if (events < 0) return Status::InvalidArgument("LoadEvents: events must be >= 0");
  WEIR_RETURN_IF_ERROR(db.Execute(kCreateTables));
  WEIR_ASSIGN_OR_RETURN(sql::Appender person, db.Appender("person"));
  WEIR_ASSIGN_OR_RETURN(sql::Appender auction, db.Appender("auction"));
  WEIR_ASSIGN_OR_RETURN(sql::Appender bid, db.Appender("bid"));
  EventTables tables(std::move(person), std::move(auction), std::move(bid));
  // Generating an event costs about as much as appending it: the next batch is generated on
  // another thread while this one appends the current batch.
  constexpr int64_t kBatch = 16384;
  auto generate = [&generator, events](int64_t from) {
    std::vector<Event> batch;
    const int64_t to = std::min(from + kBatch, events);
    batch.reserve(static_cast<size_t>(to - from));
    for (int64_t n = from; n < to; ++n) batch.push_back(generator.EventAt(n));
    return batch;
  };
  std::future<std::vector<Event>> next = std::async(std::launch::async, generate, 0);
  for (int64_t from = 0; from < events; from += kBatch) {
    std::vector<Event> batch = next.get();
    if (from + kBatch < events) next = std::async(std::launch::async, generate, from + kBatch);
    for (const Event& event : batch) WEIR_RETURN_IF_ERROR(tables.Append(event));
  }
  return tables.Close();
}

std::string ReferenceSql(Query query) {
  switch (query) {
    case Query::kQ0:
      return "SELECT auction, bidder, price, dateTime, extra FROM bid";
    case Query::kQ1:
      // 0.908 alone is a DECIMAL: both factors are cast so the product is an IEEE double one.
      return "SELECT auction, bidder, CAST(price AS DOUBLE) * CAST(0.908 AS DOUBLE) AS price, "
             "dateTime, extra FROM bid";
    case Query::kQ2:
      return "SELECT auction, price FROM bid WHERE auction % 123 = 0";
    case Query::kQ3:
      return "SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P "
             "ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')";
    case Query::kQ4:
      return "SELECT category, AVG(final) FROM ("
             " SELECT A.id, A.category, MAX(B.price) AS final FROM auction A JOIN bid B"
             " ON B.auction = A.id AND B.dateTime BETWEEN A.dateTime AND A.expires"
             " GROUP BY A.id, A.category) GROUP BY category";
    case Query::kQ5:
      // A bid at t belongs to the 5 windows starting at (floor(t / 2000) - k) * 2000, k < 5.
      return "WITH counts AS ("
             " SELECT auction, (dateTime // 2000 - k) * 2000 AS window_start, COUNT(*) AS num"
             " FROM bid CROSS JOIN range(5) AS hops(k) GROUP BY ALL),"
             " maxima AS (SELECT window_start, MAX(num) AS max_num FROM counts GROUP BY ALL)"
             " SELECT c.auction, c.num, c.window_start FROM counts c JOIN maxima m"
             " ON c.window_start = m.window_start AND c.num = m.max_num";
    case Query::kQ7:
      return "WITH windowed AS (SELECT auction, price, bidder, dateTime, extra,"
             " dateTime // 10000 * 10000 AS window_start FROM bid),"
             " maxima AS (SELECT window_start, MAX(price) AS max_price FROM windowed GROUP BY ALL)"
             " SELECT b.auction, b.price, b.bidder, b.dateTime, b.extra FROM windowed b"
             " JOIN maxima m ON b.window_start = m.window_start AND b.price = m.max_price";
    case Query::kQ8:
      return "SELECT DISTINCT P.id, P.name, P.dateTime // 10000 * 10000 AS window_start"
             " FROM person P JOIN auction A"
             " ON A.seller = P.id AND A.dateTime // 10000 = P.dateTime // 10000";
    case Query::kQ11:
      // Ties in dateTime are peers of the running sum's default RANGE frame, so they share a
      // session whatever order the two window passes put them in.
      return "WITH flagged AS ("
             " SELECT bidder, dateTime, CASE WHEN dateTime - LAG(dateTime) OVER"
             " (PARTITION BY bidder ORDER BY dateTime) <= 10000 THEN 0 ELSE 1 END AS starts"
             " FROM bid),"
             " sessions AS (SELECT bidder, dateTime, SUM(starts) OVER"
             " (PARTITION BY bidder ORDER BY dateTime) AS session FROM flagged)"
             " SELECT bidder, COUNT(*), MIN(dateTime), MAX(dateTime) + 1 FROM sessions"
             " GROUP BY bidder, session";
    case Query::kQ12:
      return "SELECT bidder, COUNT(*), dateTime // 10000 * 10000 AS window_start,"
             " dateTime // 10000 * 10000 + 10000 FROM bid GROUP BY bidder, window_start";
  }
  return "";
}

Status ReferenceRows(sql::Database& db, Query query,
                     const std::function<void(std::string_view canonical_row)>& on_row) {
  // q4's averages are compared at 4 decimals; every other double at full precision.
  const bool fixed4 = query == Query::kQ4;
  CanonicalRow canonical;
  Status s = db.Query(ReferenceSql(query), [&](const sql::Row& row) {
    canonical.Clear();
    for (size_t i = 0; i < row.size(); ++i) {
      if (row.IsNull(i)) {
        canonical.Null();
        continue;
      }
      switch (row.type(i)) {
        case sql::ColumnType::kVarchar:
          canonical.Text(row.Text(i));
          break;
        case sql::ColumnType::kDouble:
        case sql::ColumnType::kFloat:
        case sql::ColumnType::kDecimal:
          if (fixed4) {
            canonical.Fixed4(row.Double(i));
          } else {
            canonical.Double(row.Double(i));
          }
          break;
        default:
          canonical.Int(row.Int(i));
          break;
      }
    }
    on_row(canonical.str());
  });
  return s.WithContext(std::string("Nexmark reference ") + std::string(QueryName(query)));
}

}  // namespace weir::nexmark
