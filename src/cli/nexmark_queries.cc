#include "cli/nexmark_queries.h"

#include <cmath>

#include "weir/window.h"

namespace weir::nexmark {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Generated events always carry every field of their type.
int64_t Int(const Value& v, std::string_view field) { return v.Find(field)->as_int(); }
const Value& Field(const Value& v, std::string_view field) { return *v.Find(field); }
bool IsType(const Value& v, std::string_view type) { return v.Find("type")->as_string() == type; }

Stream Bids(Stream source) {
  return source.Filter([](const Value& v) { return IsType(v, "bid"); }, "bids");
}

// The bid columns q0 and q1 emit. The other queries, too, Select only the fields they read
// before a repartition, as a SQL planner pushes projections down: a bid's JSON is about 250
// bytes, its bidder alone about 20.
std::vector<std::string> BidColumns() { return {"auction", "bidder", "price", "dateTime", "extra"}; }

// The query's results: to the output topic, or dropped (QueryOptions::discard_output).
void Emit(Stream results, const QueryOptions& options) {
  if (options.discard_output) {
    results.ToDiscard();
  } else {
    results.ToTopic(options.output_topic);
  }
}

constexpr int64_t kWindowMs = 10'000;

// Every window of this size that contains t starts at (t / size) * size (t >= 0).
int64_t TumbleStart(int64_t t) { return t - t % kWindowMs; }

// An interval join wide enough to match every pair of a key, whenever its members come.
constexpr milliseconds kUnbounded = std::chrono::hours(24 * 365 * 50);

// The rows of a window whose aggregation "top" is a MaxRows.
std::vector<Value> TopRowsOf(const Value& window) {
  const Value::Array& rows = Field(window, "top").as_array();
  return std::vector<Value>(rows.begin(), rows.end());
}

// Passthrough of the bids.
void AddQ0(Stream source, const QueryOptions& options) {
  Stream results = Bids(source).Select(BidColumns(), "q0-project");
  Emit(results, options);
}

// Currency conversion: the price in euros.
void AddQ1(Stream source, const QueryOptions& options) {
  Stream results = Bids(source)
                       .Select(BidColumns(), "q1-project")
                       .Update(
                           [](Value& row) {
                             Value& price = *row.Find("price");
                             price = static_cast<double>(price.as_int()) * 0.908;
                           },
                           "q1-euros");
  Emit(results, options);
}

// Selection: the bids of some auctions.
void AddQ2(Stream source, const QueryOptions& options) {
  Stream results =
      source
          .Filter([](const Value& v) { return IsType(v, "bid") && Int(v, "auction") % 123 == 0; },
                  "q2-select")
          .Select({"auction", "price"}, "q2-project");
  Emit(results, options);
}

// Local item suggestion: sellers in some states of category-10 items.
void AddQ3(Stream source, const QueryOptions& options) {
  const milliseconds grace = options.grace;
  Stream auctions =
      source.Filter([](const Value& v) { return IsType(v, "auction") && Int(v, "category") == 10; },
                    "q3-auctions");
  auctions =
      auctions.Select({"id", "seller"}, "q3-auction-fields").GroupBy("seller", KeySerde::kInt);
  Stream people = source.Filter(
      [](const Value& v) {
        if (!IsType(v, "person")) return false;
        const std::string_view s = v.Find("state")->as_string();
        return s == "OR" || s == "ID" || s == "CA";
      },
      "q3-people");
  people = people.Select({"id", "name", "city", "state"}, "q3-person-fields")
               .GroupBy("id", KeySerde::kInt);
  Stream results = auctions
                       .IntervalJoin(people, {.name = "q3-join",
                                              .lower = kUnbounded,
                                              .upper = kUnbounded,
                                              .grace = grace,
                                              .late_topic = options.late_topic})
                       .Map(
                           [](const Value& pair) {
                             const Value& person = Field(pair, "right");
                             return Value::MakeObject({{"name", Field(person, "name")},
                                                       {"city", Field(person, "city")},
                                                       {"state", Field(person, "state")},
                                                       {"id", Field(Field(pair, "left"), "id")}});
                           },
                           "q3-project");
  Emit(results, options);
}

// Average winning price per category.
void AddQ4(Stream source, const QueryOptions& options) {
  const milliseconds grace = options.grace;
  const int64_t longest = MaxAuctionLengthMs(options.model);
  Stream auctions =
      source.Filter([](const Value& v) { return IsType(v, "auction"); }, "q4-auctions")
          .Select({"id", "category", "dateTime", "expires"}, "q4-auction-fields")
          .GroupBy("id", KeySerde::kInt);
  Stream bids = Bids(source)
                    .Select({"auction", "price", "dateTime"}, "q4-bid-fields")
                    .GroupBy("auction", KeySerde::kInt);
  Stream results =
      auctions
          .IntervalJoin(bids, {.name = "q4-join",
                               .lower = milliseconds(0),
                               .upper = milliseconds(longest),
                               .grace = grace,
                               .late_topic = options.late_topic})
          .Filter(
              [](const Value& pair) {
                return Int(Field(pair, "right"), "dateTime") <= Int(Field(pair, "left"), "expires");
              },
              "q4-open-auction")
          .Map(
              [](const Value& pair) {
                return Value::MakeObject({{"price", Field(Field(pair, "right"), "price")},
                                          {"category", Field(Field(pair, "left"), "category")}});
              },
              "q4-price")
          // An auction's bids all lie within `longest` of each other: one session per auction.
          .Window(WindowDefinition::Session(milliseconds(longest)).Grace(grace))
          .Agg({{"final", agg::Max("price")}, {"category", agg::First("category")}})
          .Closing(Closing::kPartition)
          .LateTopic(options.late_topic)
          .Final()
          .GroupBy("category", KeySerde::kInt)
          .Aggregate({{"category", agg::First("category")}, {"avg", agg::Mean("final")}});
  Emit(results, options);
}

// Hot items: the auctions with the most bids per hopping window.
void AddQ5(Stream source, const QueryOptions& options) {
  const milliseconds grace = options.grace;
  Stream results =
      Bids(source)
          .Select({"auction"}, "q5-bid-fields")
          .GroupBy("auction", KeySerde::kInt)
          .Window(WindowDefinition::Hopping(seconds(10), seconds(2)).Grace(grace))
          // The window's key, carried into its result (every event of the window has it): Min of
          // an integer is the cheapest aggregation that keeps it.
          .Agg({{"num", agg::Count()}, {"auction", agg::Min("auction")}})
          .Closing(Closing::kPartition)
          .LateTopic(options.late_topic)
          .Final()
          .Select({"auction", "num", "start"}, "q5-counts")
          .GroupBy("start", KeySerde::kInt)
          // Every count of one hopping window has the timestamp end - 1, in one 2 s slot.
          .Window(WindowDefinition::Tumbling(seconds(2)).Grace(grace))
          .Agg({{"top", agg::MaxRows("num")}})
          .Closing(Closing::kPartition)
          .LateTopic(options.late_topic)
          .Final()
          .FlatMap(TopRowsOf, "q5-rows");
  Emit(results, options);
}

// Highest bid per tumbling window.
void AddQ7(Stream source, const QueryOptions& options) {
  const milliseconds grace = options.grace;
  Stream results =
      Bids(source)
          .Select({"auction", "price", "bidder", "dateTime", "extra"}, "q7-project")
          // First each task's highest bids per window, then one task combines them.
          .Window(WindowDefinition::Tumbling(seconds(10)).Grace(grace))
          .Agg({{"top", agg::MaxRows("price")}})
          .Closing(Closing::kPartition)
          .LateTopic(options.late_topic)
          .Final()
          .GroupBy("start", KeySerde::kInt, 1)
          // A task's highest bids, each with its window result's timestamp (end - 1).
          .FlatMap(TopRowsOf, "q7-task-rows")
          .Window(WindowDefinition::Tumbling(seconds(10)).Grace(grace))
          .Agg({{"top", agg::MaxRows("price")}})
          .Closing(Closing::kPartition)
          .LateTopic(options.late_topic)
          .Final()
          .FlatMap(TopRowsOf, "q7-rows");
  Emit(results, options);
}

// New users: people who opened an auction in the window they joined.
void AddQ8(Stream source, const QueryOptions& options) {
  const milliseconds grace = options.grace;
  Stream people =
      source.Filter([](const Value& v) { return IsType(v, "person"); }, "q8-people")
          .Select({"id", "name", "dateTime"}, "q8-person-fields")
          .GroupBy("id", KeySerde::kInt);
  Stream auctions =
      source.Filter([](const Value& v) { return IsType(v, "auction"); }, "q8-auctions")
          .Select({"seller", "dateTime"}, "q8-auction-fields")
          .GroupBy("seller", KeySerde::kInt);
  Stream results = people
                       .IntervalJoin(auctions, {.name = "q8-join",
                                                .lower = milliseconds(kWindowMs),
                                                .upper = milliseconds(kWindowMs),
                                                .grace = grace,
                                                .late_topic = options.late_topic})
                       .Filter(
                           [](const Value& pair) {
                             return TumbleStart(Int(Field(pair, "left"), "dateTime")) ==
                                    TumbleStart(Int(Field(pair, "right"), "dateTime"));
                           },
                           "q8-same-window")
                       .Map([](const Value& pair) { return Field(pair, "left"); }, "q8-person")
                       // One row per person and window, however many auctions they opened in it.
                       .Window(WindowDefinition::Tumbling(milliseconds(kWindowMs)).Grace(grace))
                       .Agg({{"id", agg::Min("id")}, {"name", agg::First("name")}})
                       .Closing(Closing::kPartition)
                       .LateTopic(options.late_topic)
                       .Final()
                       .Select({"id", "name", "start"}, "q8-project");
  Emit(results, options);
}

// Bids per bidder per window: q11 (sessions of activity) and q12 (tumbling windows); `name`
// prefixes the steps' names.
void AddBidsPerBidder(Stream source, const QueryOptions& options, WindowDefinition window,
                      std::string_view name) {
  const milliseconds grace = options.grace;
  Stream results = Bids(source)
                       .Select({"bidder"}, std::string(name) + "-bid-fields")
                       .GroupBy("bidder", KeySerde::kInt)
                       .Window(window.Grace(grace))
                       .Agg({{"count", agg::Count()}, {"bidder", agg::Min("bidder")}})
                       .Closing(Closing::kPartition)
                       .LateTopic(options.late_topic)
                       .Final()
                       .Select({"bidder", "count", "start", "end"}, std::string(name) + "-project");
  Emit(results, options);
}

// User sessions: bids per bidder per session of activity.
void AddQ11(Stream source, const QueryOptions& options) {
  AddBidsPerBidder(source, options, WindowDefinition::Session(seconds(10)), "q11");
}

// Bids per bidder per tumbling window.
void AddQ12(Stream source, const QueryOptions& options) {
  AddBidsPerBidder(source, options, WindowDefinition::Tumbling(seconds(10)), "q12");
}

}  // namespace

int64_t MaxAuctionLengthMs(const NexmarkConfig& model) {
  // AuctionGenerator.nextAuctionLengthMs: 1 + uniform [0, 2h) where h is the time until
  // num_in_flight_auctions more auctions; h is at most this (rounding of event times included).
  const double events = static_cast<double>(model.num_in_flight_auctions) *
                        static_cast<double>(kProportionDenominator) /
                        static_cast<double>(kAuctionProportion);
  const int64_t horizon =
      static_cast<int64_t>(std::ceil(events * 1e3 / model.events_per_second)) + 1;
  return 2 * horizon + 1;
}

int64_t CompletionDelayMs(Query query, const QueryOptions& options) {
  const int64_t grace = options.grace.count();
  switch (query) {
    case Query::kQ0:
    case Query::kQ1:
    case Query::kQ2:
    case Query::kQ3:
      return 0;
    case Query::kQ4:  // the session of an auction's bids (timestamp: its last bid)
      return MaxAuctionLengthMs(options.model) + 1 + grace;
    case Query::kQ11:
      return 10'000 + 1 + grace;
    case Query::kQ5:  // window results, timestamp end - 1
    case Query::kQ7:
    case Query::kQ8:
    case Query::kQ12:
      return 1 + grace;
  }
  return 0;
}

void AddQuery(Query query, Stream source, const QueryOptions& options) {
  switch (query) {
    case Query::kQ0:
      return AddQ0(source, options);
    case Query::kQ1:
      return AddQ1(source, options);
    case Query::kQ2:
      return AddQ2(source, options);
    case Query::kQ3:
      return AddQ3(source, options);
    case Query::kQ4:
      return AddQ4(source, options);
    case Query::kQ5:
      return AddQ5(source, options);
    case Query::kQ7:
      return AddQ7(source, options);
    case Query::kQ8:
      return AddQ8(source, options);
    case Query::kQ11:
      return AddQ11(source, options);
    case Query::kQ12:
      return AddQ12(source, options);
  }
}

}  // namespace weir::nexmark
