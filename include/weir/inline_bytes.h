// InlineBytes: a short byte string kept in the object itself, for the keys that records and
// index entries carry from step to step.
//
// Up to kCapacity (31) bytes live inline, so that moving one, or copying a short one, is a fixed
// 32-byte copy with no call (a std::string's copy of a short key was a call to memcpy each time:
// 8% of Nexmark q11's task threads). Longer strings are kept on the heap, the pointer and size in
// the first 16 bytes; copying one of those allocates.
//
// Contract: view() is valid while the object lives and is not assigned to or moved from. A
// moved-from InlineBytes is empty. Two are equal when their bytes are. A copy assignment that
// throws (std::bad_alloc) leaves the target as it was.
// Thread safety: a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace weir::internal {

class InlineBytes {
 public:
  static constexpr size_t kCapacity = 31;

  InlineBytes() = default;
  explicit InlineBytes(std::string_view bytes) { AssignNew(bytes); }
  InlineBytes(const InlineBytes& other) {
    if (other.on_heap()) {
      AssignNew(other.view());
    } else {
      std::memcpy(rep_, other.rep_, sizeof rep_);
    }
  }
  InlineBytes(InlineBytes&& other) noexcept { TakeFrom(other); }
  InlineBytes& operator=(const InlineBytes& other) {
    if (this != &other) *this = InlineBytes(other);  // copied before this is freed
    return *this;
  }
  InlineBytes& operator=(InlineBytes&& other) noexcept {
    if (this != &other) {
      Free();
      TakeFrom(other);
    }
    return *this;
  }
  ~InlineBytes() { Free(); }

  // Replaces the bytes; in place (no allocation, no free) when the old and the new both fit
  // inline. `bytes` may be a view of these bytes. If an allocation throws, nothing changed.
  void Assign(std::string_view bytes) {
    if (on_heap() || bytes.size() > kCapacity) {
      *this = InlineBytes(bytes);  // copied before this is freed
      return;
    }
    if (!bytes.empty()) std::memmove(rep_, bytes.data(), bytes.size());
    set_size_byte(static_cast<uint8_t>(bytes.size()));
  }

  std::string_view view() const {
    if (!on_heap()) return {rep_, size_byte()};
    const HeapBytes h = heap();
    return {h.data, h.size};
  }
  size_t size() const { return on_heap() ? heap().size : size_byte(); }

  friend bool operator==(const InlineBytes& a, const InlineBytes& b) {
    return a.view() == b.view();
  }

 private:
  static constexpr size_t kSizeAt = kCapacity;  // the last byte: the inline size, or kOnHeap
  static constexpr uint8_t kOnHeap = 0xff;
  struct HeapBytes {
    char* data;
    size_t size;
  };

  uint8_t size_byte() const { return static_cast<uint8_t>(rep_[kSizeAt]); }
  void set_size_byte(uint8_t size) { rep_[kSizeAt] = static_cast<char>(size); }
  bool on_heap() const { return size_byte() == kOnHeap; }
  HeapBytes heap() const {
    HeapBytes h;
    std::memcpy(&h, rep_, sizeof h);
    return h;
  }
  // REQUIRES: this owns no heap bytes (a new object).
  void AssignNew(std::string_view bytes) {
    if (bytes.size() <= kCapacity) {
      if (!bytes.empty()) std::memcpy(rep_, bytes.data(), bytes.size());
      set_size_byte(static_cast<uint8_t>(bytes.size()));
      return;
    }
    const HeapBytes h{new char[bytes.size()], bytes.size()};
    std::memcpy(h.data, bytes.data(), bytes.size());
    std::memcpy(rep_, &h, sizeof h);
    set_size_byte(kOnHeap);
  }
  void TakeFrom(InlineBytes& other) {
    std::memcpy(rep_, other.rep_, sizeof rep_);
    other.set_size_byte(0);
  }
  void Free() {
    if (on_heap()) delete[] heap().data;
    set_size_byte(0);
  }

  // Bytes [0, size) inline, or a HeapBytes; the size byte last. Zeroed when made, so that a
  // copy never reads bytes that were never written.
  alignas(8) char rep_[kCapacity + 1] = {};
};
static_assert(sizeof(InlineBytes) == 32);

}  // namespace weir::internal
