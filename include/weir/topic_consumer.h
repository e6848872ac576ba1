// TopicConsumer: reads a topic of a data directory in this process: what an application wrote
// to a topic, read back by the program that ran it (or any other).
//
//   weir::Result<std::unique_ptr<weir::TopicConsumer>> consumer =
//       weir::TopicConsumer::Open({.data_dir = "./weir-data", .topic = "sales-by-page"});
//   while (true) {
//     weir::Result<std::vector<weir::ConsumedRecord>> batch = (*consumer)->Poll();
//     if (!batch.ok() || batch->empty()) break;  // an error, or all there is for now
//     for (const weir::ConsumedRecord& r : *batch) Use(r.record);
//   }
//
// It reads what is committed (what checkpoints made visible), partition by partition in offset
// order. It takes the data directory's lock, as an Application does, so it cannot read a data
// directory that an application is running on (kUnavailable, naming the process): run it after
// Run() returns, or read a running application's topics through its server (weir/subscription.h).
// Values are parsed as JSON (a repartition topic's binary values are decoded: the same values);
// a stored value that is not JSON is returned as a string.
// Threads: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weir/record.h"
#include "weir/status.h"
#include "weir/stream.h"
#include "weir/types.h"

namespace weir {

struct TopicConsumerOptions {
  std::string data_dir = "./weir-data";
  std::string topic{};     // REQUIRED
  int32_t partition = -1;  // -1: every partition
  // Where each partition is read from: the first retained record, the end it has at Open, or
  // start_offset (kOutOfRange at Open if retention removed it or it is past the end).
  TopicStart start = TopicStart::kEarliest;
  int64_t start_offset = 0;
};

struct ConsumedRecord {
  PartitionId partition;
  Offset offset;
  Record record;
};

class TopicConsumer {
 public:
  // kNotFound for an unknown topic, kInvalidArgument for a partition it does not have,
  // kOutOfRange for a start_offset outside a partition's records, kUnavailable if the data
  // directory is in use.
  static Result<std::unique_ptr<TopicConsumer>> Open(TopicConsumerOptions options);
  ~TopicConsumer();
  TopicConsumer(const TopicConsumer&) = delete;
  TopicConsumer& operator=(const TopicConsumer&) = delete;

  // Up to `max` records that follow the last ones returned, from the first partition that has
  // any; empty once every partition has been read to its visible end.
  Result<std::vector<ConsumedRecord>> Poll(size_t max = 1000);

 private:
  struct Impl;
  explicit TopicConsumer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
