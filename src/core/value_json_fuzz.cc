// Fuzz target for Value's JSON decoder, the first thing outside bytes meet (records, publish
// bodies, produce input), and for the encoders behind it. For any bytes:
//   - AssignJson into a value reused from input to input (as a source's record slot is) and
//     Parse into a fresh one agree: both refuse, with the same kInvalidArgument reason, leaving
//     the reused value null; or both accept the same value, bit for bit (-0.0 is not 0.0).
//   - What parses is written canonically: ToJson re-parses to an equal value whose JSON is the
//     same bytes, and the binary form reads back to the same value and the same bytes.
//   - A string value parsed as JSON in place (the text aliasing the target) behaves as a copy.
//   - ReadBinary over the raw bytes never crashes, and what it accepts re-encodes to a fixed
//     point.
// Built as a libFuzzer target with WEIR_FUZZ and, always, as value_json_fuzz_replay
// (testing/fuzz_replay_main.cc), a ctest over the seeds in json_fuzz_corpus/ and deterministic
// mutations of them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weir/value.h"

namespace weir {
namespace {

void Require(bool condition, const char* what, std::string_view input) {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s\ninput (%zu bytes): %.*s\n", what, input.size(),
               static_cast<int>(std::min<size_t>(input.size(), 512)), input.data());
  std::abort();
}

std::string Binary(const Value& v) {
  std::string out;
  v.AppendBinary(out);
  return out;
}

void CheckCanonical(const Value& parsed, std::string_view input) {
  const std::string text = parsed.ToJson();
  auto again = Value::Parse(text);
  Require(again.ok(), "ToJson output parses", input);
  Require(*again == parsed, "ToJson output parses to an equal value", input);
  Require(again->ToJson() == text, "ToJson is a fixed point", input);

  const std::string bin = Binary(parsed);
  std::string_view in = bin;
  auto back = Value::ReadBinary(in);
  Require(back.ok(), "binary form reads back", input);
  Require(in.empty(), "binary read consumes the whole form", input);
  Require(*back == parsed, "binary form reads back to an equal value", input);
  Require(Binary(*back) == bin, "binary form is a fixed point", input);
  Require(back->ToJson() == text, "binary round trip keeps the JSON text", input);
}

void CheckAliasedAssign(const Value& parsed, std::string_view input) {
  if (!parsed.is_string()) return;
  Value copy = parsed;
  Status in_place = copy.AssignJson(copy.as_string());
  auto fresh = Value::Parse(parsed.as_string());
  Require(in_place.ok() == fresh.ok(), "aliased AssignJson agrees with Parse", input);
  if (!in_place.ok()) {
    Require(copy.is_null(), "aliased AssignJson leaves null on error", input);
    return;
  }
  Require(Binary(copy) == Binary(*fresh), "aliased AssignJson equals Parse", input);
}

void CheckBinaryDecoder(std::string_view input) {
  std::string_view in = input;
  auto decoded = Value::ReadBinary(in);
  if (!decoded.ok()) {
    Require(decoded.status().code() == StatusCode::kCorruption, "binary errors are kCorruption",
            input);
    return;
  }
  // The raw bytes may spell NaN or non-minimal varints, so compare encodings, not values.
  const std::string once = Binary(*decoded);
  std::string_view once_in = once;
  auto again = Value::ReadBinary(once_in);
  Require(again.ok() && once_in.empty(), "re-encoded binary reads back", input);
  Require(Binary(*again) == once, "re-encoded binary is a fixed point", input);
}

}  // namespace
}  // namespace weir

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using weir::Value;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Holds whatever the previous input left, so each input is parsed over a different value.
  static Value* reused = new Value();

  weir::Status status = reused->AssignJson(input);
  auto fresh = Value::Parse(input);
  weir::Require(status.ok() == fresh.ok(), "AssignJson and Parse agree on acceptance", input);
  if (!status.ok()) {
    weir::Require(reused->is_null(), "a failed AssignJson leaves null", input);
    weir::Require(status.code() == weir::StatusCode::kInvalidArgument, "errors are bad input",
                  input);
    weir::Require(!status.message().empty(), "errors carry a reason", input);
    weir::Require(status.message() == fresh.status().message(), "the same reason both ways", input);
  } else {
    weir::Require(*reused == *fresh, "in-place parse equals fresh parse", input);
    weir::Require(weir::Binary(*reused) == weir::Binary(*fresh),
                  "in-place parse equals fresh parse bit for bit", input);
    weir::CheckCanonical(*fresh, input);
    weir::CheckAliasedAssign(*fresh, input);
  }
  weir::CheckBinaryDecoder(input);
  return 0;
}
