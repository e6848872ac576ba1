// The State a stateful step's function sees: the current key's named values in the step's
// store, under state keys MessageKeyPrefix(key) + StringField(name).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "state/key_encoding.h"
#include "state/task_store.h"
#include "weir/stream.h"

namespace weir::dataflow {

// A call's writes are staged and reach the store only with Commit(), so that a user function
// that throws part-way changes nothing (Discard()); Get sees the call's own staged writes.
class StepState {
 public:
  explicit StepState(state::KeyValueStore* store) : store_(store), state_(this) {}

  // Scopes the state to a record's key, with nothing staged. Returns the State to hand to user
  // code.
  State& ForKey(std::string_view key_bytes) {
    prefix_.clear();
    state::AppendMessageKey(prefix_, key_bytes);
    staged_.clear();
    return state_;
  }
  const Value* Get(std::string_view name) {
    if (StagedWrite* w = Staged(name)) return w->value ? &*w->value : nullptr;
    auto v = store_->Get(StateKey(name));
    if (!v.ok()) {
      if (error_.ok()) error_ = v.status();
      return nullptr;
    }
    return *v;
  }
  void Set(std::string_view name, Value value) { Stage(name, std::move(value)); }
  void Delete(std::string_view name) { Stage(name, std::nullopt); }
  // Applies the staged writes to the store.
  void Commit() {
    for (StagedWrite& w : staged_) {
      if (w.value) {
        store_->Put(StateKey(w.name), std::move(*w.value));
      } else {
        store_->Delete(StateKey(w.name));
      }
    }
    staged_.clear();
  }
  void Discard() { staged_.clear(); }
  // The first storage error a user function hit (it cannot return one); the task checks it.
  Status TakeError() { return std::exchange(error_, Status::OK()); }

 private:
  struct StagedWrite {
    std::string name;
    std::optional<Value> value;  // nullopt: deleted
  };
  StagedWrite* Staged(std::string_view name) {
    for (StagedWrite& w : staged_) {
      if (w.name == name) return &w;
    }
    return nullptr;
  }
  void Stage(std::string_view name, std::optional<Value> value) {
    if (StagedWrite* w = Staged(name)) {
      w->value = std::move(value);
    } else {
      staged_.push_back({std::string(name), std::move(value)});
    }
  }
  const std::string& StateKey(std::string_view name) {
    key_ = prefix_;
    state::AppendStringField(key_, name);
    return key_;
  }
  state::KeyValueStore* store_;
  State state_;
  std::string prefix_;
  std::string key_;
  std::vector<StagedWrite> staged_;
  Status error_;
};

}  // namespace weir::dataflow
