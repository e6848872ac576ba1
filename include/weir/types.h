// Distinct types for the integers of a stream: an offset passed where an event time is expected
// does not compile. Durations are std::chrono::milliseconds.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace weir {

// A value of type T that only mixes with values of the same Tag.
template <typename T, typename Tag>
class NamedType {
 public:
  using ValueType = T;
  constexpr NamedType() = default;
  constexpr explicit NamedType(T value) : value_(value) {}
  constexpr T value() const { return value_; }
  constexpr auto operator<=>(const NamedType&) const = default;

 private:
  T value_{};
};

// Position of a record in a partition: dense, from 0.
class Offset : public NamedType<int64_t, struct OffsetTag> {
 public:
  using NamedType::NamedType;
  constexpr Offset Next() const { return Offset(value() + 1); }
  constexpr Offset operator+(int64_t n) const { return Offset(value() + n); }
  constexpr int64_t operator-(Offset other) const { return value() - other.value(); }
};

using PartitionId = NamedType<int32_t, struct PartitionTag>;

// The most partitions a topic may have, whether it is declared in C++ (log::TopicConfig, which
// every topic an application makes goes through) or in YAML.
inline constexpr int32_t kMaxPartitions = 10000;

// Time arithmetic that saturates instead of overflowing: times come from user data, and
// watermarks start at INT64_MIN and end at INT64_MAX. EventTime's + and - are built on these; the
// window code uses them on raw milliseconds (window bounds) too.
constexpr int64_t AddSaturating(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
constexpr int64_t SubtractSaturating(int64_t a, int64_t b) {
  int64_t difference;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b > 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

// Event time: milliseconds since the Unix epoch. Moving a time by a duration saturates: past
// either end it stays at Min() or Max() (an event at Max() plus a grace is still Max(), never a
// time before the epoch).
class EventTime : public NamedType<int64_t, struct EventTimeTag> {
 public:
  using NamedType::NamedType;
  static constexpr EventTime Min() { return EventTime(std::numeric_limits<int64_t>::min()); }
  static constexpr EventTime Max() { return EventTime(std::numeric_limits<int64_t>::max()); }
  constexpr EventTime operator+(std::chrono::milliseconds d) const {
    return EventTime(AddSaturating(value(), d.count()));
  }
  constexpr EventTime operator-(std::chrono::milliseconds d) const {
    return EventTime(SubtractSaturating(value(), d.count()));
  }
};

// The event time up to which a partition's input is believed complete. Min() before any event;
// Max() once a bounded input has ended (every window may close).
class Watermark : public NamedType<int64_t, struct WatermarkTag> {
 public:
  using NamedType::NamedType;
  static constexpr Watermark Min() { return Watermark(std::numeric_limits<int64_t>::min()); }
  static constexpr Watermark Max() { return Watermark(std::numeric_limits<int64_t>::max()); }
  constexpr bool IsEndOfInput() const { return *this == Max(); }
  // The watermark after seeing an event: it never goes back.
  constexpr Watermark Advance(EventTime t) const {
    return t.value() > value() ? Watermark(t.value()) : *this;
  }
};

}  // namespace weir

template <typename T, typename Tag>
struct std::hash<weir::NamedType<T, Tag>> {
  size_t operator()(const weir::NamedType<T, Tag>& v) const { return std::hash<T>()(v.value()); }
};
