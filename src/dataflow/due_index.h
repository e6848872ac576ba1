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
// taking one is O(1) amortized plus, per end, one sort of its entries and O(log ends) to order
// the ends.
// Thread safety: none; a task's step owns its index.
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::dataflow {

// A window's entry, ordered by (end, key, start). The key's first 16 bytes are kept beside it
// as two big-endian words (zero-padded), which order as the bytes do: the entries of one end
// (every key's window, for tumbling and hopping windows) are told apart by integer compares, and
// the key's bytes are compared only when those are equal (compared as strings, they were 5-6% of
// Nexmark q5).
struct IndexEntry {
  IndexEntry(int64_t end_time, std::string state_key, int64_t start_time)
      : end(end_time),
        head{HeadWord(state_key, 0), HeadWord(state_key, 8)},
        start(start_time),
        key(std::move(state_key)) {}
  int64_t end;
  std::array<uint64_t, 2> head;
  int64_t start;
  std::string key;  // the encoded message key (its state key)

  friend bool operator==(const IndexEntry& a, const IndexEntry& b) {
    return a.end == b.end && a.head == b.head && a.start == b.start && a.key == b.key;
  }
  friend std::strong_ordering operator<=>(const IndexEntry& a, const IndexEntry& b) {
    if (auto c = a.end <=> b.end; c != 0) return c;
    if (auto c = a.head <=> b.head; c != 0) return c;
    if (auto c = a.key.compare(b.key) <=> 0; c != 0) return c;
    return a.start <=> b.start;
  }

 private:
  // Bytes [from, from + 8) of `key` as a big-endian number, missing bytes as zeros.
  static uint64_t HeadWord(std::string_view key, size_t from) {
    unsigned char bytes[8] = {};
    if (from < key.size()) {
      std::memcpy(bytes, key.data() + from, std::min<size_t>(8, key.size() - from));
    }
    uint64_t word = 0;
    for (unsigned char b : bytes) word = word << 8 | b;
    return word;
  }
};

// The open windows' entries, smallest (end, key, start) first, in buckets of one end each: a
// binary heap of (end, bucket) over small integers orders the buckets, and a bucket is sorted
// when its first entry is taken, then handed out from memory read in order. Every key's window of
// a tumbling or hopping window shares its end with the others', and a recent bucket of the end
// takes the entry; a session's window mostly has a bucket of its own. (A heap of the entries
// themselves cost a cache miss per level on each removal once it outgrew the caches: `pop_heap`
// 6% of Nexmark q5, with integer compares.) Two buckets of one end are merged when an entry of
// that end is taken. Adding allocates nothing once the buckets have grown (emptied ones are kept
// for new ends). An entry added twice is handed out once, as a set would.
class DueIndex {
 public:
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty().
  int64_t first_end() const { return heap_.front().end; }

  void Add(IndexEntry entry) {
    Bucket& bucket = buckets_[BucketOf(entry.end)];
    bucket.entries.push_back(std::move(entry));
    bucket.sorted = false;
  }

  // The entry `n` places after the first, for a hint (a sweep prefetching the state of the
  // entries it will take): within the first entry's bucket once it is sorted, which is where a
  // sweep takes its next entries from; nullptr beyond it (or before its first take). A copy of an
  // entry counts as a place. The pointer is valid until the next Add or TakeFirst.
  const IndexEntry* Upcoming(size_t n) const {
    if (heap_.empty()) return nullptr;
    const Bucket& first = buckets_[heap_.front().bucket];
    if (!first.sorted || n >= first.entries.size()) return nullptr;
    return &first.entries[first.entries.size() - 1 - n];
  }

  // Removes and returns the first entry, with any copies of it. REQUIRES: !empty().
  IndexEntry TakeFirst() {
    const uint32_t id = heap_.front().bucket;
    std::vector<IndexEntry>& entries = buckets_[id].entries;
    if (FirstEndIsShared()) {
      const HeapEntry first = PopHeap();
      while (!heap_.empty() && heap_.front().end == first.end) {
        const uint32_t same_end = PopHeap().bucket;
        std::vector<IndexEntry>& more = buckets_[same_end].entries;
        std::move(more.begin(), more.end(), std::back_inserter(entries));
        Release(same_end);
      }
      PushHeap(first);
      buckets_[id].sorted = false;
    }
    if (!buckets_[id].sorted) {
      std::sort(entries.begin(), entries.end(), std::greater<>());  // the first one last
      buckets_[id].sorted = true;
    }
    IndexEntry taken = std::move(entries.back());
    entries.pop_back();
    while (!entries.empty() && entries.back() == taken) entries.pop_back();
    if (entries.empty()) {
      PopHeap();
      Release(id);
    }
    return taken;
  }

 private:
  struct Bucket {
    std::vector<IndexEntry> entries;  // of one end; cleared, not freed, when the bucket is
    bool sorted = false;              // descending, the first entry last
  };
  struct HeapEntry {
    int64_t end;
    uint32_t bucket;
    // std::greater makes the heap a min-heap.
    friend bool operator>(const HeapEntry& a, const HeapEntry& b) {
      return a.end != b.end ? a.end > b.end : a.bucket > b.bucket;
    }
  };
  static constexpr uint32_t kNoBucket = UINT32_MAX;
  static constexpr size_t kRecentEnds = 8;  // more than a hopping window's open ends

  // A bucket for entries ending at `end`: one of the recent ends', or a new one.
  uint32_t BucketOf(int64_t end) {
    for (const Recent& r : recent_) {
      if (r.bucket != kNoBucket && r.end == end) return r.bucket;
    }
    uint32_t id;
    if (free_.empty()) {
      id = static_cast<uint32_t>(buckets_.size());
      buckets_.emplace_back();
    } else {
      id = free_.back();
      free_.pop_back();
    }
    PushHeap({end, id});
    recent_[next_recent_] = {end, id};
    next_recent_ = (next_recent_ + 1) % kRecentEnds;
    return id;
  }
  void Release(uint32_t id) {
    buckets_[id].entries.clear();
    buckets_[id].sorted = false;
    free_.push_back(id);
    for (Recent& r : recent_) {
      if (r.bucket == id) r.bucket = kNoBucket;
    }
  }
  // Whether another bucket has the first one's end: then one of the first's children has it,
  // as every bucket below them ends no earlier than they do.
  bool FirstEndIsShared() const {
    const int64_t end = heap_.front().end;
    return (heap_.size() > 1 && heap_[1].end == end) || (heap_.size() > 2 && heap_[2].end == end);
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

  struct Recent {
    int64_t end = 0;
    uint32_t bucket = kNoBucket;
  };
  std::vector<HeapEntry> heap_;  // one per live bucket
  std::vector<Bucket> buckets_;  // by id; free_ lists the emptied ones
  std::vector<uint32_t> free_;
  std::array<Recent, kRecentEnds> recent_{};
  size_t next_recent_ = 0;
};

}  // namespace weir::dataflow
