// What a task keeps in its store's meta beside its state (task.h), as versioned binary values
// with named fields: the checkpoint it is at, its watermark, each input's watermark, the
// deliveries it holds or read without merging them yet, and the watermark marks of those.
//
// Every value starts with two bytes, the format version (kTaskMetaVersion) and the kind of value
// (so a value stored under the wrong name is refused too), then its fields as LEB128 varints
// (signed ones zigzagged). A decoder takes outside bytes: an unknown version, another kind, a
// truncated or overlong value or a field out of its range is a kCorruption Status naming what
// is wrong, never a crash. Checks that need the task (an input index within its inputs) are the
// task's. Source positions are the sources' own strings and are not encoded here.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weir/status.h"
#include "weir/types.h"

namespace weir::app {

inline constexpr uint8_t kTaskMetaVersion = 1;

// Where a saved delivery stood when the checkpoint was taken.
enum class DeliveryState : uint8_t {
  // Read from its input, but the event-time merge had not reached it: never delivered. A
  // restart puts it back at the head of its input (the input's saved position is past it).
  kReadNotMerged = 1,
  // Delivered and held by a step, or nak'ed and waiting to be delivered again: a restart
  // delivers it again first.
  kHeld = 2,
};

// A delivery saved with a checkpoint, to be read again from its input after a restart.
struct SavedDelivery {
  int32_t input = 0;         // the task's input it came from
  int64_t position = 0;      // its position there (Source::Reread)
  int64_t reread_token = 0;  // the source's token to read it again
  DeliveryState state = DeliveryState::kHeld;
  int32_t deliveries = 0;  // times delivered so far: 0 when kReadNotMerged, else at least 1
  friend bool operator==(const SavedDelivery&, const SavedDelivery&) = default;
};

// A watermark mark of a repartition input not applied yet (it sits among records read but not
// merged), saved so that a restart puts it back between them.
struct SavedMark {
  int32_t input = 0;
  int64_t position = 0;  // the mark's position in the input's partition
  int32_t producer = 0;  // index into SubTopologyInput::producers
  Watermark watermark;
  friend bool operator==(const SavedMark&, const SavedMark&) = default;
};

// One input's watermark: a source input's own, or a repartition input's per producer.
struct SavedInputWatermark {
  bool from_repartition = false;
  Watermark watermark = Watermark::Min();  // source inputs
  std::vector<Watermark> producer_marks;   // repartition inputs, per SubTopologyInput::producers
  friend bool operator==(const SavedInputWatermark&, const SavedInputWatermark&) = default;
};

std::string EncodeCheckpointNumber(int64_t checkpoint);
Result<int64_t> DecodeCheckpointNumber(std::string_view bytes);

std::string EncodeTaskWatermark(Watermark watermark);
Result<Watermark> DecodeTaskWatermark(std::string_view bytes);

std::string EncodeInputWatermarks(std::span<const SavedInputWatermark> inputs);
Result<std::vector<SavedInputWatermark>> DecodeInputWatermarks(std::string_view bytes);

// In the order given (the task sorts them, so a restart redelivers in one order).
std::string EncodeSavedDeliveries(std::span<const SavedDelivery> deliveries);
Result<std::vector<SavedDelivery>> DecodeSavedDeliveries(std::string_view bytes);

std::string EncodePendingMarks(std::span<const SavedMark> marks);
Result<std::vector<SavedMark>> DecodePendingMarks(std::string_view bytes);

}  // namespace weir::app
