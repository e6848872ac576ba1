// The group-by and select-key kinds: re-key every record, by a field of its value
// (Stream::GroupBy; YAML `group_by: FIELD` or `group_by: {field, type, partitions}`) or by a
// function of the record (Stream::SelectKey), and write it to the step's repartition topic,
// which the sub-topology after it reads. A missing or null field, one that cannot be a key of
// the declared type, or a function that throws, sends the record to the dead-letter topic.
#include <functional>
#include <optional>

#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

// Sets the record's new key into `key`, or says why it has none (the record is then a dead
// letter) and leaves `key` as it was. `key` is the record's own: it is written in place.
using KeyOf = std::function<Status(const Record&, Key& key)>;

class RepartitionOperator : public Operator {
 public:
  RepartitionOperator(KeyOf key_of, bool user_function, const StepContext& context,
                      TopicWriter& writer)
      : key_of_(std::move(key_of)),
        user_function_(user_function),
        ctx_(context.task),
        user_(context.task, context.step_name),
        writer_(writer) {}
  void Process(Record&& r) override {
    Status keyed;
    if (user_function_) {
      if (!user_.Call(r, [&] { keyed = key_of_(r, r.key); })) return;
    } else {
      keyed = key_of_(r, r.key);
    }
    if (!keyed.ok()) return ctx_.DeadLetter(keyed.message(), r);
    writer_.Write(r);
  }

 private:
  KeyOf key_of_;
  bool user_function_;
  TaskContext& ctx_;
  UserFunctionCaller user_;
  TopicWriter& writer_;
};

// The key a field makes with no declared type: its own (string or integer), else its JSON text.
Status AssignKeyOfOwnType(const Value& field, std::string_view field_name, Key& key) {
  if (field.is_null()) {
    return Status::InvalidArgument("group_by field '" + std::string(field_name) +
                                   "' is null, which cannot be a key");
  }
  const KeySerde own = field.is_string() ? KeySerde::kString
                       : field.is_int()  ? KeySerde::kInt
                                         : KeySerde::kJson;
  return key.AssignField(field, own, field_name);
}

// GroupBy (a field, with or without a declared type) and SelectKey (a function).
class RepartitionStep : public StepDefinition {
 public:
  RepartitionStep(std::string field, std::optional<KeySerde> type, int32_t partitions)
      : kind_("group-by"), field_(std::move(field)), type_(type), partitions_(partitions) {}
  RepartitionStep(std::function<Key(const Record&)> select_key, int32_t partitions)
      : kind_("select-key"), select_key_(std::move(select_key)), partitions_(partitions) {}
  std::string_view kind() const override { return kind_; }
  Status Validate() const override {
    if (kind_ == "select-key") {
      if (!select_key_) return Status::InvalidArgument("SelectKey needs a function");
    } else if (field_.empty()) {
      return Status::InvalidArgument("GroupBy needs a field name");
    } else if (type_ == KeySerde::kNull) {
      return Status::InvalidArgument("GroupBy cannot re-key to the null key");
    }
    return CheckPartitions(partitions_, 0,
                           kind_ == "select-key" ? "SelectKey partitions" : "GroupBy partitions");
  }
  void Describe(Fingerprint& fingerprint) const override {
    // The repartition topic's partitions decide which task holds a key's state downstream.
    if (kind_ == "group-by") {
      fingerprint.Fixed("field", field_);
      if (type_) {
        fingerprint.Fixed("type", *type_);
      } else {
        fingerprint.Fixed("type", "own");
      }
    }
    fingerprint.Fixed("partitions", partitions_);
  }
  bool repartitions() const override { return true; }
  int32_t repartition_partitions() const override { return partitions_; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    TopicWriter& writer =
        context.task.TopicOutput(RepartitionTopicName(context.application, context.step_name));
    if (select_key_) {
      return std::unique_ptr<Operator>(new RepartitionOperator(
          [fn = select_key_](const Record& r, Key& key) {
            key = fn(r);
            return Status::OK();
          },
          true, context, writer));
    }
    KeyOf key_of = [field = field_, type = type_](const Record& r, Key& key) {
      const Value* value = r.value.FindPath(field);
      if (value == nullptr) {
        return Status::InvalidArgument("group_by field '" + field + "' is missing");
      }
      return type ? key.AssignField(*value, *type, field) : AssignKeyOfOwnType(*value, field, key);
    };
    return std::unique_ptr<Operator>(
        new RepartitionOperator(std::move(key_of), false, context, writer));
  }

 private:
  std::string_view kind_;
  std::string field_;
  std::optional<KeySerde> type_;
  std::function<Key(const Record&)> select_key_;
  int32_t partitions_;
};

Result<std::shared_ptr<const StepDefinition>> ParseGroupBy(const StepYaml& yaml) {
  const ConfigNode& body = yaml.body;
  if (body.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(std::string field, body.String());
    return std::make_shared<RepartitionStep>(std::move(field), std::nullopt, 0);
  }
  WEIR_RETURN_IF_ERROR(body.OnlyKeys({"field", "type", "partitions"}));
  WEIR_ASSIGN_OR_RETURN(KeySpec key, ParseKeySpec(body));
  std::optional<KeySerde> type;
  if (body.Get("type")) type = key.type;
  int64_t partitions = 0;
  if (auto p = body.Get("partitions")) {
    WEIR_ASSIGN_OR_RETURN(partitions, p->Int(1, kMaxPartitions));
  }
  return std::make_shared<RepartitionStep>(key.field, type, static_cast<int32_t>(partitions));
}

}  // namespace

void RegisterGroupBy(KindRegistry& kinds) { kinds.Add(StepKind{"group_by", {}, ParseGroupBy}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::GroupBy(std::string field, std::optional<KeySerde> type, int32_t partitions) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::RepartitionStep>(std::move(field), type, partitions));
}

Stream Stream::SelectKey(std::function<Key(const Record&)> fn, std::string name,
                         int32_t partitions) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::RepartitionStep>(std::move(fn), partitions),
      std::move(name));
}

}  // namespace weir
