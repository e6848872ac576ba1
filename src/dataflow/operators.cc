#include "dataflow/operators.h"

#include <utility>

namespace weir::dataflow {

void Operator::OnWatermark(Watermark watermark) {
  for (Operator* child : children_) child->OnWatermark(watermark);
}

void Operator::CollectPrefetching(std::vector<Operator*>& out) {
  for (Operator* child : children_) child->CollectPrefetching(out);
}

void Operator::OnInputEnd() {
  for (Operator* child : children_) child->OnInputEnd();
}

void Operator::OnBatchEnd() {
  for (Operator* child : children_) child->OnBatchEnd();
}

namespace {
class InputPort : public Operator {
 public:
  InputPort(MultiInputOperator& step, int input) : step_(step), input_(input) { AddChild(&step); }
  void Process(Record&& record) override { step_.ProcessInput(input_, std::move(record)); }
  void OnWatermark(Watermark watermark) override {
    if (input_ == 0) step_.OnWatermark(watermark);
  }
  void OnBatchEnd() override {
    if (input_ == 0) step_.OnBatchEnd();
  }
  void CollectPrefetching(std::vector<Operator*>&) override {}
  void OnInputEnd() override { step_.OnInputEnded(input_); }

 private:
  MultiInputOperator& step_;
  int input_;
};
}  // namespace

std::unique_ptr<Operator> MakeInputPort(MultiInputOperator& step, int input) {
  return std::make_unique<InputPort>(step, input);
}

Status Operator::TakeError() {
  Status s = std::exchange(error_, Status::OK());
  for (Operator* child : children_) {
    Status c = child->TakeError();
    if (s.ok()) s = std::move(c);
  }
  return s;
}

void Operator::ForwardReplacingValue(Record& record, Value result) {
  ForwardReplacingValueKeepingResult(record, result);
}

void Operator::ForwardReplacingValueKeepingResult(Record& record, Value& result) {
  Value input = std::exchange(record.value, std::move(result));
  Forward(std::move(record));
  result = std::exchange(record.value, std::move(input));
}

void Operator::Forward(Record&& record) {
  if (unchanged_ != nullptr) unchanged_->value = nullptr;  // this step may have changed it
  ForwardUnchanged(std::move(record));
}

void Operator::ForwardUnchanged(Record&& record) {
  if (children_.empty()) return;
  for (size_t i = 0; i + 1 < children_.size(); ++i) children_[i]->ProcessShared(record);
  children_.back()->Process(std::move(record));
}

}  // namespace weir::dataflow
