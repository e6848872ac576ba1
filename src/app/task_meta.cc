#include "app/task_meta.h"

#include <limits>

#include "core/coding.h"

namespace weir::app {
namespace {

// The second byte of every value says which value it is; the name is for errors.
struct MetaKind {
  char tag;
  const char* name;
};
constexpr MetaKind kCheckpointKind{'C', "checkpoint"};
constexpr MetaKind kTaskWatermarkKind{'W', "watermark"};
constexpr MetaKind kInputWatermarksKind{'I', "input watermarks"};
constexpr MetaKind kDeliveriesKind{'D', "held deliveries"};
constexpr MetaKind kPendingMarksKind{'M', "pending marks"};

// Input watermark entries: which kind of input they describe.
enum class InputKind : uint8_t { kSource = 1, kRepartition = 2 };

std::string Begin(MetaKind kind) {
  std::string out;
  out.push_back(static_cast<char>(kTaskMetaVersion));
  out.push_back(kind.tag);
  return out;
}

void PutSigned(std::string& out, int64_t v) { coding::PutVarint64(out, coding::ZigZag(v)); }

// Reads one value's fields in order; every failure names the value and the field.
class MetaReader {
 public:
  MetaReader(std::string_view bytes, MetaKind kind) : in_(bytes), kind_(kind) {}

  Status Header() {
    if (in_.size() < 2) return Bad("truncated header");
    const auto version = static_cast<uint8_t>(in_[0]);
    if (version != kTaskMetaVersion) {
      return Bad("unknown format version " + std::to_string(version) + " (this build reads " +
                 std::to_string(kTaskMetaVersion) + "; state written by another version of " +
                 "weir cannot be resumed)");
    }
    if (in_[1] != kind_.tag) {
      return Bad("the value stored is of another kind (tag " +
                 std::to_string(static_cast<uint8_t>(in_[1])) + ")");
    }
    in_.remove_prefix(2);
    return Status::OK();
  }

  Status Signed(std::string_view field, int64_t& v) {
    uint64_t raw;
    if (!coding::GetVarint64(in_, raw)) return Bad("truncated or malformed " + std::string(field));
    v = coding::UnZigZag(raw);
    return Status::OK();
  }

  // A field that must lie in [low, INT32_MAX].
  Status Int32(std::string_view field, int32_t low, int32_t& v) {
    int64_t wide;
    WEIR_RETURN_IF_ERROR(Signed(field, wide));
    if (wide < low || wide > std::numeric_limits<int32_t>::max()) {
      return Bad(std::string(field) + " " + std::to_string(wide) + " is out of range");
    }
    v = static_cast<int32_t>(wide);
    return Status::OK();
  }

  Status Byte(std::string_view field, uint8_t& b) {
    if (in_.empty()) return Bad("truncated " + std::string(field));
    b = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return Status::OK();
  }

  // A count of entries of at least `min_entry_bytes` each: never more than the bytes left hold.
  Status Count(std::string_view what, size_t min_entry_bytes, size_t& n) {
    uint64_t raw;
    if (!coding::GetVarint64(in_, raw)) return Bad("truncated count of " + std::string(what));
    if (raw > in_.size() / min_entry_bytes) {
      return Bad(std::to_string(raw) + " " + std::string(what) + " announced, " +
                 std::to_string(in_.size()) + " bytes left");
    }
    n = static_cast<size_t>(raw);
    return Status::OK();
  }

  Status End() {
    if (!in_.empty()) return Bad(std::to_string(in_.size()) + " unexpected bytes at the end");
    return Status::OK();
  }

  Status Bad(const std::string& what) const {
    return Status::Corruption("task meta '" + std::string(kind_.name) + "': " + what);
  }

 private:
  std::string_view in_;
  MetaKind kind_;
};

Result<int64_t> DecodeSingle(std::string_view bytes, MetaKind kind, std::string_view field) {
  MetaReader in(bytes, kind);
  WEIR_RETURN_IF_ERROR(in.Header());
  int64_t v;
  WEIR_RETURN_IF_ERROR(in.Signed(field, v));
  WEIR_RETURN_IF_ERROR(in.End());
  return v;
}

std::string EncodeSingle(MetaKind kind, int64_t v) {
  std::string out = Begin(kind);
  PutSigned(out, v);
  return out;
}

// A value that is a list: its count, then each entry as `write` puts it.
template <typename Entry, typename WriteEntry>
std::string EncodeList(MetaKind kind, std::span<const Entry> entries, WriteEntry write) {
  std::string out = Begin(kind);
  coding::PutVarint64(out, entries.size());
  for (const Entry& entry : entries) write(out, entry);
  return out;
}

// Reads a list written by EncodeList; `read` reads one entry (at least `min_entry_bytes` long).
template <typename Entry, typename ReadEntry>
Result<std::vector<Entry>> DecodeList(std::string_view bytes, MetaKind kind, std::string_view what,
                                      size_t min_entry_bytes, ReadEntry read) {
  MetaReader in(bytes, kind);
  WEIR_RETURN_IF_ERROR(in.Header());
  size_t n;
  WEIR_RETURN_IF_ERROR(in.Count(what, min_entry_bytes, n));
  std::vector<Entry> entries(n);
  for (Entry& entry : entries) WEIR_RETURN_IF_ERROR(read(in, entry));
  WEIR_RETURN_IF_ERROR(in.End());
  return entries;
}

}  // namespace

std::string EncodeCheckpointNumber(int64_t checkpoint) {
  return EncodeSingle(kCheckpointKind, checkpoint);
}

Result<int64_t> DecodeCheckpointNumber(std::string_view bytes) {
  return DecodeSingle(bytes, kCheckpointKind, "checkpoint");
}

std::string EncodeTaskWatermark(Watermark watermark) {
  return EncodeSingle(kTaskWatermarkKind, watermark.value());
}

Result<Watermark> DecodeTaskWatermark(std::string_view bytes) {
  WEIR_ASSIGN_OR_RETURN(int64_t v, DecodeSingle(bytes, kTaskWatermarkKind, "watermark"));
  return Watermark(v);
}

std::string EncodeInputWatermarks(std::span<const SavedInputWatermark> inputs) {
  return EncodeList(kInputWatermarksKind, inputs,
                    [](std::string& out, const SavedInputWatermark& input) {
                      if (!input.from_repartition) {
                        out.push_back(static_cast<char>(InputKind::kSource));
                        PutSigned(out, input.watermark.value());
                        return;
                      }
                      out.push_back(static_cast<char>(InputKind::kRepartition));
                      coding::PutVarint64(out, input.producer_marks.size());
                      for (Watermark mark : input.producer_marks) PutSigned(out, mark.value());
                    });
}

Result<std::vector<SavedInputWatermark>> DecodeInputWatermarks(std::string_view bytes) {
  return DecodeList<SavedInputWatermark>(
      bytes, kInputWatermarksKind, "inputs", 2,
      [](MetaReader& in, SavedInputWatermark& input) -> Status {
        uint8_t kind;
        WEIR_RETURN_IF_ERROR(in.Byte("input kind", kind));
        int64_t v;
        if (kind == static_cast<uint8_t>(InputKind::kSource)) {
          WEIR_RETURN_IF_ERROR(in.Signed("input watermark", v));
          input.watermark = Watermark(v);
          return Status::OK();
        }
        if (kind != static_cast<uint8_t>(InputKind::kRepartition)) {
          return in.Bad("unknown input kind " + std::to_string(kind));
        }
        input.from_repartition = true;
        size_t producers;
        WEIR_RETURN_IF_ERROR(in.Count("producer marks", 1, producers));
        input.producer_marks.reserve(producers);
        for (size_t p = 0; p < producers; ++p) {
          WEIR_RETURN_IF_ERROR(in.Signed("producer mark", v));
          input.producer_marks.emplace_back(v);
        }
        return Status::OK();
      });
}

std::string EncodeSavedDeliveries(std::span<const SavedDelivery> deliveries) {
  return EncodeList(kDeliveriesKind, deliveries, [](std::string& out, const SavedDelivery& d) {
    PutSigned(out, d.input);
    PutSigned(out, d.position);
    PutSigned(out, d.reread_token);
    out.push_back(static_cast<char>(d.state));
    PutSigned(out, d.deliveries);
  });
}

Result<std::vector<SavedDelivery>> DecodeSavedDeliveries(std::string_view bytes) {
  return DecodeList<SavedDelivery>(
      bytes, kDeliveriesKind, "deliveries", 5, [](MetaReader& in, SavedDelivery& d) {
        WEIR_RETURN_IF_ERROR(in.Int32("delivery input", 0, d.input));
        WEIR_RETURN_IF_ERROR(in.Signed("delivery position", d.position));
        WEIR_RETURN_IF_ERROR(in.Signed("delivery reread token", d.reread_token));
        uint8_t state;
        WEIR_RETURN_IF_ERROR(in.Byte("delivery state", state));
        WEIR_RETURN_IF_ERROR(in.Int32("delivery count", 0, d.deliveries));
        if (state == static_cast<uint8_t>(DeliveryState::kReadNotMerged)) {
          d.state = DeliveryState::kReadNotMerged;
          if (d.deliveries != 0) return in.Bad("a delivery read but not merged was delivered");
        } else if (state == static_cast<uint8_t>(DeliveryState::kHeld)) {
          d.state = DeliveryState::kHeld;
          if (d.deliveries < 1) return in.Bad("a held delivery was never delivered");
        } else {
          return in.Bad("unknown delivery state " + std::to_string(state));
        }
        return Status::OK();
      });
}

std::string EncodePendingMarks(std::span<const SavedMark> marks) {
  return EncodeList(kPendingMarksKind, marks, [](std::string& out, const SavedMark& m) {
    PutSigned(out, m.input);
    PutSigned(out, m.position);
    PutSigned(out, m.producer);
    PutSigned(out, m.watermark.value());
  });
}

Result<std::vector<SavedMark>> DecodePendingMarks(std::string_view bytes) {
  return DecodeList<SavedMark>(bytes, kPendingMarksKind, "marks", 4,
                               [](MetaReader& in, SavedMark& m) {
                                 WEIR_RETURN_IF_ERROR(in.Int32("mark input", 0, m.input));
                                 WEIR_RETURN_IF_ERROR(in.Signed("mark position", m.position));
                                 WEIR_RETURN_IF_ERROR(in.Int32("mark producer", 0, m.producer));
                                 int64_t v;
                                 WEIR_RETURN_IF_ERROR(in.Signed("mark watermark", v));
                                 m.watermark = Watermark(v);
                                 return Status::OK();
                               });
}

}  // namespace weir::app
