#include "dataflow/late_output.h"

namespace weir::dataflow {

LateOutput::LateOutput(TaskContext& ctx, std::string_view topic, std::string_view file)
    : ctx_(ctx) {
  if (!topic.empty()) topic_ = &ctx.TopicOutput(topic);
  if (!file.empty()) file_ = &ctx.FileOutput(file);
}

void LateOutput::Write(const Record& event, std::string_view reason, int64_t late_by_ms) {
  ctx_.CountLate();
  if (topic_ == nullptr && file_ == nullptr) return;
  Record late{
      event.key,
      Value::MakeObject(
          {{"reason", Value(reason)}, {"late_by_ms", Value(late_by_ms)}, {"value", event.value}}),
      event.timestamp,
      {}};
  if (topic_ != nullptr) topic_->Write(late);
  if (file_ != nullptr) file_->Write(late);
}

}  // namespace weir::dataflow
