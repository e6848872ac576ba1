#include "serve/request.h"

#include <algorithm>

#include "core/names.h"
#include "core/parse.h"
#include "simdjson.h"
#include "stream_protocol/stream_protocol.h"

namespace weir::serve {

namespace {

constexpr std::string_view kStreamsPrefix = "/streams/";
constexpr std::string_view kPublishPrefix = "/publish/";
constexpr std::string_view kViewsPrefix = "/views/";

TargetError BadRequest(std::string param, std::string detail) {
  return {TargetError::Kind::kBadRequest, std::move(param), std::move(detail)};
}

// Digits only (no sign, no space), at most `max_digits` of them, value <= `max`.
bool ParseDecimal(std::string_view s, size_t max_digits, uint64_t max, uint64_t& value) {
  if (s.size() > max_digits) return false;
  const Result<uint64_t> parsed = ParseUnsigned(s, "a number", max);
  if (!parsed.ok()) return false;
  value = *parsed;
  return true;
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view TrimJsonSpace(std::string_view s) {
  while (!s.empty() && IsJsonSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Validates views into one padded copy of the body (simdjson reads up to SIMDJSON_PADDING bytes
// past a value's end), so no value is copied again. The copy's buffer is the thread's, reused.
class BodyValidator {
 public:
  explicit BodyValidator(std::string_view body) : body_(body) {
    padded_.reserve(body.size() + simdjson::SIMDJSON_PADDING);
    padded_.assign(body);
    padded_.append(simdjson::SIMDJSON_PADDING, ' ');
  }

  // simdjson's error for `value` (a view into the body), or nullptr if it is one JSON value.
  const char* Check(std::string_view value) {
    const char* start = padded_.data() + (value.data() - body_.data());
    simdjson::dom::element root;
    auto error = parser_.parse(start, value.size(), /*realloc_if_needed=*/false).get(root);
    return error ? simdjson::error_message(error) : nullptr;
  }

 private:
  std::string_view body_;
  static thread_local std::string padded_;
  static thread_local simdjson::dom::parser parser_;
};

thread_local std::string BodyValidator::padded_;
thread_local simdjson::dom::parser BodyValidator::parser_;

}  // namespace

std::variant<Target, TargetError> ParseTarget(std::string_view target) {
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  Target t;
  if (path == "/topics") {
    t.endpoint = Endpoint::kTopics;
  } else if (path == "/health") {
    t.endpoint = Endpoint::kHealth;
  } else if (path == "/query") {
    t.endpoint = Endpoint::kQuery;
  } else if (path == "/views" || path.starts_with(kViewsPrefix)) {
    t.endpoint = Endpoint::kViews;
    if (path != "/views") {
      const std::string_view view = path.substr(kViewsPrefix.size());
      if (!CheckName(view, "view name").ok()) {
        return BadRequest("path", "a view name is 1-" + std::to_string(kMaxNameLength) +
                                      " characters of [A-Za-z0-9._-], not . or ..");
      }
      t.topic.assign(view);
    }
  } else if (path.starts_with(kStreamsPrefix) || path.starts_with(kPublishPrefix)) {
    t.endpoint = path.starts_with(kStreamsPrefix) ? Endpoint::kStreams : Endpoint::kPublish;
    const std::string_view topic = path.substr(kStreamsPrefix.size());
    if (!CheckName(topic, "topic name").ok()) {
      return BadRequest("path", "a topic name is 1-" + std::to_string(kMaxNameLength) +
                                    " characters of [A-Za-z0-9._-], not . or ..");
    }
    t.topic.assign(topic);
  } else {
    return TargetError{TargetError::Kind::kNotFound, "path", "no such endpoint"};
  }

  const bool takes_partition = t.endpoint == Endpoint::kStreams || t.endpoint == Endpoint::kPublish;
  const bool takes_offset = t.endpoint == Endpoint::kStreams;
  const bool takes_format = t.endpoint == Endpoint::kQuery;
  bool seen_partition = false, seen_offset = false, seen_format = false;
  std::string value;
  size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view param = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (param.empty()) continue;  // "a=1&&b=2", a trailing '&'
    const size_t eq = param.find('=');
    const std::string_view name = param.substr(0, eq);
    const std::string_view raw =
        eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1);

    bool* seen = nullptr;
    if (name == "partition" && takes_partition) {
      seen = &seen_partition;
    } else if (name == "offset" && takes_offset) {
      seen = &seen_offset;
    } else if (name == "format" && takes_format) {
      seen = &seen_format;
    } else if (name != "token") {
      return BadRequest(std::string(name), "unknown parameter for this endpoint");
    }
    if ((seen != nullptr && *seen) || (seen == nullptr && t.token.has_value())) {
      return BadRequest(std::string(name), "repeated parameter");
    }
    if (raw.empty()) return BadRequest(std::string(name), "empty value");
    if (!stream_protocol::PercentDecode(raw, value))
      return BadRequest(std::string(name), "malformed %-escape");

    if (seen == nullptr) {
      t.token = value;
      continue;
    }
    *seen = true;
    uint64_t number = 0;
    if (name == "format") {
      t.format = value;
    } else if (name == "partition") {
      if (!ParseDecimal(value, 10, INT32_MAX, number)) {
        return BadRequest("partition", "a partition is a decimal number below 2^31");
      }
      t.partition = static_cast<int32_t>(number);
    } else if (value == "earliest") {
      t.start.kind = StartOffset::Kind::kEarliest;
    } else if (value == "latest") {
      t.start.kind = StartOffset::Kind::kLive;
    } else if (ParseDecimal(value, 19, INT64_MAX, number)) {
      t.start.kind = StartOffset::Kind::kAt;
      t.start.offset = static_cast<int64_t>(number);
    } else {
      return BadRequest("offset", "an offset is earliest, latest or 0 <= N < 2^63 in digits");
    }
  }
  return t;
}

std::variant<std::vector<std::string_view>, BodyError> SplitPublishBody(std::string_view body) {
  std::vector<std::string_view> values;
  const std::string_view whole = TrimJsonSpace(body);
  if (whole.empty()) return values;
  BodyValidator validator(body);
  if (whole.find('\n') == std::string_view::npos) {
    if (const char* error = validator.Check(whole)) return BodyError{1, error};
    values.push_back(whole);
    return values;
  }
  // JSON lines first (the common multi-line body): each value is validated once. A line that
  // is not a value may be part of one value spanning lines (a pretty-printed object); no body
  // with two or more non-empty lines is both, so the order does not change the answer.
  int64_t line_number = 0;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    ++line_number;
    // Trimming drops the '\r' before the '\n' along with the other surrounding whitespace.
    const std::string_view line = TrimJsonSpace(body.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty()) continue;
    if (const char* error = validator.Check(line)) {
      if (validator.Check(whole) == nullptr) return std::vector<std::string_view>{whole};
      return BodyError{line_number, error};
    }
    values.push_back(line);
  }
  return values;
}

std::variant<QueryRequest, std::string> ParseQueryBody(std::string_view body,
                                                       const std::optional<std::string>& format,
                                                       std::chrono::milliseconds max_time) {
  QueryRequest request;
  request.timeout = max_time;
  if (format) request.format = *format;
  const std::string_view whole = TrimJsonSpace(body);
  if (!whole.empty() && whole.front() == '{') {
    simdjson::dom::parser parser;
    simdjson::dom::object object;
    if (auto error = parser.parse(whole.data(), whole.size()).get_object().get(object)) {
      return std::string("the body is not a JSON object: ") + simdjson::error_message(error);
    }
    for (auto [name, value] : object) {
      if (name == "sql" && value.is_string()) {
        request.sql = std::string_view(value.get_string().value_unsafe());
      } else if (name == "format" && value.is_string()) {
        request.format = std::string_view(value.get_string().value_unsafe());
      } else if (name == "timeout_ms" && value.is_int64() && value.get_int64().value_unsafe() > 0) {
        request.timeout =
            std::min(max_time, std::chrono::milliseconds(value.get_int64().value_unsafe()));
      } else if (name == "sql" || name == "format" || name == "timeout_ms") {
        return "\"" + std::string(name) + "\" must be " +
               (name == "timeout_ms" ? "a positive integer" : "a string");
      } else {
        return "unknown member \"" + std::string(name) + "\" (sql, format, timeout_ms)";
      }
    }
  } else {
    request.sql = whole;
  }
  if (TrimJsonSpace(request.sql).empty()) {
    return std::string("no query: the body is the SQL text, or {\"sql\": \"...\"}");
  }
  if (request.format != "jsonl" && request.format != "csv" && request.format != "table") {
    return "format must be jsonl, csv or table, not '" + request.format + "'";
  }
  return request;
}

std::optional<std::string_view> BearerToken(std::string_view authorization_header) {
  constexpr std::string_view kScheme = "bearer";
  std::string_view h = authorization_header;
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  if (h.size() <= kScheme.size() || (h[kScheme.size()] != ' ' && h[kScheme.size()] != '\t')) {
    return std::nullopt;
  }
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = h[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return std::nullopt;
  }
  h.remove_prefix(kScheme.size());
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  if (h.empty() || h.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  return h;
}

}  // namespace weir::serve
