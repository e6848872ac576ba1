// Kafka's default partitioner, bit for bit: the Java client's Utils.murmur2 and
// librdkafka's rd_murmur2 (MurmurHash2 with Kafka's seed), then toPositive(h) % partitions.
#include <cstring>

#include "log/log.h"

namespace weir::log {

uint32_t Murmur2(std::string_view data) {
  constexpr uint32_t kSeed = 0x9747b28c;
  constexpr uint32_t kM = 0x5bd1e995;
  constexpr int kR = 24;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t length = data.size();
  // The Java client seeds with the length as an int: lengths are far below 2^31 here.
  uint32_t h = kSeed ^ static_cast<uint32_t>(length);
  const size_t blocks = length / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k;
    std::memcpy(&k, p + 4 * i, 4);  // little-endian, as the Java client assembles the bytes
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  const unsigned char* tail = p + 4 * blocks;
  switch (length & 3) {
    case 3:
      h ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= tail[0];
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

PartitionId KafkaPartition(std::string_view key_bytes, int32_t partitions) {
  WEIR_CHECK(partitions > 0, "KafkaPartition needs at least one partition");
  return PartitionId(
      static_cast<int32_t>((Murmur2(key_bytes) & 0x7fffffff) % static_cast<uint32_t>(partitions)));
}

}  // namespace weir::log
