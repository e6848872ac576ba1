// Murmur2 and KafkaPartition against librdkafka's own partitioner and the Java client's values.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <memory>
#include <random>
#include <string>

#include "log/log.h"

namespace weir::log {
namespace {

// A producer handle and topic handle, as librdkafka's partitioners need; no broker is contacted.
class Librdkafka {
 public:
  Librdkafka() {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (rk_ != nullptr) rkt_ = rd_kafka_topic_new(rk_, "partitioner-test", nullptr);
  }
  ~Librdkafka() {
    if (rkt_ != nullptr) rd_kafka_topic_destroy(rkt_);
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  bool ok() const { return rkt_ != nullptr; }
  int32_t Partition(std::string_view key, int32_t partitions) const {
    return rd_kafka_msg_partitioner_murmur2(rkt_, key.data(), key.size(), partitions, nullptr,
                                            nullptr);
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_topic_t* rkt_ = nullptr;
};

TEST(Murmur2, MatchesKafkaJavaClientValues) {
  // org.apache.kafka.common.utils.UtilsTest#testMurmur2
  EXPECT_EQ(static_cast<int32_t>(Murmur2("21")), -973932308);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("foobar")), -790332482);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("a-little-bit-long-string")), -985981536);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("a-little-bit-longer-string")), -1486304829);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")),
            -58897971);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("abc")), 479470107);
}

TEST(Murmur2, JavaValuesAgreeWithLibrdkafka) {
  Librdkafka kafka;
  ASSERT_TRUE(kafka.ok());
  // With 2^31-1 partitions the partition is the positive hash itself, so the Java values can be
  // checked against librdkafka directly.
  const int32_t max = 0x7fffffff;
  EXPECT_EQ(kafka.Partition("21", max), (-973932308 & 0x7fffffff) % max);
  EXPECT_EQ(kafka.Partition("foobar", max), (-790332482 & 0x7fffffff) % max);
  EXPECT_EQ(kafka.Partition("a-little-bit-long-string", max), (-985981536 & 0x7fffffff) % max);
  EXPECT_EQ(kafka.Partition("a-little-bit-longer-string", max), (-1486304829 & 0x7fffffff) % max);
  EXPECT_EQ(kafka.Partition("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", max),
            (-58897971 & 0x7fffffff) % max);
  EXPECT_EQ(kafka.Partition("abc", max), (479470107 & 0x7fffffff) % max);
}

TEST(KafkaPartition, AgreesWithLibrdkafkaOnRandomKeys) {
  Librdkafka kafka;
  ASSERT_TRUE(kafka.ok());
  std::mt19937_64 rng(2024);
  const int32_t partition_counts[] = {1, 2, 3, 7, 12, 64, 100, 1000, 0x7fffffff};
  for (int i = 0; i < 100000; ++i) {
    std::string key(rng() % 65, '\0');
    for (char& c : key) c = static_cast<char>(rng());
    for (int32_t n : partition_counts) {
      ASSERT_EQ(KafkaPartition(key, n).value(), kafka.Partition(key, n))
          << "key of " << key.size() << " bytes, " << n << " partitions";
    }
  }
}

TEST(KafkaPartition, NullKeyHashesAsEmptyBytes) {
  Librdkafka kafka;
  ASSERT_TRUE(kafka.ok());
  for (int32_t n : {1, 5, 16}) {
    EXPECT_EQ(KafkaPartition({}, n).value(),
              rd_kafka_msg_partitioner_murmur2(nullptr, nullptr, 0, n, nullptr, nullptr));
  }
}

}  // namespace
}  // namespace weir::log
