// NodeMap: the hash map behind a store's write-behind cache, built for its per-record lookup.
//
// Values live in nodes that never move (pointers to them stay valid until they are erased), as
// in std::unordered_map; the index is an open-addressing table of (hash, node) slots with linear
// probing. A lookup touches the slot and then the node: two cache misses where libstdc++'s
// unordered_map takes three or four (bucket, the node before, the node, the next node's hash),
// which measured as a third of a stateful pipeline's time with 100k keys. An erased node's
// memory is kept (up to kMaxSpareNodes) for the next key added, so keys that come and go (a
// window's state deleted when it closes, a new key's made) stop calling malloc; not under a
// sanitizer, which must see a node used after its erase.
// Thread safety: none; one owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "core/prefetch.h"
#include "core/sanitizers.h"

namespace weir::state {

template <typename V>
class NodeMap {
 public:
  using Node = std::pair<const std::string, V>;

  NodeMap() : slots_(kMinCapacity) {}
  ~NodeMap() {
    clear();
    for (void* memory : spare_) ::operator delete(memory, sizeof(Node));
  }
  NodeMap(const NodeMap&) = delete;
  NodeMap& operator=(const NodeMap&) = delete;

  size_t size() const { return size_; }

  // The node of `key`, or nullptr.
  Node* find(std::string_view key) const {
    const uint64_t hash = Hash(key);
    for (size_t i = hash & mask(); slots_[i].node != nullptr; i = (i + 1) & mask()) {
      if (slots_[i].hash == hash && slots_[i].node->first == key) return slots_[i].node;
    }
    return nullptr;
  }

  // Batch lookups hide their cache misses by touching the memory of keys they will look up
  // soon: the slot first (PrefetchSlot), the node a little later (PrefetchNode, which reads the
  // slot, by then in cache), what the node points to last (PrefetchContents). Hints only:
  // nothing changes.
  static uint64_t Hash(std::string_view key) { return HashBytes(key); }
  void PrefetchSlot(uint64_t hash) const { PrefetchForRead(&slots_[hash & mask()]); }
  void PrefetchNode(uint64_t hash) const {
    if (const Node* node = slots_[hash & mask()].node) {
      // Both ends: a node (key, then value) spans two cache lines more often than not.
      PrefetchForRead(node);
      PrefetchForRead(reinterpret_cast<const char*>(node + 1) - 1);
    }
  }
  // The last stage, nearer still: what the node points to (a key longer than a string keeps
  // inline, and whatever `touch(node)` prefetches of its value), read through the node, by then in
  // cache. Takes the first node of the probe run with the same hash without comparing keys: a
  // hint may touch the wrong node's memory, never change anything.
  template <typename Touch>
  void PrefetchContents(uint64_t hash, Touch&& touch) const {
    for (size_t i = hash & mask(); slots_[i].node != nullptr; i = (i + 1) & mask()) {
      if (slots_[i].hash == hash) {
        PrefetchForRead(slots_[i].node->first.data());
        touch(*slots_[i].node);
        return;
      }
    }
  }

  // Adds `key` with `value`. REQUIRES: find(key) == nullptr.
  Node* emplace(std::string_view key, V value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    void* memory = TakeMemory();
    Node* node;
    try {
      node = new (memory) Node(std::string(key), std::move(value));
    } catch (...) {
      GiveBack(memory);
      throw;
    }
    Place(Hash(key), node);
    ++size_;
    return node;
  }

  // Removes and frees a node of this map.
  void erase(Node* node) {
    size_t i = SlotOf(node);
    Destroy(node);
    --size_;
    // Backward-shift deletion: pull later members of the probe run into the hole, so lookups
    // never need tombstones.
    for (size_t j = (i + 1) & mask(); slots_[j].node != nullptr; j = (j + 1) & mask()) {
      size_t home = slots_[j].hash & mask();
      bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
  }

  // Calls f(node) for every node, in no particular order. f must not add or erase nodes.
  template <typename F>
  void for_each(F f) {
    for (Slot& s : slots_) {
      if (s.node != nullptr) f(*s.node);
    }
  }

  // Erases every node for which pred(node) is true.
  template <typename Pred>
  void erase_if(Pred pred) {
    std::vector<Node*> doomed;
    for (const Slot& s : slots_) {
      if (s.node != nullptr && pred(*s.node)) doomed.push_back(s.node);
    }
    for (Node* node : doomed) erase(node);
  }

  void clear() {
    for (Slot& s : slots_) {
      if (s.node != nullptr) Destroy(s.node);
      s = Slot{};
    }
    size_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    Node* node = nullptr;
  };
  static constexpr size_t kMinCapacity = 16;
  static constexpr size_t kMaxSpareNodes = WEIR_UNDER_SANITIZER ? 0 : size_t{1} << 16;

  void* TakeMemory() {
    if (spare_.empty()) return ::operator new(sizeof(Node));
    void* memory = spare_.back();
    spare_.pop_back();
    return memory;
  }
  void GiveBack(void* memory) noexcept {
    if (spare_.size() < kMaxSpareNodes) {
      try {
        spare_.push_back(memory);
        return;
      } catch (...) {  // no room to keep it: free it
      }
    }
    ::operator delete(memory, sizeof(Node));
  }
  void Destroy(Node* node) noexcept {
    node->~Node();
    GiveBack(node);
  }

  size_t mask() const { return slots_.size() - 1; }

  void Place(uint64_t hash, Node* node) {
    size_t i = hash & mask();
    while (slots_[i].node != nullptr) i = (i + 1) & mask();
    slots_[i] = Slot{hash, node};
  }

  size_t SlotOf(const Node* node) const {
    for (size_t i = Hash(node->first) & mask();; i = (i + 1) & mask()) {
      if (slots_[i].node == node) return i;
    }
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    for (const Slot& s : old) {
      if (s.node != nullptr) Place(s.hash, s.node);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  std::vector<void*> spare_;  // erased nodes' memory, for the next nodes
};

}  // namespace weir::state
