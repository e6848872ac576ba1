// Parsing what clients ask for, without I/O: request targets (path + query string) and publish
// bodies. README.md in this folder is the protocol these implement.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "weir/serve.h"
#include "weir/status.h"

namespace weir::serve {

enum class Endpoint : uint8_t { kStreams, kPublish, kTopics, kHealth, kQuery, kViews };

// Where a subscription starts.
struct StartOffset {
  enum class Kind : uint8_t { kLive, kEarliest, kAt };
  Kind kind = Kind::kLive;
  int64_t offset = 0;  // kAt only
};

struct Target {
  Endpoint endpoint = Endpoint::kHealth;
  std::string topic;                 // kStreams and kPublish; kViews: the view ("" for all)
  int32_t partition = 0;             // decimal, 0 <= P < 2^31
  StartOffset start;                 // kStreams
  std::optional<std::string> token;  // ?token=
  std::optional<std::string> format;  // kQuery: ?format=
};

// The reason a target is refused: which parameter (or "path") and what was wrong.
struct TargetError {
  enum class Kind : uint8_t { kNotFound, kBadRequest };
  Kind kind;
  std::string param;   // "path", "partition", "offset", "token" or the unknown parameter's name
  std::string detail;  // human-readable
};

// Parses an HTTP request target such as "/streams/orders?partition=1&offset=42".
// Paths: /streams/TOPIC, /publish/TOPIC, /topics, /health, /query, /views, /views/VIEW (no
// trailing slash). A path that is not one of these is kNotFound ("path"); a bad topic or view
// name ("path"), an empty or repeated parameter, a parameter that does not apply to the
// endpoint, a malformed percent-escape or number is kBadRequest naming it. `token` applies to
// every endpoint, `partition` to streams and publish, `offset` to streams, `format` to query;
// empty segments ("?", "&&", a trailing '&') are ignored. Values are percent-decoded (and '+'
// is a plus, not a space); names are not.
// Never throws, never reads outside `target`.
std::variant<Target, TargetError> ParseTarget(std::string_view target);

// One value of a publish body.
struct BodyError {
  int64_t line;        // 1-based line of the bad value (1 for a single value)
  std::string detail;  // simdjson's message
};
// Splits a publish body into its JSON values and validates each as exactly one JSON value.
// A body that is one JSON value as a whole (a pretty-printed object included) is that value;
// otherwise it is JSON lines: '\r' before '\n' dropped, empty or whitespace-only lines skipped.
// Each value is trimmed of surrounding whitespace. Values are views into `body`.
// A body with no value returns an empty vector.
std::variant<std::vector<std::string_view>, BodyError> SplitPublishBody(std::string_view body);

// A POST /query body: the SQL text, or a JSON object {"sql": "...", "format": "jsonl|csv|table",
// "timeout_ms": N} (a body whose first non-space character is '{'). The format is the object's,
// else `format` (the ?format= parameter), else jsonl; the timeout is at most `max_time`.
// Returns the request, or what is wrong with the body (for a 400).
std::variant<QueryRequest, std::string> ParseQueryBody(std::string_view body,
                                                       const std::optional<std::string>& format,
                                                       std::chrono::milliseconds max_time);

// "Bearer TOKEN" -> TOKEN; anything else (another scheme, missing) -> nullopt.
std::optional<std::string_view> BearerToken(std::string_view authorization_header);

}  // namespace weir::serve
