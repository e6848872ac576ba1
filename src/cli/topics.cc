// weir produce, weir consume, weir topics.
#include <atomic>
#include <cstdio>
#include <iostream>

#include "app/topic_start.h"
#include "cli/commands.h"
#include "cli/local_log.h"
#include "core/parse.h"
#include "dataflow/json_records.h"

namespace weir::cli {
namespace {

std::string DeadLetterTopicOf(const std::string& topic) { return topic + ".dlq"; }

// Appends a record's JSON line as `weir consume` prints it.
void AppendConsumedLine(std::string& out, const log::StoredRecord& r, PartitionId p) {
  out.append("{\"partition\":");
  out.append(std::to_string(p.value()));
  out.append(",\"offset\":");
  out.append(std::to_string(r.offset.value()));
  out.append(",\"key\":");
  auto key = r.DecodeKey();
  if (key.ok()) {
    key->AppendJson(out);
  } else {
    out.append("null");
  }
  out.append(",\"timestamp\":");
  out.append(std::to_string(r.timestamp.value()));
  out.append(",\"value\":");
  dataflow::AppendStoredValueForDisplay(out, r.value);
  out.append("}\n");
}

// The topic `weir produce` appends to, made by --create if missing; a missing topic's error
// says how to create it.
Result<log::Topic*> ProduceTarget(log::LogStore& log, const ProduceArgs& args) {
  Result<log::Topic*> found = log.GetTopic(args.topic);
  if (!found.ok() && found.status().code() == StatusCode::kNotFound && args.create) {
    log::TopicConfig config;
    config.partitions = args.partitions;
    found = log.CreateTopic(args.topic, config);
  }
  if (!found.ok() && found.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(found.status().message() + " in " + args.data_dir +
                            "; create it with `weir topics create " + args.topic +
                            "` or pass --create");
  }
  return found;
}

// How a line becomes a record: --key-field (of --key-type) and --timestamp-field.
Result<dataflow::RecordExtraction> ProduceExtraction(const ProduceArgs& args) {
  dataflow::RecordExtraction extraction;
  extraction.key.field = args.key_field;
  extraction.timestamp_field = args.timestamp_field;
  if (!args.key_field.empty()) {
    WEIR_ASSIGN_OR_RETURN(extraction.key.type, ParseKeySerde(args.key_type));
  }
  return extraction;
}

// What `weir produce` read from stdin: the records appended, and the malformed lines, kept as
// dead letters for the topic's dead-letter topic.
struct ProducedLines {
  int64_t produced = 0;
  int64_t dead = 0;
  log::RecordBatchBuilder dead_letters;
};

// Appends stdin's JSON lines (blank ones skipped, a '\r' before the '\n' dropped) to the partition
// of each record's key, flushed every 4096 records; a line that is not a record becomes a dead
// letter naming its line number.
Status AppendStdinLines(log::Topic& topic, const dataflow::RecordExtraction& extraction,
                        ProducedLines& out) {
  std::vector<log::RecordBatchBuilder> batches(topic.num_partitions());
  auto flush = [&]() -> Status {
    for (int32_t p = 0; p < topic.num_partitions(); ++p) {
      if (batches[p].empty()) continue;
      WEIR_RETURN_IF_ERROR(topic.partition(PartitionId(p)).Append(batches[p]).status());
      batches[p].Clear();
    }
    return Status::OK();
  };
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  int64_t line_number = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto record = dataflow::DecodeJsonRecord(line, extraction, Key(), EventTime(now));
    if (!record.ok()) {
      Value dl =
          dataflow::MakeDeadLetterValue(record.status().message(), "stdin",
                                        Value::MakeObject({{"line", Value(line_number)}}), line);
      out.dead_letters.Add(EventTime(now), Key(), dl);
      ++out.dead;
      continue;
    }
    // The exact line is what is stored: subscribers get the JSON that was published.
    batches[topic.PartitionFor(record->key).value()].AddRaw(record->timestamp, record->key.serde(),
                                                            record->key.bytes(), line);
    if (++out.produced % 4096 == 0) WEIR_RETURN_IF_ERROR(flush());
  }
  return flush();
}

}  // namespace

int Produce(const ProduceArgs& args) {
  auto local = LocalLog::Open(args.data_dir, args.fsync);
  if (!local.ok()) return Fail(local.status());
  log::LogStore& log = *local->log;
  Result<log::Topic*> topic = ProduceTarget(log, args);
  if (!topic.ok()) return Fail(topic.status());
  Result<dataflow::RecordExtraction> extraction = ProduceExtraction(args);
  if (!extraction.ok()) return Fail(extraction.status());

  ProducedLines lines;
  Status status = AppendStdinLines(**topic, *extraction, lines);
  if (status.ok() && !lines.dead_letters.empty()) {
    log::TopicConfig config;
    auto dlq = log.GetOrCreateTopic(DeadLetterTopicOf(args.topic), config);
    status = dlq.ok() ? (*dlq)->partition(PartitionId(0)).Append(lines.dead_letters).status()
                      : dlq.status();
  }
  if (status.ok()) status = log.FlushAll();
  if (!status.ok()) return Fail(status.WithContext("producing to " + args.topic));
  std::fprintf(stderr, "weir: produced %lld records to %s", static_cast<long long>(lines.produced),
               args.topic.c_str());
  if (lines.dead > 0) {
    std::fprintf(stderr, "; %lld malformed lines went to %s", static_cast<long long>(lines.dead),
                 DeadLetterTopicOf(args.topic).c_str());
  }
  std::fprintf(stderr, "\n");
  return 0;
}

int Consume(const ConsumeArgs& args) {
  // Before the log starts its threads, so that they inherit the blocked signals.
  static std::atomic<bool> stop{false};
  if (args.follow) InstallStopHandler([] { stop = true; });
  auto local = LocalLog::Open(args.data_dir);
  if (!local.ok()) return Fail(local.status());
  auto topic = local->log->GetTopic(args.topic);
  if (!topic.ok()) return Fail(topic.status());
  std::vector<int32_t> partitions;
  if (args.partition >= 0) {
    if (args.partition >= (*topic)->num_partitions()) {
      return Fail(Status::InvalidArgument("topic " + args.topic + " has partitions 0-" +
                                          std::to_string((*topic)->num_partitions() - 1) +
                                          ", not " + std::to_string(args.partition)));
    }
    partitions.push_back(args.partition);
  } else {
    for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) partitions.push_back(p);
  }

  std::vector<std::unique_ptr<log::PartitionReader>> readers;
  for (int32_t p : partitions) {
    log::Partition& partition = (*topic)->partition(PartitionId(p));
    TopicStart from = TopicStart::kOffset;
    int64_t offset = 0;
    if (args.from == "earliest") {
      from = TopicStart::kEarliest;
    } else if (args.from == "latest") {
      from = TopicStart::kLatest;
    } else {
      auto parsed = ParseInt64(args.from, "--from");
      if (!parsed.ok()) {
        return Fail(Status::InvalidArgument("--from must be earliest, latest or an offset, not '" +
                                            args.from + "'"));
      }
      offset = *parsed;
    }
    auto start = app::StartOffset(partition, from, offset, args.topic + "/" + std::to_string(p));
    if (!start.ok()) return Fail(start.status());
    readers.push_back(std::make_unique<log::PartitionReader>(partition, *start));
  }

  int64_t printed = 0;
  std::string out;
  while (!stop) {
    uint64_t seen = local->log->ChangeEpoch();
    bool any = false;
    for (size_t i = 0; i < readers.size(); ++i) {
      auto records = readers[i]->Next(4096);
      if (!records.ok()) return Fail(records.status());
      for (const log::StoredRecord& r : *records) {
        if (args.max_records >= 0 && printed >= args.max_records) break;
        AppendConsumedLine(out, r, PartitionId(partitions[i]));
        ++printed;
      }
      any |= !records->empty();
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
    std::fflush(stdout);
    if (args.max_records >= 0 && printed >= args.max_records) break;
    if (!any) {
      if (!args.follow) break;
      local->log->WaitForChange(seen, std::chrono::milliseconds(200));
    }
  }
  return 0;
}

int TopicsCreate(const TopicArgs& args) {
  auto local = LocalLog::Open(args.data_dir);
  if (!local.ok()) return Fail(local.status());
  log::TopicConfig config;
  config.partitions = args.partitions;
  config.retention_bytes = args.retention_bytes;
  config.retention_age = std::chrono::milliseconds(args.retention_ms);
  config.segment_bytes = args.segment_bytes;
  auto topic = local->log->CreateTopic(args.name, config);
  if (!topic.ok()) return Fail(topic.status());
  std::printf("created topic %s with %d partitions\n", args.name.c_str(), args.partitions);
  return 0;
}

int TopicsList(const TopicArgs& args) {
  auto local = LocalLog::Open(args.data_dir);
  if (!local.ok()) return Fail(local.status());
  for (const std::string& name : local->log->ListTopics()) std::printf("%s\n", name.c_str());
  return 0;
}

int TopicsDescribe(const TopicArgs& args) {
  auto local = LocalLog::Open(args.data_dir);
  if (!local.ok()) return Fail(local.status());
  auto found = local->log->GetTopic(args.name);
  if (!found.ok()) return Fail(found.status());
  log::Topic* topic = *found;
  const log::TopicConfig& c = topic->config();
  std::printf("topic %s: %d partitions, retention %s / %s, segments of %lld bytes%s\n",
              args.name.c_str(), topic->num_partitions(),
              c.retention_bytes < 0 ? "unlimited bytes"
                                    : (std::to_string(c.retention_bytes) + " bytes").c_str(),
              c.retention_age.count() < 0
                  ? "unlimited age"
                  : (std::to_string(c.retention_age.count()) + " ms").c_str(),
              static_cast<long long>(c.segment_bytes),
              topic->owner().empty() ? "" : (", written by pipeline " + topic->owner()).c_str());
  std::printf("%-10s %15s %15s %15s\n", "partition", "first offset", "next offset", "bytes");
  for (int32_t p = 0; p < topic->num_partitions(); ++p) {
    log::Partition& partition = topic->partition(PartitionId(p));
    std::printf("%-10d %15lld %15lld %15lld\n", p,
                static_cast<long long>(partition.FirstOffset().value()),
                static_cast<long long>(partition.NextOffset().value()),
                static_cast<long long>(partition.SizeBytes()));
  }
  return 0;
}

}  // namespace weir::cli
