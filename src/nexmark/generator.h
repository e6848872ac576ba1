// NexmarkGenerator: the Nexmark benchmark's event stream (people, auctions, bids), generated
// in-process by the reference model.
//
// The model is the Java reference generator of Apache Beam
// (sdks/java/testing/nexmark/.../sources/generator/) as extended by the nexmark/nexmark project
// for Flink (nexmark-flink/.../generator/), which adds a bid's channel and url. Class names below
// (GeneratorConfig, NexmarkConfiguration, Generator/NexmarkGenerator, PersonGenerator,
// AuctionGenerator, BidGenerator, PriceGenerator, StringsGenerator, LongGenerator) are those
// sources; src/nexmark/README.md lists each parameter with its origin and the few deviations.
//
// Contract: EventAt(n) is a pure function of (config, n). As in Beam's Generator, the event of
// number n draws all its fields from one java.util.Random seeded with its event id, so disjoint
// ranges of n can be generated in parallel and any event can be regenerated alone.
// Thread safety: immutable after construction; EventAt may be called from many threads.
// Lifecycle: construct once per run (the constructor precomputes the bid channel table).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weir/status.h"
#include "weir/types.h"
#include "weir/value.h"

namespace weir::nexmark {

class JavaRandom;

// GeneratorConfig: ids start here so queries match even on small data sets.
inline constexpr int64_t kFirstPersonId = 1000;   // GeneratorConfig.FIRST_PERSON_ID
inline constexpr int64_t kFirstAuctionId = 1000;  // GeneratorConfig.FIRST_AUCTION_ID
inline constexpr int64_t kFirstCategoryId = 10;   // GeneratorConfig.FIRST_CATEGORY_ID
inline constexpr int32_t kNumCategories = 5;      // AuctionGenerator.NUM_CATEGORIES

// GeneratorConfig / NexmarkConfiguration: of every 50 consecutive event ids, 1 is a person,
// 3 are auctions and 46 are bids, in that order within the 50.
inline constexpr int64_t kPersonProportion = 1;
inline constexpr int64_t kAuctionProportion = 3;
inline constexpr int64_t kBidProportion = 46;
inline constexpr int64_t kProportionDenominator =
    kPersonProportion + kAuctionProportion + kBidProportion;

// Hot entities are the first of each batch of 100 (AuctionGenerator.HOT_SELLER_RATIO,
// BidGenerator.HOT_AUCTION_RATIO, BidGenerator.HOT_BIDDER_RATIO).
inline constexpr int64_t kHotBatch = 100;

// nexmark-flink BidGenerator: half the bids (HOT_CHANNELS_RATIO = 2) come from one of these four
// channels, the others from "channel-<k>", k uniform in [0, CHANNELS_NUMBER = 10000).
inline constexpr int32_t kHotChannelsRatio = 2;
inline constexpr int32_t kNumChannels = 10000;
inline constexpr const char* kHotChannels[] = {"Google", "Facebook", "Baidu", "Apple"};

// The nexmark project's SQL source declares `WATERMARK FOR dateTime AS dateTime - INTERVAL '4'
// SECOND` (nexmark-flink/src/main/resources/queries/ddl_gen.sql).
inline constexpr std::chrono::milliseconds kWatermarkDelay{4000};

struct NexmarkConfig {
  // Event time of event number 0 (GeneratorConfig.baseTime). The reference defaults to the wall
  // clock; a fixed default keeps runs reproducible.
  int64_t first_event_ms = 1'700'000'000'000;
  // Event-time rate (NexmarkConfiguration.firstEventRate, default 10000/s): event n has
  // timestamp first_event_ms + floor(n * (1e6 / rate) us / 1000), as GeneratorConfig
  // .timestampForEvent of nexmark-flink. It sets event time only, not how fast events are made.
  double events_per_second = 10000;
  // 0 reproduces the reference exactly (Random seeded with the event id); another value gives
  // a different stream of the same shape (Random seeded with event id ^ mix(seed)).
  int64_t seed = 0;
  // NexmarkConfiguration.outOfOrderGroupSize (default 1 = in order): events are shuffled within
  // aligned groups of this many numbers, by GeneratorConfig.nextAdjustedEventNumber.
  int64_t out_of_order_group_size = 1;
  // NexmarkConfiguration defaults. A bid is for a hot auction with probability
  // 1 - 1/hot_auction_ratio, by a hot bidder with 1 - 1/hot_bidders_ratio; an auction is by a hot
  // seller with 1 - 1/hot_sellers_ratio.
  int32_t hot_auction_ratio = 2;
  int32_t hot_sellers_ratio = 4;
  int32_t hot_bidders_ratio = 4;
  int32_t num_in_flight_auctions = 100;  // NexmarkConfiguration.numInFlightAuctions
  int32_t num_active_people = 1000;      // NexmarkConfiguration.numActivePeople
  // NexmarkConfiguration.avg{Person,Auction,Bid}ByteSize: `extra` pads the reference's idealized
  // size (8 bytes a number plus string lengths) to these averages.
  int32_t avg_person_byte_size = 200;
  int32_t avg_auction_byte_size = 500;
  int32_t avg_bid_byte_size = 100;
  // PersonGenerator.PERSON_ID_LEAD and AuctionGenerator.AUCTION_ID_LEAD: a random (non-hot)
  // person or auction id may be up to this many ids past the last one generated, which makes
  // some events look swapped in time. 0 keeps every reference to an existing id.
  int32_t person_id_lead = 10;
  int32_t auction_id_lead = 10;

  // kInvalidArgument naming the field when a value is out of range.
  [[nodiscard]] Status Validate() const;
};

struct Person {
  int64_t id = 0;
  std::string name;
  std::string email_address;
  std::string credit_card;
  std::string city;
  std::string state;
  std::string extra;
};

struct Auction {
  int64_t id = 0;
  std::string item_name;
  std::string description;
  int64_t initial_bid = 0;  // cents
  int64_t reserve = 0;      // cents
  int64_t expires_ms = 0;
  int64_t seller = 0;
  int64_t category = 0;
  std::string extra;
};

struct Bid {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;  // cents
  std::string channel;
  std::string url;
  std::string extra;
};

enum class EventKind : uint8_t { kPerson = 0, kAuction = 1, kBid = 2 };

// One event of the stream: a person, an auction or a bid.
// An Event holds a body of each kind and kind() says which one is the event, so an Event reused
// for event after event (NexmarkGenerator::EventAt(n, out)) keeps every body's string memory
// and, once they have grown to the stream's sizes, generates without heap allocation. The bodies
// of the other kinds are leftovers, never read.
class Event {
 public:
  int64_t number = 0;    // n, the position in the stream
  int64_t event_id = 0;  // the reference's event id (n adjusted for out-of-order groups)
  EventTime timestamp;   // the event's dateTime

  EventKind kind() const { return kind_; }
  // The body. REQUIRES: kind() is that kind (checked).
  const Person& person() const {
    CheckKind(EventKind::kPerson);
    return person_;
  }
  const Auction& auction() const {
    CheckKind(EventKind::kAuction);
    return auction_;
  }
  const Bid& bid() const {
    CheckKind(EventKind::kBid);
    return bid_;
  }
  // Makes this event of that kind and returns its body to be written, which still holds the
  // last values (and memory) of that kind this Event had.
  Person& MakePerson() {
    kind_ = EventKind::kPerson;
    return person_;
  }
  Auction& MakeAuction() {
    kind_ = EventKind::kAuction;
    return auction_;
  }
  Bid& MakeBid() {
    kind_ = EventKind::kBid;
    return bid_;
  }

  // The reference's idealized size: what `extra` pads towards the configured average.
  int64_t ModelBytes() const;

  // A flat JSON object with the reference's field names (Flink's model classes) plus "type":
  //   {"type":"person","id",..,"name","emailAddress","creditCard","city","state","dateTime","extra"}
  //   {"type":"auction","id","itemName","description","initialBid","reserve","dateTime",
  //    "expires","seller","category","extra"}
  //   {"type":"bid","auction","bidder","price","channel","url","dateTime","extra"}
  // Times are epoch milliseconds; prices are cents.
  Value ToValue() const;
  // The same object written into `into`, reusing the memory it holds (its members, their names
  // and strings, whatever kind of event or value it held before): a Value rewritten event after
  // event makes no heap allocation once it has grown.
  void WriteValue(Value& into) const;
  void AppendJson(std::string& out) const;
  std::string_view TypeName() const;  // "person", "auction" or "bid"

  // Each field of the event, in the order of AppendJson ("type" excluded): what a loader of
  // another format (DuckDB tables in reference.cc) writes, so the order is defined once.
  class FieldSink {
   public:
    virtual ~FieldSink() = default;
    virtual void Int(std::string_view name, int64_t value) = 0;
    virtual void Text(std::string_view name, std::string_view value) = 0;
  };
  void ForEachField(FieldSink& sink) const;

 private:
  void CheckKind(EventKind kind) const { WEIR_CHECK(kind_ == kind, "wrong Nexmark event kind"); }
  // Calls sink(name, int64_t) or sink(name, const std::string&) for each field, in order: the
  // one list of the fields, which every form of the event follows.
  template <typename Sink>
  void VisitFields(const Sink& sink) const;

  EventKind kind_ = EventKind::kPerson;
  Person person_;
  Auction auction_;
  Bid bid_;
};

class NexmarkGenerator {
 public:
  // REQUIRES: config.Validate().ok() (checked).
  explicit NexmarkGenerator(NexmarkConfig config);

  const NexmarkConfig& config() const { return config_; }

  // The event at position n >= 0 of the stream.
  Event EventAt(int64_t n) const;
  // The same, written into `out`, whose strings keep their memory: generating into one Event
  // again and again makes no heap allocation once its strings have grown.
  void EventAt(int64_t n, Event& out) const;

  // Event time of the event with (adjusted) event number n (GeneratorConfig.timestampForEvent).
  EventTime TimestampForNumber(int64_t n) const;
  // The reference generator's own bound after emitting n events: no later event is earlier
  // (Generator.nextEvent's watermark, from nextEventNumberForWatermark).
  Watermark GeneratorWatermark(int64_t n) const;
  // The benchmark's watermark for an event seen at `t`: t - 4 s (kWatermarkDelay).
  static Watermark WatermarkFor(EventTime t) { return Watermark((t - kWatermarkDelay).value()); }

  // The reference's event id for position n (GeneratorConfig.nextAdjustedEventNumber).
  int64_t EventIdAt(int64_t n) const;
  static EventKind KindOfEventId(int64_t event_id);
  // The last person / auction id (base 0) generated at or before `event_id`
  // (PersonGenerator.lastBase0PersonId, AuctionGenerator.lastBase0AuctionId).
  static int64_t LastBase0PersonId(int64_t event_id);
  static int64_t LastBase0AuctionId(int64_t event_id);

 private:
  void NextPerson(int64_t event_id, JavaRandom& random, Person& p) const;
  void NextAuction(int64_t event_id, JavaRandom& random, int64_t timestamp, Auction& a) const;
  void NextBid(int64_t event_id, JavaRandom& random, Bid& b) const;
  int64_t NextBase0PersonId(int64_t event_id, JavaRandom& random) const;
  int64_t NextBase0AuctionId(int64_t event_id, JavaRandom& random) const;

  NexmarkConfig config_;
  double inter_event_delay_us_;
  int64_t seed_mix_;
  bool simd_letters_;  // internal::CpuHasSimdLetters()
  // A bid channel's url and name without their constant parts, in 32 bytes, so that the table
  // of all channels (320 KB) stays in a core's L2 cache:
  //   url = "https://www.nexmark.com/" + path + "item.htm?query=1" [+ "&channel_id=" + id]
  //   name = "channel-" + number (a hot channel's is in kHotChannels)
  // 16 bytes can be copied from path and from id (what follows them is overwritten).
  struct alignas(32) ChannelParts {
    char path[15];    // three segments of 3 or 4 characters, each followed by '/'
    uint8_t sizes;    // path's size | number's size << 4
    char id[11];      // Math.abs(Integer.reverse(number)): "-2147483648" for channel 1
    uint8_t id_size;  // 0: no channel_id
    char number[4];

    size_t path_size() const { return sizes & 15; }
    size_t number_size() const { return sizes >> 4; }
  };
  static void AssignUrl(const ChannelParts& parts, std::string& url);
  // The kHotChannels entries, then one per channel number.
  std::vector<ChannelParts> channels_;
};

namespace internal {
// How `extra` is made from the generator's draws, exposed so that a test holds both ways to
// Java's arithmetic. LettersOfDraws: the letters StringsGenerator.nextExactString makes of
// kLetterBlockDraws nextInt() values, six a draw, into out[0, 6 * kLetterBlockDraws).
// LettersOfState: the same for the kLetterBlockDraws * blocks draws that follow a JavaRandom
// state. With AVX2 when `simd` (REQUIRES: CpuHasSimdLetters()), else portably; the two write
// the same bytes.
inline constexpr int kLetterBlockDraws = 8;
bool CpuHasSimdLetters();
void LettersOfDraws(const int32_t* draws, char* out, bool simd);
void LettersOfState(uint64_t state, int blocks, char* out, bool simd);
}  // namespace internal

}  // namespace weir::nexmark
