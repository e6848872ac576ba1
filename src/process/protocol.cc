#include "process/protocol.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "process/limits.h"

namespace weir::process {

namespace {

// Where a value sits in a message, for errors ("result 3: output 0"), formatted only on error.
struct Place {
  std::string_view what;  // empty: the message itself
  int64_t index = -1;     // -1: not numbered
  const Place* parent = nullptr;

  Place Item(std::string_view item, int64_t i) const { return Place{item, i, this}; }

  std::string Describe() const {
    std::string text = parent ? parent->Describe() : std::string();
    if (what.empty()) return text;
    if (!text.empty()) text += ": ";
    text += what;
    if (index >= 0) text += " " + std::to_string(index);
    return text;
  }
  Status Violation(std::string_view problem) const {
    std::string where = Describe();
    return Status::InvalidArgument(where.empty() ? std::string(problem)
                                                 : where + ": " + std::string(problem));
  }
};

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

// Refuses members not in `allowed`, and any name given twice.
Status CheckFields(const Value& object, std::initializer_list<std::string_view> allowed,
                   const Place& place) {
  const Value::Object& members = object.as_object();
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string& name = members[i].first;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return place.Violation("unknown field " + Quoted(name));
    }
    for (size_t j = 0; j < i; ++j) {
      if (members[j].first == name) return place.Violation("duplicate field " + Quoted(name));
    }
  }
  return Status::OK();
}

Status ExpectType(const Value& value, Value::Type type, std::string_view type_name,
                  std::string_view name, const Place& place) {
  if (value.type() == type) return Status::OK();
  return place.Violation(Quoted(name) + " must be " + std::string(type_name) + ", found " +
                         std::string(value.TypeName()));
}

// The member `name` of `object`, of `type`; a violation if it is missing or of another type.
Result<Value*> Required(Value& object, std::string_view name, Value::Type type,
                        std::string_view type_name, const Place& place) {
  Value* value = object.Find(name);
  if (value == nullptr) return place.Violation("missing field " + Quoted(name));
  WEIR_RETURN_IF_ERROR(ExpectType(*value, type, type_name, name, place));
  return value;
}

Result<int64_t> RequiredInt(Value& object, std::string_view name, const Place& place) {
  WEIR_ASSIGN_OR_RETURN(Value * value,
                        Required(object, name, Value::Type::kInt, "an integer", place));
  return value->as_int();
}

Result<std::string_view> RequiredString(Value& object, std::string_view name, const Place& place) {
  WEIR_ASSIGN_OR_RETURN(Value * value,
                        Required(object, name, Value::Type::kString, "a string", place));
  return value->as_string();
}

// The whole line as an object whose "type" is `type`.
Result<Value> ParseMessage(std::string_view line, std::string_view type) {
  auto parsed = Value::Parse(line);
  if (!parsed.ok()) return Status::InvalidArgument("not JSON: " + parsed.status().message());
  if (!parsed->is_object()) {
    return Status::InvalidArgument("a message must be a JSON object, found " +
                                   std::string(parsed->TypeName()));
  }
  WEIR_ASSIGN_OR_RETURN(std::string_view found, RequiredString(*parsed, "type", Place{}));
  if (found != type) {
    return Status::InvalidArgument("expected a message of type " + Quoted(type) + ", found " +
                                   Quoted(found));
  }
  return std::move(parsed).value();
}

Result<std::vector<std::string>> ParseNames(Value& hello, std::string_view field) {
  WEIR_ASSIGN_OR_RETURN(Value * names,
                        Required(hello, field, Value::Type::kArray, "an array", Place{}));
  std::vector<std::string> out;
  for (const Value& name : names->as_array()) {
    if (!name.is_string()) {
      return Status::InvalidArgument(Quoted(field) + " must hold strings, found " +
                                     std::string(name.TypeName()));
    }
    out.emplace_back(name.as_string());
  }
  return out;
}

// `before` (the JSON up to a member's value) and the integer.
void AppendNumber(std::string& out, std::string_view before, int64_t number) {
  out += before;
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, number).ptr);
}

void AppendNames(const std::vector<std::string>& names, std::string& out) {
  out += '[';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(out, names[i]);
  }
  out += ']';
}

Status ParseOutput(Value& output, const Place& place, ProcessResult& result) {
  WEIR_RETURN_IF_ERROR(ExpectType(output, Value::Type::kObject, "an object", "output", place));
  WEIR_RETURN_IF_ERROR(CheckFields(output, {"value", "time", "key"}, place));
  Value* value = output.Find("value");
  if (value == nullptr) return place.Violation("missing field 'value'");
  WEIR_ASSIGN_OR_RETURN(int64_t time, RequiredInt(output, "time", place));
  const Value* key = output.Find("key");
  if (key == nullptr) {
    result.Emit(std::move(*value), time);
  } else {
    result.Emit(std::move(*value), time, KeyFromJson(*key));
  }
  return Status::OK();
}

Status ParseStateChanges(Value& state, const Place& place, ProcessResult& result) {
  WEIR_RETURN_IF_ERROR(ExpectType(state, Value::Type::kObject, "an object", "state", place));
  Value::Object& changes = state.as_object();
  for (size_t i = 0; i < changes.size(); ++i) {
    auto& [name, change] = changes[i];
    for (size_t j = 0; j < i; ++j) {
      if (changes[j].first == name) return place.Violation("duplicate state " + Quoted(name));
    }
    if (change.is_string() && change.as_string() == "clear") {
      result.Clear(name);
      continue;
    }
    Value::Object* set = change.is_object() ? &change.as_object() : nullptr;
    if (set == nullptr || set->size() != 1 || set->front().first != "set") {
      return place.Violation("state " + Quoted(name) +
                             " must be {\"set\": value} or \"clear\", found " + change.ToJson());
    }
    result.Set(name, std::move(set->front().second));
  }
  return Status::OK();
}

Status ParseTimerChange(Value& timer, const Place& place, ProcessResult& result) {
  WEIR_RETURN_IF_ERROR(ExpectType(timer, Value::Type::kObject, "an object", "timer", place));
  WEIR_RETURN_IF_ERROR(CheckFields(timer, {"set", "at", "cancel"}, place));
  const bool sets = timer.Find("set") != nullptr;
  const bool cancels = timer.Find("cancel") != nullptr;
  if (sets && cancels) return place.Violation("both 'set' and 'cancel'");
  if (sets) {
    WEIR_ASSIGN_OR_RETURN(std::string_view name, RequiredString(timer, "set", place));
    WEIR_ASSIGN_OR_RETURN(int64_t at, RequiredInt(timer, "at", place));
    result.SetTimer(name, at);
    return Status::OK();
  }
  if (!cancels) return place.Violation("neither 'set' nor 'cancel'");
  if (timer.Find("at") != nullptr) return place.Violation("'at' with 'cancel'");
  WEIR_ASSIGN_OR_RETURN(std::string_view name, RequiredString(timer, "cancel", place));
  result.CancelTimer(name);
  return Status::OK();
}

Status ParseResult(Value& item, const Place& place, ProcessResult& result) {
  WEIR_RETURN_IF_ERROR(ExpectType(item, Value::Type::kObject, "an object", "result", place));
  WEIR_RETURN_IF_ERROR(CheckFields(item, {"id", "outputs", "state", "timers"}, place));
  WEIR_ASSIGN_OR_RETURN(result.id, RequiredInt(item, "id", place));
  if (Value* outputs = item.Find("outputs")) {
    WEIR_RETURN_IF_ERROR(ExpectType(*outputs, Value::Type::kArray, "an array", "outputs", place));
    Value::Array& list = outputs->as_array();
    for (size_t i = 0; i < list.size(); ++i) {
      WEIR_RETURN_IF_ERROR(ParseOutput(list[i], place.Item("output", i), result));
    }
  }
  if (Value* state = item.Find("state")) {
    WEIR_RETURN_IF_ERROR(ParseStateChanges(*state, place, result));
  }
  if (Value* timers = item.Find("timers")) {
    WEIR_RETURN_IF_ERROR(ExpectType(*timers, Value::Type::kArray, "an array", "timers", place));
    Value::Array& list = timers->as_array();
    for (size_t i = 0; i < list.size(); ++i) {
      WEIR_RETURN_IF_ERROR(ParseTimerChange(list[i], place.Item("timer", i), result));
    }
  }
  return Status::OK();
}

Result<WorkerReply> ParseError(Value& message) {
  WEIR_RETURN_IF_ERROR(CheckFields(message, {"type", "call", "message"}, Place{}));
  WorkerReply reply;
  WEIR_ASSIGN_OR_RETURN(reply.call, RequiredInt(message, "call", Place{}));
  WEIR_ASSIGN_OR_RETURN(std::string_view text, RequiredString(message, "message", Place{}));
  reply.error = std::string(text);
  return reply;
}

Status ParseActivation(Value& item, int64_t watermark, const Place& place,
                       ProcessActivation& activation) {
  WEIR_RETURN_IF_ERROR(ExpectType(item, Value::Type::kObject, "an object", "activation", place));
  WEIR_RETURN_IF_ERROR(
      CheckFields(item, {"id", "key", "time", "watermark", "input", "timer", "state"}, place));
  WEIR_ASSIGN_OR_RETURN(activation.id, RequiredInt(item, "id", place));
  const Value* key = item.Find("key");
  if (key == nullptr) return place.Violation("missing field 'key'");
  activation.key = KeyFromJson(*key);
  WEIR_ASSIGN_OR_RETURN(activation.time, RequiredInt(item, "time", place));
  activation.watermark = watermark;
  if (item.Find("watermark") != nullptr) {
    WEIR_ASSIGN_OR_RETURN(activation.watermark, RequiredInt(item, "watermark", place));
  }
  activation.input = item.Find("input");
  const bool has_timer = item.Find("timer") != nullptr;
  if ((activation.input != nullptr) == has_timer) {
    return place.Violation("exactly one of 'input' and 'timer' is needed");
  }
  activation.timer = {};
  if (has_timer) {
    WEIR_ASSIGN_OR_RETURN(activation.timer, RequiredString(item, "timer", place));
  }
  WEIR_ASSIGN_OR_RETURN(activation.state,
                        Required(item, "state", Value::Type::kObject, "an object", place));
  return Status::OK();
}

}  // namespace

Key KeyFromJson(const Value& json) {
  switch (json.type()) {
    case Value::Type::kNull:
      return Key();
    case Value::Type::kString:
      return Key::String(json.as_string());
    case Value::Type::kInt:
      return Key::Int(json.as_int());
    default:
      return Key::Json(json);
  }
}

void AppendHello(const ProcessOptions& options, std::string& out) {
  AppendNumber(out, R"({"type":"hello","protocol":)", kProtocolVersion);
  out += R"(,"function":)";
  AppendJsonString(out, options.id);
  AppendNumber(out, R"(,"version":)", options.version);
  out += R"(,"state":)";
  AppendNames(options.state, out);
  out += R"(,"timers":)";
  AppendNames(options.timers, out);
  out += R"(,"limits":{)";
  for (const LimitField& field : kLimitFields) {
    if (&field != kLimitFields) out += ',';
    AppendJsonString(out, field.name);
    AppendNumber(out, ":", options.limits.*field.member);
  }
  out += "}}\n";
}

Status ParseReady(std::string_view line) {
  WEIR_ASSIGN_OR_RETURN(Value ready, ParseMessage(line, "ready"));
  WEIR_RETURN_IF_ERROR(CheckFields(ready, {"type", "protocol"}, Place{}));
  WEIR_ASSIGN_OR_RETURN(int64_t protocol, RequiredInt(ready, "protocol", Place{}));
  if (protocol != kProtocolVersion) {
    return Status::InvalidArgument("the worker speaks protocol " + std::to_string(protocol) +
                                   ", Weir speaks " + std::to_string(kProtocolVersion));
  }
  return Status::OK();
}

void AppendInvoke(const Call& call, std::string& out) {
  AppendNumber(out, R"({"type":"invoke","call":)", call.call);
  AppendNumber(out, R"(,"attempt":)", call.attempt);
  AppendNumber(out, R"(,"watermark":)", call.watermark);
  out += R"(,"activations":[)";
  for (size_t i = 0; i < call.activations.size(); ++i) {
    const ProcessActivation& activation = call.activations[i];
    if (i > 0) out += ',';
    AppendNumber(out, R"({"id":)", activation.id);
    out += R"(,"key":)";
    activation.key.AppendJson(out);
    AppendNumber(out, R"(,"time":)", activation.time);
    AppendNumber(out, R"(,"watermark":)", activation.watermark);
    if (activation.is_timer()) {
      out += R"(,"timer":)";
      AppendJsonString(out, activation.timer);
    } else {
      out += R"(,"input":)";
      activation.input->AppendJson(out);
    }
    out += R"(,"state":)";
    if (activation.state != nullptr) {
      activation.state->AppendJson(out);
    } else {
      out += "{}";
    }
    out += '}';
  }
  out += "]}\n";
}

Result<WorkerReply> ParseReply(std::string_view line, std::vector<ProcessResult>& results) {
  results.clear();
  auto parsed = Value::Parse(line);
  if (!parsed.ok()) return Status::InvalidArgument("not JSON: " + parsed.status().message());
  Value& message = *parsed;
  if (!message.is_object()) {
    return Status::InvalidArgument("a message must be a JSON object, found " +
                                   std::string(message.TypeName()));
  }
  WEIR_ASSIGN_OR_RETURN(std::string_view type, RequiredString(message, "type", Place{}));
  if (type == "error") return ParseError(message);
  if (type != "result") {
    return Status::InvalidArgument("expected a message of type 'result' or 'error', found " +
                                   Quoted(type));
  }
  WEIR_RETURN_IF_ERROR(CheckFields(message, {"type", "call", "results"}, Place{}));
  WorkerReply reply;
  WEIR_ASSIGN_OR_RETURN(reply.call, RequiredInt(message, "call", Place{}));
  WEIR_ASSIGN_OR_RETURN(Value * items,
                        Required(message, "results", Value::Type::kArray, "an array", Place{}));
  Value::Array& list = items->as_array();
  results.resize(list.size());
  const Place top;
  for (size_t i = 0; i < list.size(); ++i) {
    WEIR_RETURN_IF_ERROR(ParseResult(list[i], top.Item("result", i), results[i]));
  }
  return reply;
}

Result<ProcessOptions> ParseHello(std::string_view line) {
  WEIR_ASSIGN_OR_RETURN(Value hello, ParseMessage(line, "hello"));
  const Place top;
  WEIR_RETURN_IF_ERROR(CheckFields(
      hello, {"type", "protocol", "function", "version", "state", "timers", "limits"}, top));
  WEIR_ASSIGN_OR_RETURN(int64_t protocol, RequiredInt(hello, "protocol", top));
  if (protocol != kProtocolVersion) {
    return Status::InvalidArgument("Weir speaks protocol " + std::to_string(protocol) +
                                   ", this worker speaks " + std::to_string(kProtocolVersion));
  }
  ProcessOptions options;
  WEIR_ASSIGN_OR_RETURN(std::string_view function, RequiredString(hello, "function", top));
  options.id = std::string(function);
  WEIR_ASSIGN_OR_RETURN(options.version, RequiredInt(hello, "version", top));
  WEIR_ASSIGN_OR_RETURN(options.state, ParseNames(hello, "state"));
  WEIR_ASSIGN_OR_RETURN(options.timers, ParseNames(hello, "timers"));
  WEIR_ASSIGN_OR_RETURN(Value * limits,
                        Required(hello, "limits", Value::Type::kObject, "an object", top));
  const Place place{"limits"};
  for (const auto& [name, value] : limits->as_object()) {
    auto field = std::find_if(std::begin(kLimitFields), std::end(kLimitFields),
                              [&](const LimitField& f) { return f.name == name; });
    if (field == std::end(kLimitFields)) return place.Violation("unknown field " + Quoted(name));
    WEIR_RETURN_IF_ERROR(ExpectType(value, Value::Type::kInt, "an integer", name, place));
    options.limits.*field->member = value.as_int();
  }
  return options;
}

void AppendReady(std::string& out) {
  AppendNumber(out, R"({"type":"ready","protocol":)", kProtocolVersion);
  out += "}\n";
}

Status ParseInvoke(std::string_view line, Value& document, Call& call) {
  WEIR_ASSIGN_OR_RETURN(document, ParseMessage(line, "invoke"));
  const Place top;
  WEIR_RETURN_IF_ERROR(
      CheckFields(document, {"type", "call", "attempt", "watermark", "activations"}, top));
  WEIR_ASSIGN_OR_RETURN(call.call, RequiredInt(document, "call", top));
  WEIR_ASSIGN_OR_RETURN(int64_t attempt, RequiredInt(document, "attempt", top));
  call.attempt = static_cast<int32_t>(attempt);
  WEIR_ASSIGN_OR_RETURN(call.watermark, RequiredInt(document, "watermark", top));
  WEIR_ASSIGN_OR_RETURN(Value * items,
                        Required(document, "activations", Value::Type::kArray, "an array", top));
  Value::Array& list = items->as_array();
  call.activations.resize(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    WEIR_RETURN_IF_ERROR(
        ParseActivation(list[i], call.watermark, top.Item("activation", i), call.activations[i]));
  }
  return Status::OK();
}

void AppendResults(int64_t call, const std::vector<ProcessResult>& results, std::string& out) {
  AppendNumber(out, R"({"type":"result","call":)", call);
  out += R"(,"results":[)";
  for (size_t i = 0; i < results.size(); ++i) {
    const ProcessResult& result = results[i];
    if (i > 0) out += ',';
    AppendNumber(out, R"({"id":)", result.id);
    out += R"(,"outputs":[)";
    for (size_t j = 0; j < result.outputs.size(); ++j) {
      const ProcessOutput& output = result.outputs[j];
      if (j > 0) out += ',';
      out += R"({"value":)";
      output.value.AppendJson(out);
      AppendNumber(out, R"(,"time":)", output.time);
      if (output.key) {
        out += R"(,"key":)";
        output.key->AppendJson(out);
      }
      out += '}';
    }
    out += R"(],"state":{)";
    for (size_t j = 0; j < result.state.size(); ++j) {
      const ProcessStateChange& change = result.state[j];
      if (j > 0) out += ',';
      AppendJsonString(out, change.name);
      if (change.set) {
        out += R"(:{"set":)";
        change.set->AppendJson(out);
        out += '}';
      } else {
        out += R"(:"clear")";
      }
    }
    out += R"(},"timers":[)";
    for (size_t j = 0; j < result.timers.size(); ++j) {
      const ProcessTimerChange& change = result.timers[j];
      if (j > 0) out += ',';
      if (change.at) {
        out += R"({"set":)";
        AppendJsonString(out, change.name);
        AppendNumber(out, R"(,"at":)", *change.at);
      } else {
        out += R"({"cancel":)";
        AppendJsonString(out, change.name);
      }
      out += '}';
    }
    out += "]}";
  }
  out += "]}\n";
}

void AppendError(int64_t call, std::string_view message, std::string& out) {
  AppendNumber(out, R"({"type":"error","call":)", call);
  out += R"(,"message":)";
  AppendJsonString(out, message);
  out += "}\n";
}

}  // namespace weir::process
