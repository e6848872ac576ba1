// A topic's archive: the retention hold (the log keeps what the archive lacks) and the reads a
// subscriber below the log's retention catches up through. The archive view itself is written
// by the materializer like any view (view.h, records.h: its columns are fixed).
#include <algorithm>

#include "lake/lake.h"
#include "lake/sql_text.h"
#include "sql/database.h"

namespace weir::lake {
namespace {

// The archive view of `topic`, if it has one.
std::optional<CatalogView> ArchiveOf(const Catalog& catalog, std::string_view topic) {
  for (CatalogView& v : catalog.Views()) {
    if (v.spec.archive && v.spec.topic == topic) return std::move(v);
  }
  return std::nullopt;
}

std::string Where(std::string_view topic, int32_t partition) {
  return "the archive of topic " + std::string(topic) + " partition " + std::to_string(partition);
}

}  // namespace

Status Lake::HoldForArchive(std::string_view name) {
  std::optional<CatalogView> view = catalog_->GetView(name);
  if (!view || !view->spec.archive) return Status::OK();
  // Declared before looking: a topic created between the two is born archived, never unheld.
  log_.ArchiveWhenCreated(view->spec.topic);
  Result<log::Topic*> topic = log_.GetTopic(view->spec.topic);
  if (!topic.ok()) return Status::OK();  // created archived, with nothing to raise yet
  WEIR_RETURN_IF_ERROR((*topic)->SetArchived(true));
  std::map<int32_t, ArchiveExtent> extents;
  for (const PartitionRecord& p : catalog_->LivePartitions(name)) {
    auto [it, added] =
        extents.try_emplace(p.topic_partition, ArchiveExtent{p.begin_offset, p.end_offset});
    it->second.first = std::min(it->second.first, p.begin_offset);
    it->second.end = std::max(it->second.end, p.end_offset);
  }
  for (const auto& [tp, extent] : extents) {
    if (tp >= (*topic)->num_partitions()) continue;
    WEIR_RETURN_IF_ERROR(
        (*topic)->partition(PartitionId(tp)).RaiseRetentionFloor(Offset(extent.end)));
  }
  std::lock_guard lock(archive_mu_);
  std::erase_if(archive_extents_,
                [&](const auto& entry) { return entry.first.first == view->spec.topic; });
  for (const auto& [tp, extent] : extents) {
    archive_extents_[{view->spec.topic, tp}] = extent;
  }
  return Status::OK();
}

std::optional<ArchiveExtent> Lake::ArchiveExtentOf(std::string_view topic,
                                                   int32_t partition) const {
  std::lock_guard lock(archive_mu_);
  auto it = archive_extents_.find(std::pair<std::string, int32_t>(topic, partition));
  if (it == archive_extents_.end()) return std::nullopt;
  return it->second;
}

Status Lake::ReadArchive(std::string_view topic, int32_t partition, int64_t from, size_t chunk,
                         const std::function<bool(std::span<const ArchivedMessage>)>& on_chunk) {
  chunk = std::max<size_t>(chunk, 1);
  std::vector<ArchivedMessage> messages(chunk);
  size_t filled = 0;
  bool stopped = false;
  auto hand_over = [&] {
    if (filled > 0 && !stopped) stopped = !on_chunk(std::span(messages.data(), filled));
    filled = 0;
  };
  Status s = ReadArchiveInto(topic, partition, from, messages, filled, hand_over, stopped);
  hand_over();  // what was read in order before an error goes out too: never a gap
  return s;
}

Status Lake::ReadArchiveInto(std::string_view topic, int32_t partition, int64_t from,
                             std::vector<ArchivedMessage>& messages, size_t& filled,
                             const std::function<void()>& hand_over, bool& stopped) {
  const size_t chunk = messages.size();
  std::optional<CatalogView> view = ArchiveOf(*catalog_, topic);
  if (!view) return Status::NotFound("topic " + std::string(topic) + " has no archive");
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(1));
  int64_t pos = from;
  // A file may be retired (a merge, a seal) and deleted a grace after the listing: a read that
  // fails after it made progress lists the partitions again and goes on from where it is.
  int64_t listed_at = -1;
  while (!stopped) {
    std::vector<PartitionRecord> live;
    for (PartitionRecord& p : catalog_->LivePartitions(view->spec.name)) {
      if (p.topic_partition == partition && p.end_offset > pos) live.push_back(std::move(p));
    }
    std::sort(live.begin(), live.end(), [](const PartitionRecord& a, const PartitionRecord& b) {
      return a.begin_offset < b.begin_offset;
    });
    if (live.empty()) break;  // the archive's end
    if (live.front().begin_offset > pos) {
      return Status::OutOfRange(Where(topic, partition) + " does not hold offset " +
                                std::to_string(pos) + ": it starts at " +
                                std::to_string(live.front().begin_offset));
    }
    listed_at = pos;
    bool relist = false;
    for (size_t i = 0; i < live.size() && !stopped && !relist; ++i) {
      const PartitionRecord& p = live[i];
      const std::string path = (options_.dir / p.file).string();
      if (i > 0 && live[i - 1].end_offset != p.begin_offset) {
        return Status::Corruption(Where(topic, partition) + " has a gap: offsets [" +
                                  std::to_string(live[i - 1].end_offset) + ", " +
                                  std::to_string(p.begin_offset) + ") are in no partition");
      }
      if (p.file.empty() || p.rows != p.end_offset - p.begin_offset) {
        return Status::Corruption(Where(topic, partition) + ": partition " +
                                  std::to_string(p.instance) + " holds " + std::to_string(p.rows) +
                                  " rows for offsets [" + std::to_string(p.begin_offset) + ", " +
                                  std::to_string(p.end_offset) + ")");
      }
      Status order;  // a row out of place: never a gap or a duplicate
      Status s = db->Query("SELECT _offset, _value FROM read_parquet(" + SqlString(path) +
                               ") WHERE _offset >= " + std::to_string(pos),
                           [&](const sql::Row& row) {
                             if (stopped || !order.ok()) return;
                             const int64_t offset = row.IsNull(0) ? -1 : row.Int(0);
                             if (offset != pos) {
                               order = Status::Corruption(path + " holds offset " +
                                                          std::to_string(offset) + " where " +
                                                          std::to_string(pos) + " was due");
                               db->Interrupt();
                               return;
                             }
                             ArchivedMessage& m = messages[filled++];
                             m.offset = offset;
                             if (row.IsNull(1)) {
                               m.value.clear();
                             } else {
                               m.value.assign(row.Text(1));
                             }
                             ++pos;
                             if (filled == chunk) {
                               hand_over();
                               if (stopped) db->Interrupt();
                             }
                           });
      if (stopped) break;
      if (!order.ok()) return order.WithContext(Where(topic, partition));
      if (!s.ok()) {
        if (pos > listed_at && s.code() != StatusCode::kCancelled) {
          relist = true;  // perhaps retired and swept meanwhile: list again from here
          continue;
        }
        return s.WithContext(Where(topic, partition) + ": reading " + path);
      }
      if (pos != p.end_offset) {
        return Status::Corruption(Where(topic, partition) + ": " + path + " ends at offset " +
                                  std::to_string(pos) + ", its partition at " +
                                  std::to_string(p.end_offset));
      }
    }
    // Through what was listed (or a relist): more may have been committed since.
  }
  return Status::OK();
}

}  // namespace weir::lake
