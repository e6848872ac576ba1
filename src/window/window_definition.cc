#include "weir/window_definition.h"

#include <string>

namespace weir {

WindowDefinition WindowDefinition::Tumbling(std::chrono::milliseconds size) {
  return WindowDefinition(WindowKind::kTumbling, size.count(), size.count());
}
WindowDefinition WindowDefinition::Hopping(std::chrono::milliseconds size,
                                           std::chrono::milliseconds step) {
  return WindowDefinition(WindowKind::kHopping, size.count(), step.count());
}
WindowDefinition WindowDefinition::Sliding(std::chrono::milliseconds size) {
  return WindowDefinition(WindowKind::kSliding, size.count(), size.count());
}
WindowDefinition WindowDefinition::Session(std::chrono::milliseconds inactivity_gap) {
  return WindowDefinition(WindowKind::kSession, inactivity_gap.count(), inactivity_gap.count());
}
WindowDefinition WindowDefinition::CountTumbling(int64_t n) {
  return WindowDefinition(WindowKind::kCountTumbling, n, n);
}
WindowDefinition WindowDefinition::CountHopping(int64_t n, int64_t step) {
  return WindowDefinition(WindowKind::kCountHopping, n, step);
}
WindowDefinition WindowDefinition::CountSliding(int64_t n) {
  return WindowDefinition(WindowKind::kCountSliding, n, 1);
}

WindowDefinition& WindowDefinition::Grace(std::chrono::milliseconds grace) {
  grace_ = grace.count();
  return *this;
}

std::string_view WindowKindName(WindowKind kind) {
  switch (kind) {
    case WindowKind::kTumbling:
      return "tumbling";
    case WindowKind::kHopping:
      return "hopping";
    case WindowKind::kSliding:
      return "sliding";
    case WindowKind::kSession:
      return "session";
    case WindowKind::kCountTumbling:
      return "count tumbling";
    case WindowKind::kCountHopping:
      return "count hopping";
    case WindowKind::kCountSliding:
      return "count sliding";
  }
  return "unknown";
}

Status WindowDefinition::Validate() const {
  const std::string what = std::string(WindowKindName(kind_)) + " window";
  const std::string unit = is_count() ? " events" : " ms";
  // Windows of a few hundred years fit int64 milliseconds with room for the arithmetic on them.
  constexpr int64_t kLongest = int64_t{1} << 53;
  if (size_ <= 0) {
    return Status::InvalidArgument(
        what + ": " + (kind_ == WindowKind::kSession ? "the inactivity gap" : "the size") +
        " must be > 0, not " + std::to_string(size_) + unit);
  }
  if (size_ > kLongest) return Status::InvalidArgument(what + ": the size is too large");
  if (kind_ == WindowKind::kHopping || kind_ == WindowKind::kCountHopping) {
    if (step_ <= 0) {
      return Status::InvalidArgument(what + ": the step must be > 0, not " + std::to_string(step_) +
                                     unit);
    }
    if (step_ > size_) {
      return Status::InvalidArgument(what + ": the step (" + std::to_string(step_) + unit +
                                     ") must not exceed the size (" + std::to_string(size_) + unit +
                                     "), or events would fall between windows");
    }
  }
  if (grace_ < 0) {
    return Status::InvalidArgument(what + ": the grace period must be >= 0, not " +
                                   std::to_string(grace_) + " ms");
  }
  if (grace_ > kLongest) return Status::InvalidArgument(what + ": the grace period is too large");
  if (is_count() && grace_ != 0) {
    return Status::InvalidArgument(what +
                                   ": count windows close when they are full and take "
                                   "no grace period");
  }
  return Status::OK();
}

std::string WindowDefinition::Describe() const {
  std::string d(WindowKindName(kind_));
  const std::string unit = is_count() ? "" : "ms";
  if (kind_ == WindowKind::kSession) {
    d += "(gap=" + std::to_string(size_) + unit;
  } else {
    d += "(size=" + std::to_string(size_) + unit;
  }
  if (kind_ == WindowKind::kHopping || kind_ == WindowKind::kCountHopping) {
    d += ", step=" + std::to_string(step_) + unit;
  }
  if (!is_count()) d += ", grace=" + std::to_string(grace_) + "ms";
  return d + ")";
}

}  // namespace weir
