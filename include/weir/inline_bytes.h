// InlineBytes: a short byte string kept in the object itself, for the keys that records and
// index entries carry from step to step.
//
// Up to kCapacity (31) bytes live inline, so that copying or moving one is a fixed 32-byte copy
// with no branch on a heap pointer and no call (a std::string's copy of a short key was a call
// to memcpy each time: 8% of Nexmark q11's task threads). Longer strings are kept on the heap,
// the pointer and size in the first 16 bytes; copying one of those allocates.
//
// Contract: view() is valid while the object lives and is not assigned to or moved from. A
// moved-from InlineBytes is empty. Bytes compare as std::string_view does.
// Thread safety: a value type.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace weir::internal {

class InlineBytes {
 public:
  static constexpr size_t kCapacity = 31;

  InlineBytes() = default;
  explicit InlineBytes(std::string_view bytes) { Assign(bytes); }
  InlineBytes(const InlineBytes& other) { CopyFrom(other); }
  InlineBytes(InlineBytes&& other) noexcept { TakeFrom(other); }
  InlineBytes& operator=(const InlineBytes& other) {
    if (this != &other) {
      Free();
      CopyFrom(other);
    }
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

  std::string_view view() const {
    if (!on_heap()) return {storage_, size_};
    const HeapBytes h = heap();
    return {h.data, h.size};
  }
  size_t size() const { return on_heap() ? heap().size : size_; }
  bool empty() const { return size_ == 0; }

  friend bool operator==(const InlineBytes& a, const InlineBytes& b) {
    return a.view() == b.view();
  }
  friend std::strong_ordering operator<=>(const InlineBytes& a, const InlineBytes& b) {
    return a.view().compare(b.view()) <=> 0;
  }

 private:
  static constexpr uint8_t kOnHeap = 0xff;
  struct HeapBytes {
    char* data;
    size_t size;
  };

  bool on_heap() const { return size_ == kOnHeap; }
  HeapBytes heap() const {
    HeapBytes h;
    std::memcpy(&h, storage_, sizeof h);
    return h;
  }
  void Assign(std::string_view bytes) {
    if (bytes.size() <= kCapacity) {
      size_ = static_cast<uint8_t>(bytes.size());
      if (!bytes.empty()) std::memcpy(storage_, bytes.data(), bytes.size());
      return;
    }
    const HeapBytes h{new char[bytes.size()], bytes.size()};
    std::memcpy(h.data, bytes.data(), bytes.size());
    std::memcpy(storage_, &h, sizeof h);
    size_ = kOnHeap;
  }
  void CopyFrom(const InlineBytes& other) {
    if (other.on_heap()) {
      Assign(other.view());
    } else {
      std::memcpy(static_cast<void*>(this), &other, sizeof(InlineBytes));
    }
  }
  void TakeFrom(InlineBytes& other) {
    std::memcpy(static_cast<void*>(this), &other, sizeof(InlineBytes));
    other.size_ = 0;
  }
  void Free() {
    if (on_heap()) delete[] heap().data;
  }

  alignas(8) char storage_[kCapacity];
  uint8_t size_ = 0;  // the inline bytes' count, or kOnHeap
};
static_assert(sizeof(InlineBytes) == 32);

}  // namespace weir::internal
