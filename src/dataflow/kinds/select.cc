// The select kind: each record's value becomes an object of some of its fields (Stream::Select;
// YAML `select: [user, address.city]`): the fields present, in the order listed, each named by
// its path as written ("address.city"); a field the value lacks is left out, and a value that is
// not an object becomes {}.
//
// Without copying: a record the step may change (Process) has its fields swapped with the
// members of an object the step keeps, named once, and that object goes down as the value; the
// record (usually its source's slot, which the source rewrites in place) keeps its shape and
// the memory of the values swapped in. A copy is made when the fields are not all there or
// overlap (one path inside another, or listed twice), and for a fan-out's shared record.
//
// When every field is a member's name (no path), the fields are looked for where they were in
// the last record whose fields were all found, if the record's first members have that record's
// names (FindAllMembers): one comparison a member, not a search a field.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

// Whether no field is another or lies inside another ("a" and "a.b"): then the fields' values
// are distinct values of the record, which can be swapped out one by one.
bool FieldsAreDisjoint(const std::vector<std::string>& fields) {
  auto inside = [](std::string_view outer, std::string_view inner) {
    return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '.';
  };
  for (size_t i = 0; i < fields.size(); ++i) {
    for (size_t j = 0; j < fields.size(); ++j) {
      if (i != j && (fields[i] == fields[j] || inside(fields[i], fields[j]))) return false;
    }
  }
  return true;
}

class SelectOperator : public Operator {
 public:
  explicit SelectOperator(std::vector<std::string> fields)
      : fields_(std::move(fields)),
        disjoint_(FieldsAreDisjoint(fields_)),
        found_(fields_.size(), nullptr),
        places_(fields_.size(), 0) {
    for (const std::string& f : fields_) {
      dotted_.push_back(f.find('.') != std::string::npos);
      any_dotted_ = any_dotted_ || dotted_.back();
    }
  }

  void Process(Record&& r) override {
    if (!disjoint_ || !FindAll(r.value)) return ForwardReplacingValue(r, Copy(r.value));
    {
      Value::ObjectWriter selected(selected_);
      for (size_t i = 0; i < fields_.size(); ++i) swap(selected.Add(fields_[i]), *found_[i]);
    }
    swap(r.value, selected_);
    Forward(std::move(r));
    // The record gets its object back, holding in the selected fields' places the values of the
    // record before (or what the steps after this one left of them): values of the same types,
    // whose memory the source's next write into the slot reuses.
    swap(r.value, selected_);
  }

  void ProcessShared(const Record& r) override {
    Forward(Record{r.key, Copy(r.value), r.timestamp, r.headers});
  }

 private:
  // Points found_ at each field of `value`; false if one is missing.
  bool FindAll(Value& value) {
    if (!any_dotted_ && value.is_object()) return FindAllMembers(value.as_object());
    for (size_t i = 0; i < fields_.size(); ++i) {
      // `value` is not const: only FindPath's signature is.
      found_[i] =
          dotted_[i] ? const_cast<Value*>(value.FindPath(fields_[i])) : value.Find(fields_[i]);
      if (found_[i] == nullptr) return false;
    }
    return true;
  }

  // FindAll for fields that are all members' names. An object that begins with the names of the
  // last one whose fields were all found (shape_: its members' up to the last field's; a search
  // that fails forgets it) has its fields in the same places: found by comparing those names, not
  // by a search per field. The first member of a name is the one found either way (equal names
  // before a place, equal first match). A source's records, one after another, mostly have one
  // shape; records of alternating shapes pay the comparison, the search and a copy of the names.
  bool FindAllMembers(Value::Object& members) {
    if (shape_size_ > 0 && shape_size_ <= members.size()) {
      size_t j = 0;
      while (j < shape_size_ && internal::SameName(members[j].first, shape_[j])) ++j;
      if (j == shape_size_) {
        for (size_t i = 0; i < fields_.size(); ++i) found_[i] = &members[places_[i]].second;
        return true;
      }
    }
    shape_size_ = 0;  // until every field is found again
    size_t last = 0;
    for (size_t i = 0; i < fields_.size(); ++i) {
      size_t place = 0;
      while (place < members.size() && !internal::SameName(members[place].first, fields_[i])) {
        ++place;
      }
      if (place == members.size()) return false;
      found_[i] = &members[place].second;
      places_[i] = place;
      last = std::max(last, place);
    }
    if (shape_.size() <= last) shape_.resize(last + 1);
    for (size_t j = 0; j <= last; ++j) shape_[j].assign(members[j].first);
    shape_size_ = last + 1;  // last: shape_ is whole even if a copy above threw
    return true;
  }

  Value Copy(const Value& value) const {
    Value out = Value(Value::Object());
    for (const std::string& f : fields_) {
      if (const Value* field = value.FindPath(f)) out.Set(f, *field);
    }
    return out;
  }

  const std::vector<std::string> fields_;
  const bool disjoint_;
  std::vector<bool> dotted_;  // per field, whether it is a path (else a member's name)
  bool any_dotted_ = false;
  std::vector<Value*> found_;  // per field, where it is in the record being processed
  // FindAllMembers' last shape: the names of an object's first shape_size_ members (0: none),
  // and each field's place among them. The names' memory is kept from shape to shape.
  std::vector<std::string> shape_;
  size_t shape_size_ = 0;
  std::vector<size_t> places_;
  Value selected_;  // the selection's members, named once, between records
};

class SelectStep : public StepDefinition {
 public:
  explicit SelectStep(std::vector<std::string> fields) : fields_(std::move(fields)) {}
  // "map", as before the step had a kind of its own: a checkpoint's fingerprint names it so.
  std::string_view kind() const override { return "map"; }
  Status Validate() const override {
    return fields_.empty() ? Status::InvalidArgument("Select needs at least one field")
                           : Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    Value::Array described(fields_.begin(), fields_.end());
    fingerprint.Fixed("select", Value(std::move(described)));
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext&) const override {
    return std::unique_ptr<Operator>(new SelectOperator(fields_));
  }

 private:
  std::vector<std::string> fields_;
};

// select: [user, page]
Result<std::shared_ptr<const StepDefinition>> ParseSelect(const StepYaml& yaml) {
  if (!yaml.body.IsSequence() || yaml.body.size() == 0) {
    return yaml.body.Expected("a list of field names");
  }
  std::vector<std::string> fields;
  for (const ConfigNode& item : yaml.body.Items()) {
    WEIR_ASSIGN_OR_RETURN(std::string f, item.String());
    fields.push_back(std::move(f));
  }
  return std::make_shared<SelectStep>(std::move(fields));
}

}  // namespace

void RegisterSelect(KindRegistry& kinds) { kinds.Add(StepKind{"select", {}, ParseSelect}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::Select(std::vector<std::string> fields, std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::SelectStep>(std::move(fields)), std::move(name));
}

}  // namespace weir
