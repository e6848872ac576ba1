#include "stream_protocol/stream_protocol.h"

#include <charconv>

#include "core/parse.h"

namespace weir::stream_protocol {

namespace {

constexpr std::string_view kGreetingType = "greeting";
constexpr size_t kMaxOffsetDigits = 19;  // int64

// The member `name` if it is an int >= 0.
std::optional<int64_t> NonNegativeInt(const Value& object, std::string_view name) {
  const Value* v = object.Find(name);
  if (v == nullptr || !v->is_int() || v->as_int() < 0) return std::nullopt;
  return v->as_int();
}

// The decimal digits of `offset` in `digits`; returns how many.
size_t OffsetDigits(int64_t offset, char (&digits)[24]) {
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), offset);
  (void)ec;  // 24 bytes hold any int64
  return static_cast<size_t>(end - digits);
}

}  // namespace

std::string CloseReason(std::string_view reason, std::initializer_list<Value::Member> members) {
  Value json = Value::MakeObject({{"reason", reason}});
  for (const Value::Member& member : members) json.as_object().push_back(member);
  return json.ToJson();
}

std::string GreetingJson(const Greeting& greeting) {
  Value json = Value::MakeObject({{"type", kGreetingType},
                                  {"topic", greeting.topic},
                                  {"partition", greeting.partition},
                                  {"first", greeting.first},
                                  {"next", greeting.next},
                                  {"start", greeting.start},
                                  {"max_replay", greeting.max_replay},
                                  {"max_backlog", greeting.max_backlog}});
  if (greeting.archive_first) json.Set("archive_first", *greeting.archive_first);
  return json.ToJson();
}

Result<Greeting> ParseGreeting(std::string_view text) {
  auto json = Value::Parse(text);
  if (!json.ok()) return Status::Corruption("is not JSON: " + json.status().message());
  const Value* type = json->Find("type");
  if (type == nullptr || !type->is_string() || type->as_string() != kGreetingType) {
    return Status::Corruption("is not {\"type\":\"greeting\",...}");
  }
  const Value* topic = json->Find("topic");
  const std::optional<int64_t> partition = NonNegativeInt(*json, "partition");
  const std::optional<int64_t> first = NonNegativeInt(*json, "first");
  const std::optional<int64_t> next = NonNegativeInt(*json, "next");
  const std::optional<int64_t> start = NonNegativeInt(*json, "start");
  if (topic == nullptr || !topic->is_string() || !partition || !first || !next || !start) {
    return Status::Corruption("lacks topic, partition, first, next or start");
  }
  const std::optional<int64_t> archive_first = NonNegativeInt(*json, "archive_first");
  if (json->Find("archive_first") != nullptr && !archive_first) {
    return Status::Corruption("has an archive_first that is not a number >= 0");
  }
  const int64_t lowest = archive_first ? std::min(*first, *archive_first) : *first;
  if (*first > *next || *start < lowest || *start > *next) {
    return Status::Corruption("has start outside first..next");
  }
  return Greeting{.topic = std::string(topic->as_string()),
                  .partition = *partition,
                  .first = *first,
                  .next = *next,
                  .start = *start,
                  .max_replay = NonNegativeInt(*json, "max_replay").value_or(0),
                  .max_backlog = NonNegativeInt(*json, "max_backlog").value_or(0),
                  .archive_first = archive_first};
}

size_t MessagePayloadSize(int64_t offset, std::string_view value) {
  char digits[24];
  return 1 + OffsetDigits(offset, digits) + 1 + value.size() + 1;
}

void AppendMessagePayload(std::string& out, int64_t offset, std::string_view value) {
  char digits[24];
  const size_t digit_count = OffsetDigits(offset, digits);
  out.push_back('[');
  out.append(digits, digit_count);
  out.push_back(',');
  out.append(value);
  out.push_back(']');
}

std::optional<StreamMessage> ParseMessagePayload(std::string_view payload) {
  if (payload.size() < 4 || payload.front() != '[' || payload.back() != ']') return std::nullopt;
  const size_t comma = payload.find(',');
  if (comma == std::string_view::npos || comma < 2 || comma > kMaxOffsetDigits + 1) {
    return std::nullopt;
  }
  const Result<uint64_t> offset = ParseUnsigned(payload.substr(1, comma - 1), "offset", INT64_MAX);
  if (!offset.ok()) return std::nullopt;
  return StreamMessage{static_cast<int64_t>(*offset),
                       payload.substr(comma + 1, payload.size() - comma - 2)};
}

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool PercentDecode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (in.size() - i < 3) return false;
    const int hi = HexDigit(in[i + 1]);
    const int lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace weir::stream_protocol
