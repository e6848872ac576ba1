// Watermark marks: how a task that writes a repartition topic tells the tasks reading it how far
// its event time has come (docs/architecture.md §2).
//
// A mark is a record of the topic, written into every partition by each producing task at the
// end of every batch that moved its watermark (and the final +infinity at the end of a bounded
// input): key = the producing task's id ("<sub-topology>_<partition>", a string key), empty
// value, timestamp = the watermark, and one header `weir.watermark` holding the watermark in
// decimal. Being in the log, marks are ordered with the records around them, survive crashes
// with the checkpoint that published them, and replay exactly (idle marks included).
//
// A reader never hands a mark to a step: the topic source takes it out of the stream and gives it
// to the task at its place between the records (SourceBatch::marks). The reading task's watermark
// for that input is the minimum over its producers' last marks; a producer not heard from yet
// holds it at Watermark::Min().
#pragma once

#include <limits>
#include <optional>
#include <string_view>

#include "log/record_format.h"
#include "weir/status.h"
#include "weir/types.h"

namespace weir::dataflow {

inline constexpr std::string_view kWatermarkHeader = "weir.watermark";

// The mark of a producer that has been idle for its source's idle timeout without ever reading
// an event (it has no event time to follow the wall clock from): readers leave it out of the
// minimum until it sends a real mark, as Flink leaves out an idle channel. A reader whose every
// producer is idle keeps the watermark it has.
inline constexpr Watermark kIdleMark = Watermark(std::numeric_limits<int64_t>::min() + 1);

// Encodes producer's mark at `watermark` into `batch`.
void AppendWatermarkMark(log::RecordBatchBuilder& batch, std::string_view producer,
                         Watermark watermark);

struct WatermarkMark {
  std::string_view producer;  // views the stored record's key
  Watermark watermark;
};

// The mark `stored` is, or nullopt if it is an ordinary record. kCorruption for a record that
// carries the header but is not a well-formed mark.
Result<std::optional<WatermarkMark>> DecodeWatermarkMark(const log::StoredRecord& stored);

}  // namespace weir::dataflow
