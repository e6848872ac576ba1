// Pipelines over NATS JetStream, through the `weir` binary and a real nats-server. Joins: members
// are acknowledged only after their group is processed and checkpointed, and a crash between the
// checkpoint and the acknowledgements redelivers them, which the join deduplicates. A filter:
// what it passes on is written as the bytes the message held.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "app/testing.h"
#include "testing/nats_server.h"
#include "testing/subprocess.h"

namespace weir {
namespace {

using testing::NatsServer;
using testing::ReadTopic;
using testing::Subprocess;
using testing::TempDir;
using testing::WriteLines;

constexpr int kTraces = 300;

class JetStreamJoin : public ::testing::Test {
 protected:
  void SetUp() override {
    nats_.CreateStream("SENSORS", {"a", "b"});
    for (int i = 0; i < kTraces; ++i) {
      const std::string t = std::to_string(i);
      nats_.Publish("a", R"({"trace":"t)" + t + R"(","ts":)" + t + R"(,"side":"a"})");
      nats_.Publish("b", R"({"trace":"t)" + t + R"(","ts":)" + t + R"(,"side":"b"})");
    }
    // Two JetStream inputs joined by trace id; what a crashed run left unacknowledged comes
    // back after 1 s.
    WriteLines(dir_ / "p.yaml",
               {"name: fused", "streams:",
                "  a: {source: {jetstream: {url: '" + nats_.url() +
                    "', stream: SENSORS, subject: a, durable: wa, ack_wait_ms: 1000}, key: trace, "
                    "timestamp: ts, "
                    "bounded: true}}",
                "  b: {source: {jetstream: {url: '" + nats_.url() +
                    "', stream: SENSORS, subject: b, durable: wb, ack_wait_ms: 1000}, key: trace, "
                    "timestamp: ts, "
                    "bounded: true}}",
                "join: {parents: [a, b], mode: trace, trace_field: trace}", "sink: {topic: fused}",
                "checkpoint: {interval_ms: 10000, records: 40}"});
  }

  testing::CommandResult Run(const std::vector<std::string>& env = {}) {
    Subprocess weir({WEIR_BINARY, "run", dir_ / "p.yaml", "--data-dir", dir_ / "data"},
                    dir_.path().string(), "", env);
    return weir.Wait();
  }

  // How many times each trace id was emitted.
  std::map<std::string, int> Emitted() {
    std::map<std::string, int> seen;
    for (const auto& r : ReadTopic(dir_ / "data", "fused")) {
      ++seen[std::string(r.value.Find("trace_id")->as_string())];
    }
    return seen;
  }

  NatsServer nats_;
  TempDir dir_;
};

TEST_F(JetStreamJoin, ACrashBetweenCheckpointAndAckRedeliversAndTheJoinDeduplicates) {
  // Killed right after the first checkpoint's commit point: its groups are in the output, and
  // their members were never acknowledged to JetStream.
  testing::CommandResult crashed =
      Run({"WEIR_FAULT=checkpoint.after_manifest:1", "WEIR_LISTEN=off"});
  ASSERT_EQ(crashed.exit_code, -SIGKILL) << crashed.err;
  // Nothing was acknowledged before it was processed and checkpointed: what was delivered since
  // the last acknowledged checkpoint is still pending at the server.
  EXPECT_GT(nats_.Consumer("SENSORS", "wa").ack_pending, 0);

  testing::CommandResult resumed = Run({"WEIR_LISTEN=off"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // The resumed run saw every message again but emitted only the groups the crashed run's
  // checkpoint did not hold: "600 records in, N out" with N < 300.
  const size_t in = resumed.err.find(" records in, ");
  ASSERT_NE(in, std::string::npos) << resumed.err;
  const int out = std::stoi(resumed.err.substr(in + 13));
  EXPECT_LT(out, kTraces) << resumed.err;
  const std::map<std::string, int> after = Emitted();
  EXPECT_EQ(after.size(), static_cast<size_t>(kTraces));
  for (const auto& [trace, times] : after) EXPECT_EQ(times, 1) << trace << " emitted twice";
  // Everything is acknowledged now, once processed.
  EXPECT_EQ(nats_.Consumer("SENSORS", "wa").ack_pending, 0);
  EXPECT_EQ(nats_.Consumer("SENSORS", "wb").ack_pending, 0);
}

TEST_F(JetStreamJoin, OneUninterruptedRunJoinsEveryTraceOnceAndAcknowledgesEverything) {
  testing::CommandResult run = Run({"WEIR_LISTEN=off"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::map<std::string, int> emitted = Emitted();
  EXPECT_EQ(emitted.size(), static_cast<size_t>(kTraces));
  EXPECT_EQ(nats_.Consumer("SENSORS", "wa").ack_pending, 0);
}

// Messages not as Weir writes JSON (spaces, a number's spelling, an escape) kept by a filter are
// stored in the output topic as they were published; the filter's condition is decided on the
// parsed value.
TEST(JetStreamPipeline, AFilteredMessageIsWrittenAsItsBytes) {
  NatsServer nats;
  TempDir dir;
  nats.CreateStream("READINGS", {"readings"});
  const std::vector<std::string> published = {R"({ "n" : 1.50, "s" : "\u0041b" })", R"({"n":-1})",
                                              R"({"n":  2e0, "tags": [ 1, 2 ]})"};
  for (const std::string& text : published) nats.Publish("readings", text);
  WriteLines(dir / "p.yaml", {"name: kept",
                              "source: {jetstream: {url: '" + nats.url() +
                                  "', stream: READINGS, durable: kept}, bounded: true}",
                              "steps: [{filter: {field: n, gt: 0}}]", "sink: {topic: out}"});
  Subprocess weir({WEIR_BINARY, "run", dir / "p.yaml", "--data-dir", dir / "data"},
                  dir.path().string(), "", {"WEIR_LISTEN=off"});
  testing::CommandResult run = weir.Wait();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> stored;
  for (const auto& r : ReadTopic(dir / "data", "out")) stored.push_back(r.stored);
  EXPECT_EQ(stored, (std::vector<std::string>{published[0], published[2]}));
  EXPECT_EQ(nats.Consumer("READINGS", "kept").ack_pending, 0);
}

}  // namespace
}  // namespace weir
