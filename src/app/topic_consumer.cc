#include "weir/topic_consumer.h"

#include <filesystem>

#include "app/data_dir.h"
#include "app/topic_start.h"
#include "log/log.h"

namespace weir {

namespace app {

Result<Offset> StartOffset(const log::Partition& partition, TopicStart start, int64_t offset,
                           std::string_view where) {
  if (start == TopicStart::kEarliest) return partition.FirstOffset();
  if (start == TopicStart::kLatest) return partition.NextOffset();
  if (Offset(offset) < partition.FirstOffset()) {
    return Status::OutOfRange("offset " + std::to_string(offset) + " of " + std::string(where) +
                              " was removed by retention; the first retained is " +
                              std::to_string(partition.FirstOffset().value()));
  }
  if (Offset(offset) > partition.NextOffset()) {
    return Status::OutOfRange("offset " + std::to_string(offset) + " is beyond the end of " +
                              std::string(where) + " (next offset " +
                              std::to_string(partition.NextOffset().value()) + ")");
  }
  return Offset(offset);
}

}  // namespace app

struct TopicConsumer::Impl {
  std::unique_ptr<app::DataDirLock> lock;
  std::unique_ptr<log::LogStore> log;  // destroyed before the lock is released
  std::vector<std::unique_ptr<log::PartitionReader>> readers;
  std::vector<PartitionId> partitions;
  ~Impl() { log.reset(); }
};

TopicConsumer::TopicConsumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TopicConsumer::~TopicConsumer() = default;

Result<std::unique_ptr<TopicConsumer>> TopicConsumer::Open(TopicConsumerOptions options) {
  auto impl = std::make_unique<Impl>();
  WEIR_ASSIGN_OR_RETURN(
      impl->lock, app::DataDirLock::Acquire(options.data_dir, "TopicConsumerOptions::data_dir"));
  log::LogOptions log_options;
  log_options.dir = std::filesystem::path(options.data_dir) / "log";
  WEIR_ASSIGN_OR_RETURN(impl->log, log::LogStore::Open(log_options));
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, impl->log->GetTopic(options.topic));
  const int32_t count = topic->num_partitions();
  if (options.partition < -1 || options.partition >= count) {
    return Status::InvalidArgument("topic " + options.topic + " has partitions 0-" +
                                   std::to_string(count - 1) + ", not " +
                                   std::to_string(options.partition));
  }
  for (int32_t p = 0; p < count; ++p) {
    if (options.partition != -1 && p != options.partition) continue;
    log::Partition& partition = topic->partition(PartitionId(p));
    WEIR_ASSIGN_OR_RETURN(Offset start,
                          app::StartOffset(partition, options.start, options.start_offset,
                                           options.topic + "/" + std::to_string(p)));
    impl->readers.push_back(std::make_unique<log::PartitionReader>(partition, start));
    impl->partitions.push_back(PartitionId(p));
  }
  return std::unique_ptr<TopicConsumer>(new TopicConsumer(std::move(impl)));
}

Result<std::vector<ConsumedRecord>> TopicConsumer::Poll(size_t max) {
  std::vector<ConsumedRecord> out;
  for (size_t i = 0; i < impl_->readers.size() && out.empty(); ++i) {
    WEIR_ASSIGN_OR_RETURN(std::span<const log::StoredRecord> stored, impl_->readers[i]->Next(max));
    for (const log::StoredRecord& s : stored) {
      ConsumedRecord r{impl_->partitions[i], s.offset, {}};
      WEIR_ASSIGN_OR_RETURN(r.record.key, s.DecodeKey());
      if (s.header_count > 0) {
        WEIR_ASSIGN_OR_RETURN(r.record.headers, s.DecodeHeaders());
      }
      r.record.timestamp = s.timestamp;
      if (!log::DecodeStoredValue(s.value, r.record.value).ok()) {
        r.record.value.AssignString(s.value);
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace weir
