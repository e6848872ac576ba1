// DueIndex: the open windows of a window step closing by partition, in the order they close:
// (end, key, start) ascending, where key is a window's state key (its encoded message key) and
// start identifies the window among the key's. The step adds an entry when it makes a window and
// takes entries from the front as the partition's close bound passes their end
// (window_operator.cc describes how the step uses it lazily).
//
// Contract: TakeFirst returns the smallest entry added and not yet taken, and removes every
// copy of it (an entry added twice is handed out once, as a set would). Entries may be added at
// any time, between takes too, with any end.
// Cost: adding an entry allocates nothing once the index has held as many buckets and entries;
// taking one is O(1) amortized plus, per slot of ends (see the constructor), one sort of its
// entries and O(log slots) to order the slots. An entry added to a slot already being taken from
// costs O(log k) more (a heap of k such entries beside the sorted run, merged into it once k
// reaches a quarter of the run).
//
// Thread safety: none; a task's step owns its index.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "state/key_encoding.h"
#include "weir/inline_bytes.h"

namespace weir::dataflow {

// A window's entry, ordered by (end, key, start). The key's head (its first 16 bytes as two
// words, state::KeyHead) is kept beside it: the entries of one end
// (every key's window, for tumbling and hopping windows) are told apart by integer compares, and
// the key's bytes are compared only when those are equal (compared as strings, they were 5-6% of
// Nexmark q5).
struct IndexEntry {
  IndexEntry(int64_t end_time, std::string_view state_key, int64_t start_time)
      : end(end_time), head(state_key), start(start_time), key(state_key) {}
  int64_t end;
  state::KeyHead head;
  int64_t start;
  // The encoded message key (its state key); inline up to 31 bytes, so that an entry is 64
  // bytes that the bucket's sort moves with fixed-size copies.
  internal::InlineBytes key;

  friend bool operator==(const IndexEntry& a, const IndexEntry& b) {
    return a.end == b.end && a.head == b.head && a.start == b.start && a.key == b.key;
  }
  // The order: (end, key, start), as integer compares on what decides nearly every pair (as a
  // strong_ordering chain it was 5% of the hopping bench's task threads). The head's words are
  // compared here, not through KeyHead's == and <: that measured 0.68-0.90x on the hopping bench.
  friend bool operator>(const IndexEntry& a, const IndexEntry& b) {
    if (a.end != b.end) return a.end > b.end;
    if (a.head.words[0] != b.head.words[0]) return a.head.words[0] > b.head.words[0];
    if (a.head.words[1] != b.head.words[1]) return a.head.words[1] > b.head.words[1];
    if (const int c = a.key.view().compare(b.key.view()); c != 0) return c > 0;
    return a.start > b.start;
  }
  friend bool operator<(const IndexEntry& a, const IndexEntry& b) { return b > a; }
};

// The open windows' entries, smallest (end, key, start) first, in buckets of one slot of ends
// each: a binary heap of (slot, bucket) over small integers orders the buckets, and a bucket is
// sorted when its first entry is taken, then handed out from memory read in order. A slot is one
// end where many windows share few ends (every key's tumbling or hopping window ends with the
// others'), and 2^kSpreadSlotBits ms of ends where they spread over every millisecond (sessions,
// sliding windows); a recent bucket of the slot takes the entry. (A heap of the entries themselves
// cost a cache miss per level on each removal once it outgrew the caches: `pop_heap` 6% of
// Nexmark q5, with integer compares; a bucket per end left sessions a heap of a bucket per
// millisecond: `TakeFirst` 14% of the session bench's tasks.) Two buckets of one slot are merged
// when the slot comes first. Adding allocates nothing once the buckets have grown (emptied ones
// are kept for new slots). An entry added twice is handed out once, as a set would.
class DueIndex {
 public:
  static constexpr int kSpreadSlotBits = 10;  // about a second
  // Ends e and f share a slot when e >> slot_bits == f >> slot_bits: 0 for a slot per end.
  explicit DueIndex(int slot_bits = 0) : slot_bits_(slot_bits) {}

  bool empty() const { return heap_.empty(); }
  // The smallest end. REQUIRES: !empty().
  int64_t first_end() {
    MergeFirstSlot();
    return buckets_[heap_.front().bucket].min_end;
  }

  void Add(IndexEntry entry) {
    Bucket& bucket = buckets_[BucketOf(entry.end >> slot_bits_)];
    bucket.min_end = std::min(bucket.min_end, entry.end);
    if (!bucket.sorted) {
      bucket.entries.push_back(std::move(entry));
      return;
    }
    // Being taken from (a session that grew, a window of a later end in the slot): beside the
    // sorted run, so that it is not sorted again for each such entry.
    bucket.later.push_back(std::move(entry));
    std::push_heap(bucket.later.begin(), bucket.later.end(), std::greater<>());
    if (bucket.later.size() >= kFoldAt && bucket.later.size() * 4 >= bucket.entries.size()) {
      Fold(bucket);
    }
  }

  // Entries a sort or merge has moved so far: the index's work beyond O(1) per entry.
  int64_t sorted_entries() const { return sorted_entries_; }

  // The entry `n` places after the first, for a hint (a sweep prefetching the state of the
  // entries it will take): within the first entry's bucket once it is sorted, which is where a
  // sweep takes its next entries from; nullptr beyond it (or before its first take). A copy of an
  // entry counts as a place. The pointer is valid until the next Add, first_end or TakeFirst.
  const IndexEntry* Upcoming(size_t n) const {
    if (heap_.empty()) return nullptr;
    const Bucket& first = buckets_[heap_.front().bucket];
    if (!first.sorted || n >= first.entries.size()) return nullptr;
    const IndexEntry* upcoming = &first.entries[first.entries.size() - 1 - n];
    // Unless an entry added since the sort comes before it.
    if (!first.later.empty() && !(*upcoming < first.later.front())) return nullptr;
    return upcoming;
  }

  // Removes and returns the first entry, with any copies of it. REQUIRES: !empty().
  IndexEntry TakeFirst() {
    MergeFirstSlot();
    const uint32_t id = heap_.front().bucket;
    Bucket& bucket = buckets_[id];
    std::vector<IndexEntry>& entries = bucket.entries;
    std::vector<IndexEntry>& later = bucket.later;
    if (!bucket.sorted) {
      std::sort(entries.begin(), entries.end(), std::greater<>());  // the first one last
      sorted_entries_ += static_cast<int64_t>(entries.size());
      bucket.sorted = true;
    }
    auto pop_later = [&] {
      std::pop_heap(later.begin(), later.end(), std::greater<>());
      IndexEntry first = std::move(later.back());
      later.pop_back();
      return first;
    };
    const bool from_later = !later.empty() && (entries.empty() || later.front() < entries.back());
    IndexEntry taken = from_later ? pop_later() : std::move(entries.back());
    if (!from_later) entries.pop_back();
    while (!entries.empty() && entries.back() == taken) entries.pop_back();
    while (!later.empty() && later.front() == taken) pop_later();
    if (entries.empty() && later.empty()) {
      PopHeap();
      Release(id);
    } else {
      bucket.min_end = std::min(entries.empty() ? INT64_MAX : entries.back().end,
                                later.empty() ? INT64_MAX : later.front().end);
    }
    return taken;
  }

 private:
  struct Bucket {
    std::vector<IndexEntry> entries;  // of one slot; cleared, not freed, when the bucket is
    bool sorted = false;              // descending, the first entry last
    // Entries added while sorted: a min-heap (std::greater), empty while not sorted.
    std::vector<IndexEntry> later;
    int64_t min_end = INT64_MAX;  // the smallest end among the entries
    int64_t slot = 0;
  };
  static constexpr size_t kFoldAt = 64;  // the fewest entries of `later` worth a merge

  // Merges a sorted bucket's `later` into its sorted run.
  void Fold(Bucket& bucket) {
    std::sort(bucket.later.begin(), bucket.later.end(), std::greater<>());
    folded_.clear();
    std::merge(std::make_move_iterator(bucket.entries.begin()),
               std::make_move_iterator(bucket.entries.end()),
               std::make_move_iterator(bucket.later.begin()),
               std::make_move_iterator(bucket.later.end()), std::back_inserter(folded_),
               std::greater<>());
    sorted_entries_ += static_cast<int64_t>(folded_.size());
    bucket.entries.swap(folded_);
    bucket.later.clear();
  }
  // Makes a bucket one unsorted pile again (to merge it with another).
  static void Unsort(Bucket& bucket) {
    std::move(bucket.later.begin(), bucket.later.end(), std::back_inserter(bucket.entries));
    bucket.later.clear();
    bucket.sorted = false;
  }
  struct HeapEntry {
    int64_t slot;
    uint32_t bucket;
    // std::greater makes the heap a min-heap.
    friend bool operator>(const HeapEntry& a, const HeapEntry& b) {
      return a.slot != b.slot ? a.slot > b.slot : a.bucket > b.bucket;
    }
  };
  static constexpr uint32_t kNoBucket = UINT32_MAX;
  // The buckets of recent slots: the last few made, searched first (a hopping window's few open
  // ends), then a table direct-mapped by slot with more places than the slots open at once (a
  // minute or two of sessions' ends by the second), so a slot rarely gets a second bucket.
  static constexpr size_t kLastSlots = 8;
  static constexpr int kSlotTableBits = 8;
  static size_t SlotTableIndex(int64_t slot) {
    return static_cast<size_t>((static_cast<uint64_t>(slot) * 0x9E3779B97F4A7C15ULL) >>
                               (64 - kSlotTableBits));
  }

  // A bucket for entries whose end is in `slot`: the slot's recent one, or a new one.
  uint32_t BucketOf(int64_t slot) {
    for (const SlotBucket& last : last_slots_) {
      if (last.bucket != kNoBucket && last.slot == slot) return last.bucket;
    }
    SlotBucket& mapped = slot_table_[SlotTableIndex(slot)];
    if (mapped.bucket != kNoBucket && mapped.slot == slot) return mapped.bucket;
    uint32_t id;
    if (free_.empty()) {
      id = static_cast<uint32_t>(buckets_.size());
      buckets_.emplace_back();
    } else {
      id = free_.back();
      free_.pop_back();
    }
    PushHeap({slot, id});
    buckets_[id].slot = slot;
    mapped = {slot, id};
    last_slots_[next_last_] = {slot, id};
    next_last_ = (next_last_ + 1) % kLastSlots;
    return id;
  }
  void Release(uint32_t id) {
    buckets_[id].entries.clear();
    buckets_[id].later.clear();
    buckets_[id].sorted = false;
    buckets_[id].min_end = INT64_MAX;
    free_.push_back(id);
    SlotBucket& mapped = slot_table_[SlotTableIndex(buckets_[id].slot)];
    if (mapped.bucket == id) mapped.bucket = kNoBucket;
    for (SlotBucket& last : last_slots_) {
      if (last.bucket == id) last.bucket = kNoBucket;
    }
  }
  // Makes the first slot's entries one bucket: another bucket of that slot is one of the first's
  // children, as every bucket below them has a slot no earlier than theirs.
  void MergeFirstSlot() {
    const int64_t slot = heap_.front().slot;
    const bool shared =
        (heap_.size() > 1 && heap_[1].slot == slot) || (heap_.size() > 2 && heap_[2].slot == slot);
    if (!shared) return;
    const HeapEntry first = PopHeap();
    Bucket& into = buckets_[first.bucket];
    Unsort(into);
    while (!heap_.empty() && heap_.front().slot == first.slot) {
      const uint32_t same_slot = PopHeap().bucket;
      Bucket& more = buckets_[same_slot];
      Unsort(more);
      std::move(more.entries.begin(), more.entries.end(), std::back_inserter(into.entries));
      into.min_end = std::min(into.min_end, more.min_end);
      Release(same_slot);
    }
    PushHeap(first);
  }
  void PushHeap(HeapEntry e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  HeapEntry PopHeap() {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    return top;
  }

  struct SlotBucket {
    int64_t slot = 0;
    uint32_t bucket = kNoBucket;
  };
  int slot_bits_;
  int64_t sorted_entries_ = 0;
  std::vector<IndexEntry> folded_;  // Fold's output, swapped with the run it replaces
  std::vector<HeapEntry> heap_;     // one per live bucket
  std::vector<Bucket> buckets_;     // by id; free_ lists the emptied ones
  std::vector<uint32_t> free_;
  std::array<SlotBucket, kLastSlots> last_slots_{};
  size_t next_last_ = 0;
  std::array<SlotBucket, size_t{1} << kSlotTableBits> slot_table_{};
};

}  // namespace weir::dataflow
