#include "nexmark/generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "nexmark/java_random.h"

namespace weir::nexmark {
namespace {

// PersonGenerator: few states and cities so that queries joining on them find results.
constexpr std::array<std::string_view, 6> kUsStates = {"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::array<std::string_view, 10> kUsCities = {
    "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
    "Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
constexpr std::array<std::string_view, 11> kFirstNames = {
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::array<std::string_view, 9> kLastNames = {
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"};

constexpr int kMinStringLength = 3;  // StringsGenerator.MIN_STRING_LENGTH

template <size_t N>
std::string_view Pick(const std::array<std::string_view, N>& choices, JavaRandom& random) {
  return choices[static_cast<size_t>(random.NextInt(static_cast<int32_t>(N)))];
}

// LongGenerator.nextLong: uniform in [0, n), with the reference's skewed fallback for huge n.
int64_t NextLong(JavaRandom& random, int64_t n) {
  if (n < INT32_MAX) return random.NextInt(static_cast<int32_t>(n));
  return std::llabs(random.NextLong() % n);
}

// StringsGenerator.nextString: 3..max_length-1 letters, each a `space` with probability 1/13.
// Only spaces are trimmed, as String.trim() does for this alphabet.
std::string NextString(JavaRandom& random, int max_length, char space = ' ') {
  int len = kMinStringLength + random.NextInt(max_length - kMinStringLength);
  std::string s;
  s.reserve(static_cast<size_t>(len));
  while (len-- > 0) {
    if (random.NextInt(13) == 0) {
      s.push_back(space);
    } else {
      s.push_back(static_cast<char>('a' + random.NextInt(26)));
    }
  }
  if (space == ' ') {
    const size_t begin = s.find_first_not_of(' ');
    if (begin == std::string::npos) return {};
    s = s.substr(begin, s.find_last_not_of(' ') - begin + 1);
  }
  return s;
}

// StringsGenerator.nextExactString. A negative nextInt() gives characters below 'a' ('<'..'`'),
// as Java's signed remainder does in the reference.
std::string NextExactString(JavaRandom& random, int length) {
  std::string s(static_cast<size_t>(std::max(length, 0)), '\0');
  char* out = s.data();
  for (int i = 0; i < length;) {
    int32_t rnd = random.NextInt();
    for (int k = std::min(6, length - i); k > 0; --k) {  // 6 = log_26(2^31) characters per draw
      out[i++] = static_cast<char>('a' + rnd % 26);
      rnd /= 26;
    }
  }
  return s;
}

// Java's Math.round for the values used here.
int64_t JavaRound(double x) { return static_cast<int64_t>(std::floor(x + 0.5)); }

// StringsGenerator.nextExtra: a string making current_size + length average `average`,
// uniform within +-20% of the remainder.
std::string NextExtra(JavaRandom& random, int64_t current_size, int32_t average) {
  if (current_size > average) return {};
  const int64_t remaining = average - current_size;
  const int32_t delta = static_cast<int32_t>(JavaRound(static_cast<double>(remaining) * 0.2));
  const int64_t min_size = remaining - delta;
  const int64_t size = min_size + (delta == 0 ? 0 : random.NextInt(2 * delta));
  return NextExactString(random, static_cast<int>(size));
}

// PriceGenerator.nextPrice: cents, log-uniform between $1 and $1,000,000.
int64_t NextPrice(JavaRandom& random) {
  return JavaRound(std::pow(10.0, random.NextDouble() * 6.0) * 100.0);
}

// nexmark-flink BidGenerator.getBaseUrl. The reference draws it from an unseeded Random; here
// it is drawn from `random` so the stream stays a function of the config.
std::string BaseUrl(JavaRandom& random) {
  std::string url = "https://www.nexmark.com/";
  for (int i = 0; i < 3; ++i) {
    url += NextString(random, 5, '_');
    url += '/';
  }
  url += "item.htm?query=1";
  return url;
}

// Integer.reverse: the bits of a 32-bit int in reverse order.
int32_t ReverseBits(int32_t v) {
  uint32_t x = static_cast<uint32_t>(v);
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return static_cast<int32_t>(r);
}

// SplitMix64 finalizer: spreads a user seed over all bits before it is XORed with event ids.
int64_t MixSeed(int64_t seed) {
  if (seed == 0) return 0;
  uint64_t z = static_cast<uint64_t>(seed) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<int64_t>(z ^ (z >> 31));
}

// Writes members as compact JSON text after an opening "{\"type\":...".
struct JsonSink {
  std::string& out;
  void operator()(std::string_view name, int64_t v) const {
    Key(name);
    out += std::to_string(v);
  }
  void operator()(std::string_view name, std::string_view v) const {
    Key(name);
    AppendJsonString(out, v);
  }
  void Key(std::string_view name) const {
    out += ",\"";
    out += name;
    out += "\":";
  }
};

// Collects members into a Value object.
// Copies the fields of a const Event, moves those of one that is going away.
struct ObjectSink {
  Value::Object& members;
  void operator()(std::string_view name, int64_t v) const { members.emplace_back(name, v); }
  void operator()(std::string_view name, const std::string& v) const {
    members.emplace_back(name, v);
  }
  void operator()(std::string_view name, std::string& v) const {
    members.emplace_back(name, std::move(v));
  }
};

}  // namespace

Status NexmarkConfig::Validate() const {
  auto positive = [](int64_t v, const char* name) {
    return v > 0 ? Status::OK() : Status::InvalidArgument(std::string(name) + " must be > 0");
  };
  if (!(events_per_second > 0) || !std::isfinite(events_per_second)) {
    return Status::InvalidArgument("events_per_second must be a positive number");
  }
  WEIR_RETURN_IF_ERROR(positive(out_of_order_group_size, "out_of_order_group_size"));
  WEIR_RETURN_IF_ERROR(positive(hot_auction_ratio, "hot_auction_ratio"));
  WEIR_RETURN_IF_ERROR(positive(hot_sellers_ratio, "hot_sellers_ratio"));
  WEIR_RETURN_IF_ERROR(positive(hot_bidders_ratio, "hot_bidders_ratio"));
  WEIR_RETURN_IF_ERROR(positive(num_in_flight_auctions, "num_in_flight_auctions"));
  WEIR_RETURN_IF_ERROR(positive(num_active_people, "num_active_people"));
  WEIR_RETURN_IF_ERROR(positive(avg_person_byte_size, "avg_person_byte_size"));
  WEIR_RETURN_IF_ERROR(positive(avg_auction_byte_size, "avg_auction_byte_size"));
  WEIR_RETURN_IF_ERROR(positive(avg_bid_byte_size, "avg_bid_byte_size"));
  if (person_id_lead < 0 || auction_id_lead < 0) {
    return Status::InvalidArgument("person_id_lead and auction_id_lead must be >= 0");
  }
  return Status::OK();
}

NexmarkGenerator::NexmarkGenerator(NexmarkConfig config)
    : config_(config),
      inter_event_delay_us_(1'000'000.0 / config.events_per_second),
      seed_mix_(MixSeed(config.seed)) {
  const Status valid = config_.Validate();
  WEIR_CHECK(valid.ok(), valid.ToString());
  // The reference fills a cache of channel urls lazily from unseeded randoms; precomputing them
  // from seeded ones gives the same distribution and keeps EventAt pure and lock-free.
  for (int32_t i = 0; i < static_cast<int32_t>(std::size(kHotChannels)); ++i) {
    JavaRandom random(seed_mix_ ^ (-1 - i));
    hot_urls_.push_back(BaseUrl(random));
  }
  channel_urls_.reserve(kNumChannels);
  for (int32_t channel = 0; channel < kNumChannels; ++channel) {
    JavaRandom random(seed_mix_ ^ channel);
    std::string url = BaseUrl(random);
    if (random.NextInt(10) > 0) {
      // Java's Math.abs(Integer.reverse(c)): INT_MIN stays INT_MIN (std::abs would overflow).
      const int32_t reversed = ReverseBits(channel);
      url += "&channel_id=" +
             std::to_string(reversed == INT32_MIN ? int64_t{reversed} : std::abs(reversed));
    }
    channel_urls_.push_back(std::move(url));
  }
}

int64_t NexmarkGenerator::EventIdAt(int64_t n) const {
  const int64_t g = config_.out_of_order_group_size;
  return (n / g) * g + (n * 953) % g;
}

EventTime NexmarkGenerator::TimestampForNumber(int64_t n) const {
  return EventTime(config_.first_event_ms +
                   static_cast<int64_t>(static_cast<double>(n) * inter_event_delay_us_) / 1000);
}

Watermark NexmarkGenerator::GeneratorWatermark(int64_t n) const {
  const int64_t g = config_.out_of_order_group_size;
  return Watermark(TimestampForNumber((n / g) * g).value());
}

EventKind NexmarkGenerator::KindOfEventId(int64_t event_id) {
  const int64_t rem = event_id % kProportionDenominator;
  if (rem < kPersonProportion) return EventKind::kPerson;
  if (rem < kPersonProportion + kAuctionProportion) return EventKind::kAuction;
  return EventKind::kBid;
}

int64_t NexmarkGenerator::LastBase0PersonId(int64_t event_id) {
  const int64_t epoch = event_id / kProportionDenominator;
  int64_t offset = event_id % kProportionDenominator;
  if (offset >= kPersonProportion) offset = kPersonProportion - 1;
  return epoch * kPersonProportion + offset;
}

int64_t NexmarkGenerator::LastBase0AuctionId(int64_t event_id) {
  int64_t epoch = event_id / kProportionDenominator;
  int64_t offset = event_id % kProportionDenominator;
  if (offset < kPersonProportion) {
    // A person: the last auction is the last of the previous epoch.
    epoch--;
    offset = kAuctionProportion - 1;
  } else if (offset >= kPersonProportion + kAuctionProportion) {
    offset = kAuctionProportion - 1;
  } else {
    offset -= kPersonProportion;
  }
  return epoch * kAuctionProportion + offset;
}

int64_t NexmarkGenerator::NextBase0PersonId(int64_t event_id, JavaRandom& random) const {
  // One of the most recent num_active_people, or up to person_id_lead ids not yet generated.
  const int64_t num_people = LastBase0PersonId(event_id) + 1;
  const int64_t active = std::min<int64_t>(num_people, config_.num_active_people);
  const int64_t n = NextLong(random, active + config_.person_id_lead);
  return num_people - active + n;
}

int64_t NexmarkGenerator::NextBase0AuctionId(int64_t event_id, JavaRandom& random) const {
  // One of the auctions likely still in flight, or up to auction_id_lead ids ahead.
  const int64_t max_auction = LastBase0AuctionId(event_id);
  const int64_t min_auction = std::max<int64_t>(max_auction - config_.num_in_flight_auctions, 0);
  return min_auction + NextLong(random, max_auction - min_auction + 1 + config_.auction_id_lead);
}

Person NexmarkGenerator::NextPerson(int64_t event_id, JavaRandom& random) const {
  Person p;
  p.id = LastBase0PersonId(event_id) + kFirstPersonId;
  p.name = std::string(Pick(kFirstNames, random));
  p.name += ' ';
  p.name += Pick(kLastNames, random);
  p.email_address = NextString(random, 7) + "@" + NextString(random, 5) + ".com";
  for (int i = 0; i < 4; ++i) {
    char digits[8];
    std::snprintf(digits, sizeof(digits), "%04d", random.NextInt(10000));
    if (i > 0) p.credit_card += ' ';
    p.credit_card += digits;
  }
  p.city = std::string(Pick(kUsCities, random));
  p.state = std::string(Pick(kUsStates, random));
  const int64_t current_size =
      8 + static_cast<int64_t>(p.name.size() + p.email_address.size() + p.credit_card.size() +
                               p.city.size() + p.state.size());
  p.extra = NextExtra(random, current_size, config_.avg_person_byte_size);
  return p;
}

Auction NexmarkGenerator::NextAuction(int64_t n, int64_t event_id, JavaRandom& random,
                                      int64_t timestamp) const {
  Auction a;
  a.id = LastBase0AuctionId(event_id) + kFirstAuctionId;
  if (random.NextInt(config_.hot_sellers_ratio) > 0) {
    a.seller = (LastBase0PersonId(event_id) / kHotBatch) * kHotBatch;
  } else {
    a.seller = NextBase0PersonId(event_id, random);
  }
  a.seller += kFirstPersonId;
  a.category = kFirstCategoryId + random.NextInt(kNumCategories);
  a.initial_bid = NextPrice(random);
  // AuctionGenerator.nextAuctionLengthMs: uniform up to twice the time until
  // num_in_flight_auctions more auctions exist, so that many are open on average.
  const int64_t events_for_auctions =
      (static_cast<int64_t>(config_.num_in_flight_auctions) * kProportionDenominator) /
      kAuctionProportion;
  const int64_t future_auction = TimestampForNumber(EventIdAt(n) + events_for_auctions).value();
  const int64_t horizon_ms = future_auction - timestamp;
  a.expires_ms = timestamp + 1 + NextLong(random, std::max<int64_t>(horizon_ms * 2, 1));
  a.item_name = NextString(random, 20);
  a.description = NextString(random, 100);
  a.reserve = a.initial_bid + NextPrice(random);
  const int64_t current_size =
      8 + static_cast<int64_t>(a.item_name.size() + a.description.size()) + 8 * 5;
  a.extra = NextExtra(random, current_size, config_.avg_auction_byte_size);
  return a;
}

Bid NexmarkGenerator::NextBid(int64_t event_id, JavaRandom& random) const {
  Bid b;
  if (random.NextInt(config_.hot_auction_ratio) > 0) {
    b.auction = (LastBase0AuctionId(event_id) / kHotBatch) * kHotBatch;
  } else {
    b.auction = NextBase0AuctionId(event_id, random);
  }
  b.auction += kFirstAuctionId;
  if (random.NextInt(config_.hot_bidders_ratio) > 0) {
    // The second person of the batch, so hot bidders and hot sellers differ.
    b.bidder = (LastBase0PersonId(event_id) / kHotBatch) * kHotBatch + 1;
  } else {
    b.bidder = NextBase0PersonId(event_id, random);
  }
  b.bidder += kFirstPersonId;
  b.price = NextPrice(random);
  if (random.NextInt(kHotChannelsRatio) > 0) {
    const auto i = static_cast<size_t>(random.NextInt(std::size(kHotChannels)));
    b.channel = kHotChannels[i];
    b.url = hot_urls_[i];
  } else {
    const int32_t channel = random.NextInt(kNumChannels);
    b.channel = "channel-" + std::to_string(channel);
    b.url = channel_urls_[static_cast<size_t>(channel)];
  }
  b.extra = NextExtra(random, 8 * 4, config_.avg_bid_byte_size);
  return b;
}

Event NexmarkGenerator::EventAt(int64_t n) const {
  WEIR_CHECK(n >= 0, "event number must be >= 0");
  Event e;
  e.number = n;
  e.event_id = EventIdAt(n);
  e.timestamp = TimestampForNumber(e.event_id);
  JavaRandom random(e.event_id ^ seed_mix_);
  switch (KindOfEventId(e.event_id)) {
    case EventKind::kPerson:
      e.body = NextPerson(e.event_id, random);
      break;
    case EventKind::kAuction:
      e.body = NextAuction(n, e.event_id, random, e.timestamp.value());
      break;
    case EventKind::kBid:
      e.body = NextBid(e.event_id, random);
      break;
  }
  return e;
}

int64_t Event::ModelBytes() const {
  switch (kind()) {
    case EventKind::kPerson: {
      const Person& p = person();
      return 8 +
             static_cast<int64_t>(p.name.size() + p.email_address.size() + p.credit_card.size() +
                                  p.city.size() + p.state.size() + p.extra.size());
    }
    case EventKind::kAuction: {
      const Auction& a = auction();
      return 8 + 8 * 5 +
             static_cast<int64_t>(a.item_name.size() + a.description.size() + a.extra.size());
    }
    case EventKind::kBid:
      return 8 * 4 + static_cast<int64_t>(bid().extra.size());
  }
  return 0;
}

std::string_view Event::TypeName() const {
  switch (kind()) {
    case EventKind::kPerson:
      return "person";
    case EventKind::kAuction:
      return "auction";
    case EventKind::kBid:
      return "bid";
  }
  return {};
}

template <typename Self, typename Sink>
void Event::VisitFields(Self& self, const Sink& sink) {
  const int64_t t = self.timestamp.value();
  switch (self.kind()) {
    case EventKind::kPerson: {
      auto& p = std::get<Person>(self.body);
      sink("id", p.id);
      sink("name", p.name);
      sink("emailAddress", p.email_address);
      sink("creditCard", p.credit_card);
      sink("city", p.city);
      sink("state", p.state);
      sink("dateTime", t);
      sink("extra", p.extra);
      break;
    }
    case EventKind::kAuction: {
      auto& a = std::get<Auction>(self.body);
      sink("id", a.id);
      sink("itemName", a.item_name);
      sink("description", a.description);
      sink("initialBid", a.initial_bid);
      sink("reserve", a.reserve);
      sink("dateTime", t);
      sink("expires", a.expires_ms);
      sink("seller", a.seller);
      sink("category", a.category);
      sink("extra", a.extra);
      break;
    }
    case EventKind::kBid: {
      auto& b = std::get<Bid>(self.body);
      sink("auction", b.auction);
      sink("bidder", b.bidder);
      sink("price", b.price);
      sink("channel", b.channel);
      sink("url", b.url);
      sink("dateTime", t);
      sink("extra", b.extra);
      break;
    }
  }
}

void Event::AppendJson(std::string& out) const {
  out += "{\"type\":\"";
  out += TypeName();
  out += '"';
  VisitFields(*this, JsonSink{out});
  out += '}';
}

void Event::ForEachField(FieldSink& sink) const {
  struct Adapter {
    FieldSink& sink;
    void operator()(std::string_view name, int64_t v) const { sink.Int(name, v); }
    void operator()(std::string_view name, std::string_view v) const { sink.Text(name, v); }
  };
  VisitFields(*this, Adapter{sink});
}

template <typename Self>
Value Event::MakeValue(Self& self) {
  Value::Object members;
  members.reserve(11);  // the most fields of a type (auction), "type" included
  members.emplace_back("type", self.TypeName());
  VisitFields(self, ObjectSink{members});
  return Value(std::move(members));
}

Value Event::ToValue() const& { return MakeValue(*this); }

Value Event::ToValue() && { return MakeValue(*this); }

}  // namespace weir::nexmark
