#include "dataflow/watermark_marks.h"

#include <string>

#include "core/parse.h"

namespace weir::dataflow {

void AppendWatermarkMark(log::RecordBatchBuilder& batch, std::string_view producer,
                         Watermark watermark) {
  const Header header{std::string(kWatermarkHeader), std::to_string(watermark.value())};
  batch.AddRaw(EventTime(watermark.value()), KeySerde::kString, producer, "", {&header, 1});
}

Result<std::optional<WatermarkMark>> DecodeWatermarkMark(const log::StoredRecord& stored) {
  // Ordinary records of a repartition topic have no headers unless their source's had some.
  if (stored.header_count != 1) return std::optional<WatermarkMark>();
  std::string_view name, text;
  WEIR_RETURN_IF_ERROR(stored.VisitHeaders([&](std::string_view n, std::string_view v) {
    name = n;
    text = v;
  }));
  if (name != kWatermarkHeader) return std::optional<WatermarkMark>();
  auto value = ParseInt64(text, "watermark");
  if (!value.ok() || stored.key_serde != KeySerde::kString || stored.key.empty() ||
      !stored.value.empty()) {
    return Status::Corruption("malformed watermark mark (header '" + std::string(text) + "')");
  }
  return std::optional<WatermarkMark>(WatermarkMark{stored.key, Watermark(*value)});
}

}  // namespace weir::dataflow
