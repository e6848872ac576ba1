#include "dataflow/clickstream.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "log/log.h"

namespace weir::dataflow {
namespace {

// splitmix64: a fast, well-mixed hash of a counter; every random draw of an event comes from it.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr size_t kUserNameBytes = 32;

// "user-<id>", in `buffer`.
std::string_view FormatUserName(int64_t id, char (&buffer)[kUserNameBytes]) {
  std::memcpy(buffer, "user-", 5);
  auto r = std::to_chars(buffer + 5, buffer + kUserNameBytes, id);
  return std::string_view(buffer, r.ptr - buffer);
}

std::string UserName(int64_t id) {
  char buffer[kUserNameBytes];
  return std::string(FormatUserName(id, buffer));
}

// Pages by popularity: the head of the list is visited most (weights fall off like Zipf's).
constexpr std::array<std::string_view, 16> kPages = {
    "/",           "/products/1", "/search",     "/products/2", "/products/3", "/cart",
    "/products/4", "/deals",      "/products/5", "/checkout",   "/products/6", "/account",
    "/products/7", "/help",       "/products/8", "/about"};
constexpr std::array<std::string_view, 8> kCountries = {"US", "DE", "FR", "GB",
                                                        "IN", "BR", "JP", "ES"};

std::string_view PickPage(uint64_t draw) {
  // P(rank k) proportional to 1/(k+1): cumulative weights scaled to 1000.
  static const std::array<uint32_t, kPages.size()> kCumulative = [] {
    std::array<uint32_t, kPages.size()> c{};
    double total = 0;
    for (size_t k = 0; k < kPages.size(); ++k) total += 1.0 / static_cast<double>(k + 1);
    double run = 0;
    for (size_t k = 0; k < kPages.size(); ++k) {
      run += 1.0 / static_cast<double>(k + 1);
      c[k] = static_cast<uint32_t>(run / total * 1000);
    }
    c.back() = 1000;
    return c;
  }();
  uint32_t x = static_cast<uint32_t>(draw % 1000);
  size_t k = std::upper_bound(kCumulative.begin(), kCumulative.end(), x) - kCumulative.begin();
  return kPages[std::min(k, kPages.size() - 1)];
}

}  // namespace

ClickstreamModel::ClickstreamModel(const GeneratorOptions& options) : options_(options) {
  int32_t partitions = std::max<int32_t>(1, options_.partitions);
  options_.partitions = partitions;
  users_by_partition_.resize(partitions);
  for (int64_t id = 0; id < std::max<int64_t>(1, options_.users); ++id) {
    users_by_partition_[log::KafkaPartition(UserName(id), partitions).value()].push_back(
        static_cast<int32_t>(id));
  }
  for (auto& users : users_by_partition_) {
    if (users.empty()) users.push_back(0);  // a partition no user hashes to still generates
  }
  double per_partition_rate = std::max(1e-9, options_.events_per_second) / partitions;
  int64_t smallest = static_cast<int64_t>(users_by_partition_[0].size());
  for (const auto& users : users_by_partition_)
    smallest = std::min<int64_t>(smallest, users.size());
  // About one event every 8 s per active user, at most active_fraction of the users active at
  // once; a user stays active about 4 periods (and, at the default fifth, quiet for 16).
  int64_t most_active = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(smallest) * options_.active_fraction));
  int64_t largest = 0;
  for (const auto& users : users_by_partition_) largest = std::max<int64_t>(largest, users.size());
  active_window_ =
      options_.active_fraction >= 1
          ? largest  // capped at each partition's size when drawing
          : std::clamp<int64_t>(static_cast<int64_t>(per_partition_rate * 8), 1, most_active);
  window_step_ = std::max<int64_t>(1, active_window_ / 4);
}

int64_t ClickstreamModel::EventsIn(PartitionId p) const {
  if (options_.events < 0) return -1;
  int64_t base = options_.events / options_.partitions;
  return base + (p.value() < options_.events % options_.partitions ? 1 : 0);
}

Record ClickstreamModel::EventAt(PartitionId p, int64_t sequence) const {
  Record record;
  WriteEventAt(p, sequence, record);
  return record;
}

void ClickstreamModel::WriteEventAt(PartitionId p, int64_t sequence, Record& into) const {
  const std::vector<int32_t>& users = users_by_partition_[p.value()];
  uint64_t state = Mix(options_.seed ^ (uint64_t(p.value()) << 48) ^ Mix(uint64_t(sequence)));
  auto draw = [&state] { return state = Mix(state); };

  int64_t global_sequence = sequence * options_.partitions + p.value();
  int64_t on_time =
      options_.start_time_ms + static_cast<int64_t>(static_cast<double>(global_sequence) * 1000.0 /
                                                    options_.events_per_second);
  int64_t ts = on_time;
  uint64_t late_draw = draw();
  if (options_.max_out_of_order_ms > 0 && late_draw % 100 < 5) {
    ts -= static_cast<int64_t>(draw() % static_cast<uint64_t>(options_.max_out_of_order_ms));
  }
  int64_t period = (on_time - options_.start_time_ms) / kPeriodMs;
  int64_t n = static_cast<int64_t>(users.size());
  int64_t window_start = (period * window_step_) % n;
  const int64_t window = std::min(active_window_, n);
  char user_buffer[kUserNameBytes];
  const std::string_view user = FormatUserName(
      users[(window_start + static_cast<int64_t>(draw() % window)) % n], user_buffer);

  uint64_t action_draw = draw() % 100;
  std::string_view action = action_draw < 70   ? "view"
                            : action_draw < 90 ? "click"
                            : action_draw < 97 ? "add_to_cart"
                                               : "purchase";
  uint64_t device_draw = draw() % 100;
  std::string_view device = device_draw < 55 ? "mobile" : device_draw < 95 ? "desktop" : "tablet";

  Value::ObjectWriter fields(into.value);
  fields.Add("user").AssignString(user);
  fields.Add("page").AssignString(PickPage(draw()));
  fields.Add("action").AssignString(action);
  fields.Add("device").AssignString(device);
  fields.Add("country").AssignString(kCountries[draw() % kCountries.size()]);
  fields.Add("ts") = ts;
  if (action == "purchase") {
    fields.Add("amount") = static_cast<double>(500 + draw() % 29500) / 100.0;
  }
  into.key = Key::String(user);
  into.timestamp = EventTime(ts);
  into.headers.clear();
}

}  // namespace weir::dataflow
