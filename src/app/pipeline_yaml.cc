#include "app/pipeline_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "app/data_dir.h"
#include "join/assembler.h"
#include "weir/window.h"

namespace weir::app {
namespace {

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "something else";
}

// A node with the path that leads to it, so every error can say where it is.
class ConfigNode {
 public:
  ConfigNode(YAML::Node node, std::string path, const std::string* file)
      : node_(std::move(node)), path_(std::move(path)), file_(file) {}

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  bool IsMap() const { return node_.IsMap(); }
  bool IsScalar() const { return node_.IsScalar(); }
  bool IsSequence() const { return node_.IsSequence(); }

  Status Error(const std::string& message) const {
    std::string where = *file_ + ": " + (path_.empty() ? "(top level)" : path_) + ": " + message;
    const YAML::Mark mark = node_.Mark();
    if (mark.line >= 0) {
      where += " (line " + std::to_string(mark.line + 1) + ", column " +
               std::to_string(mark.column + 1) + ")";
    }
    return Status::InvalidArgument(where);
  }
  Status Expected(const std::string& what) const {
    return Error("expected " + what + ", found " + Describe(node_));
  }

  std::optional<ConfigNode> Get(const std::string& key) const {
    if (!node_.IsMap()) return std::nullopt;
    YAML::Node child = node_[key];
    if (!child.IsDefined()) return std::nullopt;
    return ConfigNode(child, Join(key), file_);
  }
  Result<ConfigNode> Require(const std::string& key, const std::string& what) const {
    if (auto child = Get(key)) return *child;
    return Error("missing '" + key + "' (" + what + ")");
  }
  std::vector<ConfigNode> Items() const {
    std::vector<ConfigNode> items;
    for (size_t i = 0; i < node_.size(); ++i) {
      items.emplace_back(node_[i], path_ + "[" + std::to_string(i) + "]", file_);
    }
    return items;
  }
  // Every key of a map, in order, as (name, node).
  std::vector<std::pair<std::string, ConfigNode>> Members() const {
    std::vector<std::pair<std::string, ConfigNode>> members;
    for (const auto& kv : node_) {
      std::string key = kv.first.as<std::string>();
      members.emplace_back(key, ConfigNode(kv.second, Join(key), file_));
    }
    return members;
  }
  Status OnlyKeys(const std::set<std::string>& allowed) const {
    if (!node_.IsMap()) return Expected("a map");
    for (const auto& kv : node_) {
      std::string key = kv.first.as<std::string>();
      if (allowed.count(key)) continue;
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return ConfigNode(kv.first, Join(key), file_)
          .Error("unknown key '" + key + "' (expected one of: " + list + ")");
    }
    return Status::OK();
  }

  Result<std::string> String() const {
    if (!node_.IsScalar() || node_.Scalar().empty()) return Expected("a non-empty string");
    return node_.Scalar();
  }
  Result<int64_t> Int(int64_t min, int64_t max) const {
    int64_t v;
    const std::string& s = node_.IsScalar() ? node_.Scalar() : "";
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!node_.IsScalar() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      return Expected("an integer");
    }
    if (v < min || v > max) {
      return Error("expected an integer from " + std::to_string(min) + " to " +
                   std::to_string(max) + ", found " + s);
    }
    return v;
  }
  Result<double> Number(double min) const {
    double v;
    const std::string& s = node_.IsScalar() ? node_.Scalar() : "";
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!node_.IsScalar() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      return Expected("a number");
    }
    if (v < min) return Error("expected a number >= " + std::to_string(min) + ", found " + s);
    return v;
  }
  Result<bool> Bool() const {
    if (node_.IsScalar()) {
      const std::string& s = node_.Scalar();
      if (s == "true" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "no" || s == "off") return false;
    }
    return Expected("true or false");
  }
  // A scalar as the JSON value it reads as: quoted scalars are strings; plain ones may be
  // numbers, booleans or null.
  Result<Value> Literal() const {
    if (!node_.IsScalar()) return Expected("a value (string, number, true/false or null)");
    const std::string& s = node_.Scalar();
    if (node_.Tag() == "!") return Value(s);
    if (s == "true") return Value(true);
    if (s == "false") return Value(false);
    if (s == "null" || s == "~") return Value();
    int64_t i;
    auto ri = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ri.ec == std::errc() && ri.ptr == s.data() + s.size()) return Value(i);
    double d;
    auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
    if (rd.ec == std::errc() && rd.ptr == s.data() + s.size()) return Value(d);
    return Value(s);
  }

 private:
  std::string Join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node node_;
  std::string path_;
  const std::string* file_;
};

// The canonical JSON of a YAML subtree, for the definition a restart must match.
Value Canonical(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Value v = Value(Value::Object());
      for (const auto& kv : node) v.Set(kv.first.as<std::string>(), Canonical(kv.second));
      return v;
    }
    case YAML::NodeType::Sequence: {
      Value::Array a;
      for (const auto& item : node) a.push_back(Canonical(item));
      return Value(std::move(a));
    }
    case YAML::NodeType::Scalar:
      return Value(node.Scalar());
    default:
      return Value();
  }
}

// ---- filter ----

enum class CompareOp { kEq, kNe, kGt, kGe, kLt, kLe, kIn, kExists };

struct Condition {
  std::string field;
  CompareOp op;
  Value operand;           // eq..le; exists: a bool
  std::vector<Value> set;  // in
};

// <0, 0, >0 for comparable values (numbers with numbers, strings with strings); nullopt else.
std::optional<int> Compare(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
  if (a.is_number() && b.is_number()) {
    return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number();
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  if (a.is_bool() && b.is_bool()) return int(a.as_bool()) - int(b.as_bool());
  if (a.is_null() && b.is_null()) return 0;
  return std::nullopt;
}

bool Matches(const Condition& c, const Value& value) {
  const Value* field = value.FindPath(c.field);
  if (c.op == CompareOp::kExists) return (field != nullptr) == c.operand.as_bool();
  if (field == nullptr) return c.op == CompareOp::kNe;
  if (c.op == CompareOp::kIn) {
    for (const Value& candidate : c.set) {
      if (Compare(*field, candidate) == 0) return true;
    }
    return false;
  }
  std::optional<int> cmp = Compare(*field, c.operand);
  switch (c.op) {
    case CompareOp::kEq:
      return cmp == 0;
    case CompareOp::kNe:
      return cmp != 0;
    case CompareOp::kGt:
      return cmp && *cmp > 0;
    case CompareOp::kGe:
      return cmp && *cmp >= 0;
    case CompareOp::kLt:
      return cmp && *cmp < 0;
    case CompareOp::kLe:
      return cmp && *cmp <= 0;
    default:
      return false;
  }
}

Result<Condition> ParseCondition(const ConfigNode& node) {
  static const std::map<std::string, CompareOp> kOps = {
      {"eq", CompareOp::kEq}, {"ne", CompareOp::kNe},        {"gt", CompareOp::kGt},
      {"ge", CompareOp::kGe}, {"lt", CompareOp::kLt},        {"le", CompareOp::kLe},
      {"in", CompareOp::kIn}, {"exists", CompareOp::kExists}};
  WEIR_RETURN_IF_ERROR(
      node.OnlyKeys({"field", "eq", "ne", "gt", "ge", "lt", "le", "in", "exists"}));
  Condition c;
  WEIR_ASSIGN_OR_RETURN(ConfigNode field, node.Require("field", "the value field to test"));
  WEIR_ASSIGN_OR_RETURN(c.field, field.String());
  int ops = 0;
  for (const auto& [name, op] : kOps) {
    std::optional<ConfigNode> operand = node.Get(name);
    if (!operand) continue;
    ++ops;
    c.op = op;
    if (op == CompareOp::kIn) {
      if (!operand->IsSequence()) return operand->Expected("a list of values");
      for (const ConfigNode& item : operand->Items()) {
        WEIR_ASSIGN_OR_RETURN(Value v, item.Literal());
        c.set.push_back(std::move(v));
      }
    } else if (op == CompareOp::kExists) {
      WEIR_ASSIGN_OR_RETURN(bool exists, operand->Bool());
      c.operand = Value(exists);
    } else {
      WEIR_ASSIGN_OR_RETURN(c.operand, operand->Literal());
    }
  }
  if (ops != 1) return node.Error("expected exactly one of eq, ne, gt, ge, lt, le, in, exists");
  return c;
}

// ---- the pipeline ----

Result<KeySpec> ParseKeySpec(const ConfigNode& node) {
  KeySpec spec;
  if (node.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(spec.field, node.String());
    return spec;
  }
  if (!node.IsMap()) return node.Expected("a field name or {field, type}");
  WEIR_ASSIGN_OR_RETURN(ConfigNode field, node.Require("field", "the key's value field"));
  WEIR_ASSIGN_OR_RETURN(spec.field, field.String());
  if (auto type = node.Get("type")) {
    WEIR_ASSIGN_OR_RETURN(std::string name, type->String());
    auto serde = ParseKeySerde(name);
    if (!serde.ok()) return type->Error(serde.status().message());
    spec.type = *serde;
  }
  return spec;
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

constexpr const char* kAggregationKinds = "count, sum, mean, min, max, first, last, collect";

bool IsAggregationKind(const std::string& kind) {
  for (const char* k : {"count", "sum", "mean", "min", "max", "first", "last", "collect"}) {
    if (kind == k) return true;
  }
  return false;
}

// count | first | last | collect (of the whole value), or {kind: field}.
Result<AggregatorPtr> ParseAggregator(const ConfigNode& node) {
  if (node.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(std::string kind, node.String());
    if (kind == "count") return agg::Count();
    if (kind == "first") return agg::First();
    if (kind == "last") return agg::Last();
    if (kind == "collect") return agg::Collect();
    if (IsAggregationKind(kind)) {
      return node.Error("'" + kind + "' needs a field: {" + kind + ": FIELD}");
    }
    return node.Error("unknown aggregation '" + kind + "' (expected " + kAggregationKinds + ")");
  }
  if (!node.IsMap() || node.node().size() != 1) {
    return node.Expected("count or a map of one aggregation to its field ({sum: amount})");
  }
  auto [kind, field_node] = node.Members().front();
  if (kind == "count") return agg::Count();
  WEIR_ASSIGN_OR_RETURN(std::string field, field_node.String());
  if (kind == "sum") return agg::Sum(field);
  if (kind == "mean") return agg::Mean(field);
  if (kind == "min") return agg::Min(field);
  if (kind == "max") return agg::Max(field);
  if (kind == "first") return agg::First(field);
  if (kind == "last") return agg::Last(field);
  if (kind == "collect") return agg::Collect(field);
  return field_node.Error("unknown aggregation '" + kind + "' (expected " + kAggregationKinds +
                          ")");
}

// {name: aggregation, ...}
Result<std::vector<std::pair<std::string, AggregatorPtr>>> ParseNamedAggregations(
    const ConfigNode& node) {
  if (!node.IsMap() || node.node().size() == 0) {
    return node.Expected("a map of output names to aggregations ({clicks: count})");
  }
  std::vector<std::pair<std::string, AggregatorPtr>> aggregations;
  for (auto& [name, agg_node] : node.Members()) {
    WEIR_ASSIGN_OR_RETURN(AggregatorPtr a, ParseAggregator(agg_node));
    aggregations.emplace_back(name, std::move(a));
  }
  return aggregations;
}

// A window's definition: {tumbling: {size_ms, grace_ms}}, {hopping: {size_ms, step_ms,
// grace_ms}}, {sliding: {size_ms, grace_ms}}, {session: {gap_ms, grace_ms}}, or
// {count: {size, step}} / {count: {size, sliding: true}}.
Result<WindowDefinition> ParseWindowDefinition(const ConfigNode& node) {
  if (!node.IsMap() || node.node().size() != 1) {
    return node.Expected("a map with one window kind (tumbling, hopping, sliding, session, count)");
  }
  auto [kind, body] = node.Members().front();
  auto millis = [&](const char* key, bool required) -> Result<int64_t> {
    std::optional<ConfigNode> v = body.Get(key);
    if (!v) {
      if (required) return body.Error(std::string("missing '") + key + "'");
      return int64_t{0};
    }
    return v->Int(INT64_MIN, INT64_MAX);
  };
  using std::chrono::milliseconds;
  if (kind == "count") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size", "step", "sliding"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size", true));
    bool sliding = false;
    if (auto v = body.Get("sliding")) {
      WEIR_ASSIGN_OR_RETURN(sliding, v->Bool());
    }
    if (sliding && body.Get("step")) return body.Error("a sliding count window takes no step");
    if (sliding) return WindowDefinition::CountSliding(size);
    if (body.Get("step")) {
      WEIR_ASSIGN_OR_RETURN(int64_t step, millis("step", true));
      return WindowDefinition::CountHopping(size, step);
    }
    return WindowDefinition::CountTumbling(size);
  }
  std::optional<WindowDefinition> def;
  if (kind == "session") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"gap_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t gap, millis("gap_ms", true));
    def = WindowDefinition::Session(milliseconds(gap));
  } else if (kind == "tumbling" || kind == "sliding") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size_ms", true));
    def = kind == "tumbling" ? WindowDefinition::Tumbling(milliseconds(size))
                             : WindowDefinition::Sliding(milliseconds(size));
  } else if (kind == "hopping") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size_ms", "step_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size_ms", true));
    WEIR_ASSIGN_OR_RETURN(int64_t step, millis("step_ms", true));
    def = WindowDefinition::Hopping(milliseconds(size), milliseconds(step));
  } else {
    return node.Error("unknown window kind '" + kind +
                      "' (expected tumbling, hopping, sliding, session, count)");
  }
  WEIR_ASSIGN_OR_RETURN(int64_t grace, millis("grace_ms", false));
  def->Grace(milliseconds(grace));
  Status valid = def->Validate();
  if (!valid.ok()) return body.Error(valid.message());
  return *def;
}

// - window: {...}
//   agg: count | {sum: amount} | {name: aggregation, ...}
//   emit: final | current
//   closing: key | partition
//   late: FILE.jsonl | {topic: NAME} | {file: PATH}
Result<Stream> BuildWindowStep(Stream stream, const ConfigNode& step, const std::string& base_dir) {
  WEIR_RETURN_IF_ERROR(step.OnlyKeys({"window", "agg", "emit", "closing", "late"}));
  WEIR_ASSIGN_OR_RETURN(WindowDefinition definition, ParseWindowDefinition(*step.Get("window")));
  WindowedStream windowed = stream.Window(definition);
  WEIR_ASSIGN_OR_RETURN(ConfigNode agg_node, step.Require("agg", "what to compute per window"));
  // One aggregation unnamed (`count`, `{sum: amount}`) or several under names.
  bool single = agg_node.IsScalar();
  if (agg_node.IsMap() && agg_node.node().size() == 1) {
    auto [kind, value] = agg_node.Members().front();
    single =
        IsAggregationKind(kind) && value.IsScalar() && !IsAggregationKind(value.node().Scalar());
  }
  if (single) {
    WEIR_ASSIGN_OR_RETURN(AggregatorPtr a, ParseAggregator(agg_node));
    windowed.Agg(std::move(a));
  } else {
    WEIR_ASSIGN_OR_RETURN(auto named, ParseNamedAggregations(agg_node));
    windowed.Agg(std::move(named));
  }
  if (auto closing = step.Get("closing")) {
    WEIR_ASSIGN_OR_RETURN(std::string c, closing->String());
    if (c != "key" && c != "partition")
      return closing->Error("expected key or partition, found '" + c + "'");
    windowed.Closing(c == "key" ? Closing::kKey : Closing::kPartition);
  }
  if (auto late = step.Get("late")) {
    if (late->IsScalar()) {
      WEIR_ASSIGN_OR_RETURN(std::string target, late->String());
      // A path of JSON lines (as a file sink), else a topic name.
      if (target.ends_with(".jsonl") || target.ends_with(".json") ||
          target.find('/') != std::string::npos) {
        windowed.LateFile(Resolve(base_dir, target));
      } else {
        windowed.LateTopic(target);
      }
    } else {
      WEIR_RETURN_IF_ERROR(late->OnlyKeys({"topic", "file"}));
      if (auto t = late->Get("topic")) {
        WEIR_ASSIGN_OR_RETURN(std::string topic, t->String());
        windowed.LateTopic(topic);
      }
      if (auto f = late->Get("file")) {
        WEIR_ASSIGN_OR_RETURN(std::string path, f->String());
        windowed.LateFile(Resolve(base_dir, path));
      }
    }
  }
  std::string emit = "final";
  if (auto e = step.Get("emit")) {
    WEIR_ASSIGN_OR_RETURN(emit, e->String());
    if (emit != "final" && emit != "current")
      return e->Error("expected final or current, found '" + emit + "'");
  }
  return emit == "final" ? windowed.Final() : windowed.Current();
}

// source: {nexmark: {partitions, events, events_per_second, first_event_ms, seed,
//                    out_of_order_group_size, real_time}}
Result<Stream> BuildNexmarkSource(Application& app, const ConfigNode& n) {
  NexmarkSourceOptions o;
  if (!n.IsMap() && !n.node().IsNull()) return n.Expected("a map of nexmark options (or {})");
  if (n.IsMap()) {
    WEIR_RETURN_IF_ERROR(n.OnlyKeys({"partitions", "events", "events_per_second", "first_event_ms",
                                     "seed", "out_of_order_group_size", "real_time"}));
    if (auto v = n.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(o.partitions, v->Int(1, 1024));
    }
    if (auto v = n.Get("events")) {
      WEIR_ASSIGN_OR_RETURN(o.events, v->Int(-1, INT64_MAX));
    }
    if (auto v = n.Get("events_per_second")) {
      WEIR_ASSIGN_OR_RETURN(o.events_per_second, v->Number(1e-3));
    }
    if (auto v = n.Get("first_event_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.first_event_ms, v->Int(0, INT64_MAX / 2));
    }
    if (auto v = n.Get("seed")) {
      WEIR_ASSIGN_OR_RETURN(o.seed, v->Int(0, INT64_MAX));
    }
    if (auto v = n.Get("out_of_order_group_size")) {
      WEIR_ASSIGN_OR_RETURN(o.out_of_order_group_size, v->Int(1, INT32_MAX));
    }
    if (auto v = n.Get("real_time")) {
      WEIR_ASSIGN_OR_RETURN(o.real_time, v->Bool());
    }
  }
  return app.FromNexmark(o);
}

Result<Stream> BuildSource(Application& app, const ConfigNode& node, const std::string& base_dir) {
  WEIR_RETURN_IF_ERROR(
      node.OnlyKeys({"file", "topic", "generator", "nexmark", "jetstream", "key", "timestamp",
                     "dead_letter", "rate", "bounded", "idle_timeout_ms"}));
  int kinds = (node.Get("file") ? 1 : 0) + (node.Get("topic") ? 1 : 0) +
              (node.Get("generator") ? 1 : 0) + (node.Get("nexmark") ? 1 : 0) +
              (node.Get("jetstream") ? 1 : 0);
  if (kinds != 1) {
    return node.Error("expected exactly one of file, topic, generator, nexmark, jetstream");
  }
  KeySpec key;
  if (auto k = node.Get("key")) {
    if (k->IsMap()) WEIR_RETURN_IF_ERROR(k->OnlyKeys({"field", "type"}));
    WEIR_ASSIGN_OR_RETURN(key, ParseKeySpec(*k));
  }
  std::string timestamp, dead_letter;
  if (auto t = node.Get("timestamp")) {
    WEIR_ASSIGN_OR_RETURN(timestamp, t->String());
  }
  if (auto d = node.Get("dead_letter")) {
    WEIR_ASSIGN_OR_RETURN(dead_letter, d->String());
  }
  double rate = 0;
  if (auto r = node.Get("rate")) {
    WEIR_ASSIGN_OR_RETURN(rate, r->Number(0));
  }
  if (node.Get("idle_timeout_ms") && !node.Get("topic")) {
    return node.Get("idle_timeout_ms")->Error("'idle_timeout_ms' applies to topic sources only");
  }
  if (node.Get("bounded") && !node.Get("topic") && !node.Get("jetstream")) {
    return node.Get("bounded")->Error("'bounded' applies to topic and jetstream sources only");
  }
  if (node.Get("rate") && node.Get("jetstream")) {
    return node.Get("rate")->Error("'rate' does not apply to jetstream sources");
  }

  if (auto file = node.Get("file")) {
    if (key.field.empty()) return node.Error("missing 'key' (the value field that keys records)");
    FileSourceOptions o;
    WEIR_ASSIGN_OR_RETURN(std::string path, file->String());
    o.path = Resolve(base_dir, path);
    o.key = key;
    o.timestamp_field = timestamp;
    o.dead_letter_topic = dead_letter;
    o.max_rate = rate;
    return app.FromFile(o);
  }
  if (auto topic = node.Get("topic")) {
    TopicSourceOptions o;
    WEIR_ASSIGN_OR_RETURN(o.topic, topic->String());
    o.key = key;
    o.timestamp_field = timestamp;
    o.dead_letter_topic = dead_letter;
    o.max_rate = rate;
    if (auto b = node.Get("bounded")) {
      WEIR_ASSIGN_OR_RETURN(o.bounded, b->Bool());
    }
    if (auto idle = node.Get("idle_timeout_ms")) {
      WEIR_ASSIGN_OR_RETURN(int64_t ms, idle->Int(0, INT64_MAX / 2));
      o.idle_timeout = std::chrono::milliseconds(ms);
    }
    return app.FromTopic(o);
  }
  if (auto js = node.Get("jetstream")) {
    WEIR_RETURN_IF_ERROR(js->OnlyKeys({"url", "stream", "subject", "durable", "max_deliver",
                                       "ack_wait_ms", "dead_letter_subject"}));
    JetStreamSourceOptions o;
    o.key = key;
    o.timestamp_field = timestamp;
    o.dead_letter_topic = dead_letter;
    WEIR_ASSIGN_OR_RETURN(ConfigNode stream, js->Require("stream", "the JetStream stream"));
    WEIR_ASSIGN_OR_RETURN(o.stream, stream.String());
    WEIR_ASSIGN_OR_RETURN(ConfigNode durable, js->Require("durable", "the consumer's name"));
    WEIR_ASSIGN_OR_RETURN(o.durable, durable.String());
    if (auto v = js->Get("url")) {
      WEIR_ASSIGN_OR_RETURN(o.url, v->String());
    }
    if (auto v = js->Get("subject")) {
      WEIR_ASSIGN_OR_RETURN(o.subject, v->String());
    }
    if (auto v = js->Get("dead_letter_subject")) {
      WEIR_ASSIGN_OR_RETURN(o.dead_letter_subject, v->String());
    }
    if (auto v = js->Get("max_deliver")) {
      WEIR_ASSIGN_OR_RETURN(int64_t n, v->Int(1, 1000));
      o.max_deliver = static_cast<int>(n);
    }
    if (auto v = js->Get("ack_wait_ms")) {
      WEIR_ASSIGN_OR_RETURN(int64_t ms, v->Int(1, INT64_MAX / 4));
      o.ack_wait = std::chrono::milliseconds(ms);
    }
    if (auto b = node.Get("bounded")) {
      WEIR_ASSIGN_OR_RETURN(o.bounded, b->Bool());
    }
    return app.FromJetStream(o);
  }
  if (node.Get("nexmark")) {
    if (!key.field.empty() || !timestamp.empty() || node.Get("rate")) {
      return node.Error(
          "a nexmark source stamps its events itself, with the null key, and paces itself "
          "(real_time); remove key/timestamp/rate");
    }
    return BuildNexmarkSource(app, *node.Get("nexmark"));
  }
  ConfigNode g = *node.Get("generator");
  if (!key.field.empty() || !timestamp.empty()) {
    return node.Error(
        "a generator keys its events by user and stamps them itself; remove key/timestamp");
  }
  GeneratorOptions o;
  o.max_rate = rate;
  if (!g.IsMap() && !g.node().IsNull()) return g.Expected("a map of generator options (or {})");
  if (g.IsMap()) {
    WEIR_RETURN_IF_ERROR(
        g.OnlyKeys({"partitions", "events", "users", "start_time_ms", "events_per_second", "seed",
                    "max_out_of_order_ms", "active_fraction"}));
    if (auto v = g.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(o.partitions, v->Int(1, 1024));
    }
    if (auto v = g.Get("events")) {
      WEIR_ASSIGN_OR_RETURN(o.events, v->Int(-1, INT64_MAX));
    }
    if (auto v = g.Get("users")) {
      WEIR_ASSIGN_OR_RETURN(o.users, v->Int(1, 1'000'000'000));
    }
    if (auto v = g.Get("start_time_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.start_time_ms, v->Int(0, INT64_MAX / 2));
    }
    if (auto v = g.Get("events_per_second")) {
      WEIR_ASSIGN_OR_RETURN(o.events_per_second, v->Number(1e-3));
    }
    if (auto v = g.Get("seed")) {
      WEIR_ASSIGN_OR_RETURN(int64_t seed, v->Int(0, INT64_MAX));
      o.seed = static_cast<uint64_t>(seed);
    }
    if (auto v = g.Get("active_fraction")) {
      WEIR_ASSIGN_OR_RETURN(o.active_fraction, v->Number(1e-9));
      if (o.active_fraction > 1)
        return v->Error("expected a fraction in (0, 1], found " + v->node().Scalar());
    }
    if (auto v = g.Get("max_out_of_order_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.max_out_of_order_ms, v->Int(0, INT64_MAX / 2));
    }
  }
  return app.FromGenerator(o);
}

Result<Stream> BuildStep(Stream stream, const ConfigNode& step, const std::string& base_dir) {
  if (step.IsMap() && step.Get("window")) return BuildWindowStep(stream, step, base_dir);
  if (!step.IsMap() || step.node().size() != 1) {
    return step.Expected("a map with one step (filter, select, group_by, aggregate, window)");
  }
  auto [kind, body] = step.Members().front();
  if (kind == "filter") {
    WEIR_ASSIGN_OR_RETURN(Condition condition, ParseCondition(body));
    return stream.Filter([condition](const Value& v) { return Matches(condition, v); });
  }
  if (kind == "select") {
    if (!body.IsSequence() || body.node().size() == 0)
      return body.Expected("a list of field names");
    std::vector<std::string> fields;
    for (const ConfigNode& item : body.Items()) {
      WEIR_ASSIGN_OR_RETURN(std::string f, item.String());
      fields.push_back(f);
    }
    return stream.Map([fields](const Value& v) {
      Value out = Value(Value::Object());
      for (const std::string& f : fields) {
        if (const Value* field = v.FindPath(f)) out.Set(f, *field);
      }
      return out;
    });
  }
  if (kind == "group_by") {
    if (body.IsScalar()) {
      WEIR_ASSIGN_OR_RETURN(std::string field, body.String());
      return stream.GroupBy(field);
    }
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"field", "type", "partitions"}));
    WEIR_ASSIGN_OR_RETURN(KeySpec key, ParseKeySpec(body));
    int64_t partitions = 0;
    if (auto p = body.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(partitions, p->Int(1, 10000));
    }
    return stream.GroupBy(key.field, key.type, static_cast<int32_t>(partitions));
  }
  if (kind == "aggregate") {
    WEIR_ASSIGN_OR_RETURN(auto aggregations, ParseNamedAggregations(body));
    return stream.Aggregate(std::move(aggregations));
  }
  return step.Error("unknown step '" + kind +
                    "' (expected filter, select, group_by, aggregate, window)");
}

Status BuildSink(Stream stream, const ConfigNode& sink, const std::string& base_dir) {
  WEIR_RETURN_IF_ERROR(sink.OnlyKeys({"file", "topic", "partitions", "stdout"}));
  int kinds =
      (sink.Get("file") ? 1 : 0) + (sink.Get("topic") ? 1 : 0) + (sink.Get("stdout") ? 1 : 0);
  if (kinds != 1) return sink.Error("expected exactly one of file, topic, stdout");
  if (sink.Get("partitions") && !sink.Get("topic")) {
    return sink.Get("partitions")->Error("'partitions' applies to topic sinks only");
  }
  if (auto file = sink.Get("file")) {
    WEIR_ASSIGN_OR_RETURN(std::string path, file->String());
    stream.ToFile(Resolve(base_dir, path));
  } else if (auto topic = sink.Get("topic")) {
    TopicSinkOptions o;
    WEIR_ASSIGN_OR_RETURN(o.topic, topic->String());
    if (auto p = sink.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(int64_t partitions, p->Int(1, 10000));
      o.partitions = static_cast<int32_t>(partitions);
    }
    stream.ToTopic(o);
  } else {
    WEIR_ASSIGN_OR_RETURN(bool on, sink.Get("stdout")->Bool());
    if (!on) return sink.Get("stdout")->Error("stdout: false writes nowhere; remove the sink");
    stream.ToStdout();
  }
  return Status::OK();
}

// Named streams (`streams: {name: {source, steps}}`), for the inputs of a join.
Result<std::map<std::string, Stream>> BuildNamedStreams(Application& app, const ConfigNode& node,
                                                        const std::string& base_dir) {
  if (!node.IsMap() || node.node().size() == 0) {
    return node.Expected("a map of named streams, each {source, steps}");
  }
  std::map<std::string, Stream> streams;
  for (const auto& [name, body] : node.Members()) {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"source", "steps"}));
    WEIR_ASSIGN_OR_RETURN(ConfigNode source, body.Require("source", "where its records come from"));
    WEIR_ASSIGN_OR_RETURN(Stream stream, BuildSource(app, source, base_dir));
    if (auto steps = body.Get("steps")) {
      if (!steps->IsSequence()) return steps->Expected("a list of steps");
      for (const ConfigNode& step : steps->Items()) {
        WEIR_ASSIGN_OR_RETURN(stream, BuildStep(stream, step, base_dir));
      }
    }
    streams.emplace(name, stream);
  }
  return streams;
}

// The stream named by `node` among `streams`; every stream must be used exactly once.
Result<Stream> UseStream(const ConfigNode& node, std::map<std::string, Stream>& streams,
                         std::set<std::string>& used) {
  WEIR_ASSIGN_OR_RETURN(std::string name, node.String());
  auto it = streams.find(name);
  if (it == streams.end()) {
    std::string known;
    for (const auto& [n, s] : streams) known += (known.empty() ? "" : ", ") + n;
    return node.Error("unknown stream '" + name + "' (streams: " + known + ")");
  }
  if (!used.insert(name).second) return node.Error("stream '" + name + "' is used twice");
  return it->second;
}

Result<std::chrono::milliseconds> Millis(const ConfigNode& node) {
  WEIR_ASSIGN_OR_RETURN(int64_t ms, node.Int(0, INT64_MAX / 4));
  return std::chrono::milliseconds(ms);
}

// `join: {parents: [...], mode: trace|time, ...}` (weir/join.h).
Result<Stream> BuildJoin(Application& app, const ConfigNode& node,
                         std::map<std::string, Stream>& streams, std::set<std::string>& used) {
  WEIR_RETURN_IF_ERROR(node.OnlyKeys({"parents", "mode", "trace_field", "time_field",
                                      "tolerance_ms", "timeout_ms", "quorum", "collect", "missing",
                                      "max_pending", "collect_cap", "max_deliver", "dedup_ms"}));
  WEIR_ASSIGN_OR_RETURN(ConfigNode parents, node.Require("parents", "the streams to join"));
  if (!parents.IsSequence()) return parents.Expected("a list of stream names");
  std::vector<std::pair<std::string, Stream>> inputs;
  for (const ConfigNode& p : parents.Items()) {
    WEIR_ASSIGN_OR_RETURN(Stream s, UseStream(p, streams, used));
    inputs.emplace_back(p.node().Scalar(), s);
  }
  JoinOptions o;
  if (auto m = node.Get("mode")) {
    WEIR_ASSIGN_OR_RETURN(std::string mode, m->String());
    if (mode != "trace" && mode != "time")
      return m->Error("expected trace or time, found '" + mode + "'");
    o.mode = mode == "trace" ? JoinMode::kTrace : JoinMode::kTime;
  }
  if (auto v = node.Get("trace_field")) {
    WEIR_ASSIGN_OR_RETURN(o.trace_field, v->String());
  }
  if (auto v = node.Get("time_field")) {
    WEIR_ASSIGN_OR_RETURN(o.time_field, v->String());
  }
  if (auto v = node.Get("tolerance_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.tolerance, Millis(*v));
  }
  if (auto v = node.Get("timeout_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.timeout, Millis(*v));
  }
  if (auto v = node.Get("dedup_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.dedup, Millis(*v));
  }
  if (auto v = node.Get("quorum")) {
    WEIR_ASSIGN_OR_RETURN(int64_t q, v->Int(1, 1000));
    o.quorum = static_cast<int>(q);
  }
  if (auto v = node.Get("max_pending")) {
    WEIR_ASSIGN_OR_RETURN(o.max_pending, v->Int(1, INT64_MAX));
  }
  if (auto v = node.Get("collect_cap")) {
    WEIR_ASSIGN_OR_RETURN(o.collect_cap, v->Int(1, INT64_MAX));
  }
  if (auto v = node.Get("max_deliver")) {
    WEIR_ASSIGN_OR_RETURN(int64_t d, v->Int(1, 1000));
    o.max_deliver = static_cast<int>(d);
  }
  if (auto v = node.Get("missing")) {
    WEIR_ASSIGN_OR_RETURN(std::string missing, v->String());
    if (missing != "drop" && missing != "error") {
      return v->Error("expected drop or error, found '" + missing + "'");
    }
    o.missing = missing == "drop" ? MissingPolicy::kDrop : MissingPolicy::kError;
  }
  if (auto c = node.Get("collect")) {
    if (!c->IsMap()) return c->Expected("a map of parent: window_ms");
    for (const auto& [parent, window] : c->Members()) {
      WEIR_ASSIGN_OR_RETURN(o.collect[parent], Millis(window));
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, s] : inputs) names.push_back(name);
  if (Status valid = join::Validate(o, names); !valid.ok()) {
    std::string_view message = valid.message();
    if (message.starts_with("join: ")) message.remove_prefix(6);  // the path says it already
    return node.Error(std::string(message));
  }
  return app.Join(std::move(inputs), std::move(o));
}

// `interval_join: {left, right, lower_ms, upper_ms, left_outer, grace_ms, late}` and
// `asof_join: {left, right, lookback_ms, grace_ms, late}` (weir/join.h).
Result<Stream> BuildTwoStreamJoin(const ConfigNode& node, bool interval,
                                  std::map<std::string, Stream>& streams,
                                  std::set<std::string>& used) {
  if (interval) {
    WEIR_RETURN_IF_ERROR(
        node.OnlyKeys({"left", "right", "lower_ms", "upper_ms", "left_outer", "grace_ms", "late"}));
  } else {
    WEIR_RETURN_IF_ERROR(node.OnlyKeys({"left", "right", "lookback_ms", "grace_ms", "late"}));
  }
  WEIR_ASSIGN_OR_RETURN(ConfigNode left_name, node.Require("left", "the left stream's name"));
  WEIR_ASSIGN_OR_RETURN(ConfigNode right_name, node.Require("right", "the right stream's name"));
  WEIR_ASSIGN_OR_RETURN(Stream left, UseStream(left_name, streams, used));
  WEIR_ASSIGN_OR_RETURN(Stream right, UseStream(right_name, streams, used));
  std::chrono::milliseconds grace{0};
  std::string late;
  if (auto v = node.Get("grace_ms")) {
    WEIR_ASSIGN_OR_RETURN(grace, Millis(*v));
  }
  if (auto v = node.Get("late")) {
    WEIR_ASSIGN_OR_RETURN(late, v->String());
  }
  if (!interval) {
    AsOfJoinOptions o{.grace = grace, .late_topic = late};
    if (auto v = node.Get("lookback_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.lookback, Millis(*v));
    }
    return left.AsOfJoin(right, o);
  }
  IntervalJoinOptions o{.grace = grace, .late_topic = late};
  if (auto v = node.Get("lower_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.lower, Millis(*v));
  }
  if (auto v = node.Get("upper_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.upper, Millis(*v));
  }
  if (auto v = node.Get("left_outer")) {
    WEIR_ASSIGN_OR_RETURN(o.left_outer, v->Bool());
  }
  return left.IntervalJoin(right, o);
}

// Where the pipeline's main stream starts: its source, or a join of named streams.
Result<Stream> BuildStart(Application& app, const ConfigNode& top, const std::string& base_dir) {
  static const char* kStarts[] = {"source", "join", "interval_join", "asof_join"};
  int starts = 0;
  for (const char* s : kStarts) starts += top.Get(s) ? 1 : 0;
  if (starts != 1) {
    return top.Error("expected exactly one of source, join, interval_join, asof_join");
  }
  std::optional<ConfigNode> streams_node = top.Get("streams");
  if (auto source = top.Get("source")) {
    if (streams_node) return streams_node->Error("'streams' are the inputs of a join; add one");
    return BuildSource(app, *source, base_dir);
  }
  if (!streams_node) return top.Error("missing 'streams' (the named inputs of the join)");
  WEIR_ASSIGN_OR_RETURN(auto streams, BuildNamedStreams(app, *streams_node, base_dir));
  std::set<std::string> used;
  Result<Stream> joined =
      top.Get("join") ? BuildJoin(app, *top.Get("join"), streams, used)
                      : BuildTwoStreamJoin(top.Get("interval_join") ? *top.Get("interval_join")
                                                                    : *top.Get("asof_join"),
                                           top.Get("interval_join").has_value(), streams, used);
  if (!joined.ok()) return joined;
  for (const auto& [name, body] : streams_node->Members()) {
    if (!used.count(name)) return body.Error("stream '" + name + "' is not used by the join");
  }
  return joined;
}

}  // namespace

Result<std::unique_ptr<Application>> LoadPipelineText(const std::string& text,
                                                      const std::string& file_name,
                                                      const std::string& base_dir,
                                                      const PipelineOverrides& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file_name + ": not valid YAML: " + e.msg + " (line " +
                                   std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ")");
  }
  ConfigNode top(root, "", &file_name);
  WEIR_RETURN_IF_ERROR(
      top.OnlyKeys({"name", "source", "streams", "join", "interval_join", "asof_join", "steps",
                    "sink", "sinks", "checkpoint", "workers", "partitions", "fsync"}));

  ApplicationOptions options;
  options.data_dir = overrides.data_dir;
  options.on_progress = overrides.on_progress;
  options.serve = overrides.serve;
  if (auto name = top.Get("name")) {
    WEIR_ASSIGN_OR_RETURN(options.name, name->String());
  } else {
    options.name = std::filesystem::path(file_name).stem().string();
  }
  if (auto checkpoint = top.Get("checkpoint")) {
    WEIR_RETURN_IF_ERROR(checkpoint->OnlyKeys({"interval_ms", "records"}));
    if (auto i = checkpoint->Get("interval_ms")) {
      WEIR_ASSIGN_OR_RETURN(int64_t ms, i->Int(1, 3'600'000));
      options.checkpoint_interval = std::chrono::milliseconds(ms);
    }
    if (auto r = checkpoint->Get("records")) {
      WEIR_ASSIGN_OR_RETURN(options.checkpoint_records, r->Int(1, INT64_MAX));
    }
  }
  if (auto w = top.Get("workers")) {
    WEIR_ASSIGN_OR_RETURN(int64_t workers, w->Int(1, 1024));
    options.workers = static_cast<int>(workers);
  }
  if (overrides.workers > 0) options.workers = overrides.workers;
  if (auto f = top.Get("fsync")) {
    WEIR_ASSIGN_OR_RETURN(options.fsync, f->String());
    if (options.fsync != "group" && options.fsync != "always" && options.fsync != "never") {
      return f->Error("expected group, always or never, found '" + options.fsync + "'");
    }
  }
  if (auto p = top.Get("partitions")) {
    WEIR_ASSIGN_OR_RETURN(int64_t partitions, p->Int(1, 10000));
    options.partitions = static_cast<int32_t>(partitions);
  }
  // What a restart must match: the source and the steps and sinks, not pacing or threads.
  // A join's tolerance, timeouts and caps may change too: its pending groups are held
  // deliveries, assembled again after a restart.
  Value definition = Value::MakeObject({{"source", Canonical(root["source"])},
                                        {"streams", Canonical(root["streams"])},
                                        {"join", Canonical(root["join"])},
                                        {"interval_join", Canonical(root["interval_join"])},
                                        {"asof_join", Canonical(root["asof_join"])},
                                        {"steps", Canonical(root["steps"])},
                                        {"sink", Canonical(root["sink"])},
                                        {"sinks", Canonical(root["sinks"])}});
  auto drop_members = [](Value* object, std::initializer_list<std::string_view> names) {
    if (object == nullptr || !object->is_object()) return;
    auto& members = object->as_object();
    members.erase(std::remove_if(members.begin(), members.end(),
                                 [&](const Value::Member& m) {
                                   return std::find(names.begin(), names.end(), m.first) !=
                                          names.end();
                                 }),
                  members.end());
  };
  drop_members(definition.Find("source"), {"rate"});
  if (Value* streams = definition.Find("streams"); streams && streams->is_object()) {
    for (auto& [name, stream] : streams->as_object()) drop_members(stream.Find("source"), {"rate"});
  }
  drop_members(definition.Find("join"), {"tolerance_ms", "timeout_ms", "quorum", "max_pending",
                                         "collect_cap", "max_deliver", "missing", "dedup_ms"});
  options.definition = definition.ToJson();

  auto app = std::make_unique<Application>(options);
  WEIR_ASSIGN_OR_RETURN(Stream stream, BuildStart(*app, top, base_dir));
  if (auto steps = top.Get("steps")) {
    if (!steps->IsSequence()) return steps->Expected("a list of steps");
    for (const ConfigNode& step : steps->Items()) {
      WEIR_ASSIGN_OR_RETURN(stream, BuildStep(stream, step, base_dir));
    }
  }
  std::optional<ConfigNode> sink = top.Get("sink");
  std::optional<ConfigNode> sinks = top.Get("sinks");
  if (sink && sinks) return sinks->Error("give either 'sink' or 'sinks', not both");
  if (!sink && !sinks) return top.Error("missing 'sink' (where results go: file, topic or stdout)");
  if (sink) {
    WEIR_RETURN_IF_ERROR(BuildSink(stream, *sink, base_dir));
  } else {
    if (!sinks->IsSequence() || sinks->node().size() == 0)
      return sinks->Expected("a list of sinks");
    for (const ConfigNode& s : sinks->Items()) WEIR_RETURN_IF_ERROR(BuildSink(stream, s, base_dir));
  }
  return app;
}

Result<std::unique_ptr<Application>> LoadPipelineFile(const std::string& path,
                                                      const PipelineOverrides& overrides) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status().WithContext("cannot read pipeline " + path);
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return LoadPipelineText(*text, path, base_dir, overrides);
}

}  // namespace weir::app
