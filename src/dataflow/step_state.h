// The State a stateful step's function sees: the current key's named values in the step's
// store, under state keys MessageKeyPrefix(key) + StringField(name).
#pragma once

#include <string>
#include <string_view>

#include "state/key_encoding.h"
#include "state/task_store.h"
#include "weir/stream.h"

namespace weir::dataflow {

class StepState {
 public:
  explicit StepState(state::KeyValueStore* store) : store_(store), state_(this) {}

  // Scopes the state to a record's key. Returns the State to hand to user code.
  State& ForKey(std::string_view key_bytes) {
    prefix_.clear();
    state::AppendMessageKey(prefix_, key_bytes);
    return state_;
  }
  const Value* Get(std::string_view name) {
    auto v = store_->Get(StateKey(name));
    if (!v.ok()) {
      if (error_.ok()) error_ = v.status();
      return nullptr;
    }
    return *v;
  }
  void Set(std::string_view name, Value value) { store_->Put(StateKey(name), std::move(value)); }
  void Delete(std::string_view name) { store_->Delete(StateKey(name)); }
  // The first storage error a user function hit (it cannot return one); the task checks it.
  Status TakeError() { return std::exchange(error_, Status::OK()); }

 private:
  const std::string& StateKey(std::string_view name) {
    key_ = prefix_;
    state::AppendStringField(key_, name);
    return key_;
  }
  state::KeyValueStore* store_;
  State state_;
  std::string prefix_;
  std::string key_;
  Status error_;
};

}  // namespace weir::dataflow
