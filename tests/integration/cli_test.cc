// End-to-end tests of the `weir` binary: what a user types, what they see.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "app/testing.h"
#include "log/log.h"
#include "testing/subprocess.h"

namespace weir {
namespace {

// `weir run` serves its topics, by default on port 8080: tests run side by side, so each run
// takes any free port.
const bool kAnyFreePort = setenv("WEIR_LISTEN", "127.0.0.1:0", 1) == 0;

using testing::CommandResult;
using testing::RunCommand;
using testing::Subprocess;
using testing::TempDir;

class Cli : public ::testing::Test {
 protected:
  CommandResult Weir(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), WEIR_BINARY);
    return RunCommand(args, dir_.path().string(), input);
  }
  std::string data() const { return dir_ / "data"; }
  TempDir dir_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(Cli, EveryCommandHasHelp) {
  for (std::vector<std::string> cmd : {std::vector<std::string>{},
                                       {"run"},
                                       {"demo"},
                                       {"produce"},
                                       {"consume"},
                                       {"topics"},
                                       {"topics", "create"},
                                       {"topics", "list"},
                                       {"topics", "describe"},
                                       {"bench"},
                                       {"bench", "log"},
                                       {"bench", "pipeline"}}) {
    cmd.push_back("--help");
    CommandResult r = Weir(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd.front();
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd.front() << r.out;
  }
}

TEST_F(Cli, ProducedLinesComeBackExactlyOnTheirKafkaPartitions) {
  ASSERT_EQ(
      Weir({"topics", "create", "clicks", "--partitions", "3", "--data-dir", data()}).exit_code, 0);
  std::string input;
  std::vector<std::string> sent;
  for (int i = 0; i < 300; ++i) {
    sent.push_back(R"({"user": "u)" + std::to_string(i % 17) + R"(", "ts": )" +
                   std::to_string(1000 + i) + R"(, "note": "spaces kept"})");
    input += sent.back() + "\n";
  }
  CommandResult produced = Weir(
      {"produce", "clicks", "--key-field", "user", "--timestamp-field", "ts", "--data-dir", data()},
      input);
  ASSERT_EQ(produced.exit_code, 0) << produced.err;
  EXPECT_NE(produced.err.find("produced 300 records to clicks"), std::string::npos);

  CommandResult consumed = Weir({"consume", "clicks", "--data-dir", data()});
  ASSERT_EQ(consumed.exit_code, 0) << consumed.err;
  std::vector<std::string> lines = Lines(consumed.out);
  ASSERT_EQ(lines.size(), 300u);
  std::multiset<std::string> got;
  for (const std::string& line : lines) {
    auto v = Value::Parse(line);
    ASSERT_TRUE(v.ok()) << line;
    std::string key(v->Find("key")->as_string());
    EXPECT_EQ(v->Find("partition")->as_int(), log::KafkaPartition(key, 3).value());
    size_t at = line.find("\"value\":");
    got.insert(line.substr(at + 8, line.size() - at - 9));  // the stored bytes, verbatim
  }
  EXPECT_EQ(got, std::multiset<std::string>(sent.begin(), sent.end()));

  CommandResult one = Weir(
      {"consume", "clicks", "--partition", "1", "--from", "2", "--max", "1", "--data-dir", data()});
  ASSERT_EQ(one.exit_code, 0);
  ASSERT_EQ(Lines(one.out).size(), 1u);
  EXPECT_NE(one.out.find(R"("partition":1,"offset":2)"), std::string::npos) << one.out;
}

TEST_F(Cli, MalformedProducedLinesGoToTheTopicsDeadLetterTopic) {
  ASSERT_EQ(Weir({"topics", "create", "t", "--data-dir", data()}).exit_code, 0);
  CommandResult r = Weir({"produce", "t", "--key-field", "id", "--key-type", "int",
                          "--timestamp-field", "ts", "--data-dir", data()},
                         "{\"id\": 1, \"ts\": 5}\n{oops\n{\"id\": \"x\", \"ts\": 5}\n{\"id\": 2}\n"
                         "{\"id\": 3, \"ts\": 6}\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("produced 2 records to t; 3 malformed lines went to t.dlq"),
            std::string::npos)
      << r.err;
  std::vector<std::string> dead = Lines(Weir({"consume", "t.dlq", "--data-dir", data()}).out);
  ASSERT_EQ(dead.size(), 3u);
  EXPECT_NE(dead[0].find("malformed JSON"), std::string::npos);
  EXPECT_NE(dead[0].find(R"("line":2)"), std::string::npos);
  EXPECT_NE(dead[0].find(R"("raw":"{oops")"), std::string::npos);
  EXPECT_NE(dead[1].find("key field 'id' must be an integer, found string"), std::string::npos);
  EXPECT_NE(dead[2].find("timestamp field 'ts' is missing"), std::string::npos);
}

TEST_F(Cli, AnUnknownTopicIsOneLineWithTheWayOut) {
  CommandResult r = Weir({"produce", "ghost", "--data-dir", data()}, "{}\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("unknown topic 'ghost'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("weir topics create ghost"), std::string::npos) << r.err;
  CommandResult c = Weir({"consume", "ghost", "--data-dir", data()});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("unknown topic 'ghost'"), std::string::npos);
}

TEST_F(Cli, ConsumeRefusesOffsetsItCannotServe) {
  ASSERT_EQ(Weir({"topics", "create", "t", "--data-dir", data()}).exit_code, 0);
  ASSERT_EQ(Weir({"produce", "t", "--data-dir", data()}, "{}\n{}\n").exit_code, 0);
  CommandResult ahead = Weir({"consume", "t", "--from", "9", "--data-dir", data()});
  EXPECT_NE(ahead.exit_code, 0);
  EXPECT_NE(ahead.err.find("offset 9 is beyond the end of t/0 (next offset 2)"), std::string::npos)
      << ahead.err;
  CommandResult bad = Weir({"consume", "t", "--from", "soon", "--data-dir", data()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--from must be earliest, latest or an offset"), std::string::npos);
}

TEST_F(Cli, ADataDirectoryInUseIsRefusedNamingTheHolder) {
  ASSERT_EQ(Weir({"topics", "create", "t", "--data-dir", data()}).exit_code, 0);
  Subprocess follower({WEIR_BINARY, "consume", "t", "--follow", "--data-dir", data()},
                      dir_.path().string());
  // The follower holds the directory once it prints nothing and is still running.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_FALSE(follower.Done());
  CommandResult r = Weir({"produce", "t", "--data-dir", data()}, "{}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is in use by another process (pid " + std::to_string(follower.pid()) + ")"),
            std::string::npos)
      << r.err;
  follower.Kill(SIGTERM);
  EXPECT_EQ(follower.Wait().exit_code, 0);
}

TEST_F(Cli, CtrlCStopsARunAfterAFinalCheckpointAndTheNextRunResumes) {
  testing::WriteLines(dir_ / "gen.yaml",
                      {"name: gen", "source: {generator: {users: 50}, rate: 5000}",
                       "steps: [{aggregate: {n: count}}]", "sink: {topic: counts}"});
  Subprocess run({WEIR_BINARY, "run", dir_ / "gen.yaml", "--data-dir", data()},
                 dir_.path().string());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  run.Kill(SIGINT);
  CommandResult stopped = run.Wait();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.err.find("stopping"), std::string::npos) << stopped.err;
  EXPECT_NE(stopped.err.find("gen stopped:"), std::string::npos) << stopped.err;
  size_t first = Lines(Weir({"consume", "counts", "--data-dir", data()}).out).size();
  EXPECT_GT(first, 0u);

  Subprocess again({WEIR_BINARY, "run", dir_ / "gen.yaml", "--data-dir", data()},
                   dir_.path().string());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  again.Kill(SIGTERM);
  CommandResult resumed = again.Wait();
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming gen from checkpoint"), std::string::npos) << resumed.err;
  // The two runs together: per key, counts 1, 2, 3... with no gap and no repeat.
  std::map<std::string, int64_t> last;
  for (const std::string& line : Lines(Weir({"consume", "counts", "--data-dir", data()}).out)) {
    auto v = Value::Parse(line);
    ASSERT_TRUE(v.ok());
    int64_t& n = last[std::string(v->Find("key")->as_string())];
    ASSERT_EQ(v->FindPath("value.n")->as_int(), n + 1) << line;
    n = v->FindPath("value.n")->as_int();
  }
  EXPECT_GT(Lines(Weir({"consume", "counts", "--data-dir", data()}).out).size(), first);
}

// A repartition topic stores its values in the binary form (log::ValueEncoding): `weir consume`
// still shows each as the JSON object that went in, and a stored value that is binary-marked
// but malformed is shown as its bytes (base64), as any value that is not JSON.
TEST_F(Cli, ARepartitionTopicsBinaryValuesAreShownAsJson) {
  std::vector<std::string> input;
  for (int i = 0; i < 20; ++i) {
    input.push_back(R"({"user":"u)" + std::to_string(i % 3) + R"(","page":"p)" +
                    std::to_string(i % 4) + R"(","ts":)" + std::to_string(1000 + i) +
                    R"(,"s":"café \"q\"","x":-1.5})");
  }
  testing::WriteLines(dir_ / "in.jsonl", input);
  testing::WriteLines(
      dir_ / "p.yaml",
      {"name: rp", "source: {file: " + (dir_ / "in.jsonl") + ", key: user, timestamp: ts}",
       "steps: [{group_by: page}, {aggregate: {n: count}}]", "sink: {topic: counts}"});
  ASSERT_EQ(Weir({"run", dir_ / "p.yaml", "--data-dir", data(), "-q"}).exit_code, 0);
  const std::string topic = "rp.repartition.group-by-1";
  {
    auto log = log::LogStore::Open({.dir = data() + "/log"});
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log::PartitionReader reader((*(*log)->GetTopic(topic))->partition(PartitionId(0)), Offset(0));
    auto records = reader.Next(100);
    ASSERT_TRUE(records.ok());
    int binary = 0;
    for (const log::StoredRecord& r : *records) {
      if (r.value.empty()) continue;  // a watermark mark
      EXPECT_TRUE(log::IsBinaryValue(r.value)) << r.offset.value();
      ++binary;
    }
    EXPECT_GT(binary, 0);
  }
  std::multiset<std::string> shown;
  for (const std::string& line : Lines(Weir({"consume", topic, "--data-dir", data()}).out)) {
    const Value parsed = *Value::Parse(line);
    const Value* value = parsed.Find("value");
    if (value->is_object()) shown.insert(value->ToJson());  // not a watermark mark ("")
  }
  EXPECT_EQ(shown, std::multiset<std::string>(input.begin(), input.end()));

  {
    auto log = log::LogStore::Open({.dir = data() + "/log"});
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log::Topic* raw = *(*log)->CreateTopic("raw", log::TopicConfig{});
    log::RecordBatchBuilder bad;
    bad.AddRaw(EventTime(1), KeySerde::kNull, "", std::string(log::kBinaryValueMark) + "\x09");
    ASSERT_TRUE(raw->partition(PartitionId(0)).Append(bad, log::Durability::kWaitDurable).ok());
  }
  std::vector<std::string> raw = Lines(Weir({"consume", "raw", "--data-dir", data()}).out);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_EQ(Value::Parse(raw[0])->GetString("value"), "/wEJ") << raw[0];
}

TEST_F(Cli, AYamlErrorNamesThePathAndExitsWithTwo) {
  testing::WriteLines(dir_ / "p.yaml", {"source: {file: in.jsonl, key: user}",
                                        "steps:", "  - group_by: {field: page, partitions: many}",
                                        "sink: {stdout: true}"});
  CommandResult r = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("steps[0].group_by.partitions: expected an integer, found 'many' (line 3"),
            std::string::npos)
      << r.err;
}

// `weir run` knows the engine's kinds, the Nexmark source and the JetStream connector.
TEST_F(Cli, ASourceMustBeExactlyOneOfTheKindsWeirKnows) {
  testing::WriteLines(dir_ / "p.yaml",
                      {"source: {file: a, topic: b, key: k}", "sink: {stdout: true}"});
  CommandResult r = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("source: expected exactly one of file, topic, generator, nexmark, jetstream"),
      std::string::npos)
      << r.err;
}

TEST_F(Cli, ANexmarkSourceRunsTheBenchmarksEvents) {
  // 5000 events: 100 people, 300 auctions and 4600 bids (1 : 3 : 46 of every 50).
  testing::WriteLines(dir_ / "p.yaml",
                      {"name: nexmark", "source: {nexmark: {partitions: 2, events: 5000}}",
                       "steps:", "  - filter: {field: type, eq: bid}",
                       "  - select: [auction, price]", "sink: {file: bids.jsonl}"});
  CommandResult r = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("5000 records in, 4600 out"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadLines(dir_ / "bids.jsonl").size(), 4600u);
}

// A discard sink drops what reaches it, yet the run reads, checkpoints and resumes as any other:
// a second run over the same finished input reads nothing again.
TEST_F(Cli, ADiscardSinkDropsItsRecordsAndTheRunStillResumes) {
  testing::WriteLines(dir_ / "p.yaml",
                      {"name: blackhole", "source: {nexmark: {partitions: 2, events: 5000}}",
                       "steps:", "  - filter: {field: type, eq: bid}", "sink: {discard: true}"});
  CommandResult first = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("5000 records in, 4600 out"), std::string::npos) << first.err;
  CommandResult second = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("0 records in, 0 out"), std::string::npos) << second.err;

  testing::WriteLines(dir_ / "off.yaml",
                      {"source: {nexmark: {events: 10}}", "sink: {discard: false}"});
  CommandResult off = Weir({"run", dir_ / "off.yaml", "--data-dir", data()});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("sink.discard: discard: false means nothing"), std::string::npos)
      << off.err;
}

// A server that cannot listen fails at start with one line naming the address: a malformed one
// is bad configuration (2), one in use is not (1).
TEST_F(Cli, AServerThatCannotListenSaysWhereAndExits) {
  CommandResult bad = Weir({"serve", "--data-dir", data(), "--listen", "nonsense"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(Lines(bad.err).size(), 1u) << bad.err;
  EXPECT_NE(bad.err.find("listen address 'nonsense'"), std::string::npos) << bad.err;

  // Hold a port, then ask weir to listen on it.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  CommandResult busy = Weir({"serve", "--data-dir", data(), "--listen", listen});
  ::close(holder);
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_EQ(Lines(busy.err).size(), 1u) << busy.err;
  EXPECT_NE(busy.err.find("cannot listen on " + listen), std::string::npos) << busy.err;
}

TEST_F(Cli, AnUnreadableInputFileIsNamed) {
  testing::WriteLines(dir_ / "p.yaml",
                      {"source: {file: missing.jsonl, key: user}", "sink: {stdout: true}"});
  CommandResult r = Weir({"run", dir_ / "p.yaml", "--data-dir", data()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot read input file " + (dir_ / "missing.jsonl") + ": No such file"),
            std::string::npos)
      << r.err;
}

// A filesystem of `bytes` at `path` for the length of a test: a tmpfs when we may mount one
// (root, as in CI); otherwise nothing is mounted and `limit_argv` holds a file-size limit that
// fails the same writes the same way.
struct SmallDisk {
  SmallDisk(const std::string& path, size_t bytes) : path(path) {
    std::filesystem::create_directories(path);
    mounted =
        ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) == 0;
    if (!mounted) limit_argv = {"/usr/bin/prlimit", "--fsize=" + std::to_string(bytes)};
  }
  ~SmallDisk() {
    if (mounted) ::umount(path.c_str());
  }
  std::string path;
  bool mounted = false;
  std::vector<std::string> limit_argv;
};

TEST_F(Cli, AFullDiskIsReportedAndTheLogStaysReadable) {
  SmallDisk disk(dir_ / "small", 1 << 20);
  std::string data_dir = disk.path + "/data";
  ASSERT_EQ(Weir({"topics", "create", "t", "--data-dir", data_dir}).exit_code, 0);
  std::string input;
  for (int i = 0; i < 30000; ++i) {
    input += R"({"n": )" + std::to_string(i) + R"(, "pad": ")" + std::string(60, 'x') + "\"}\n";
  }
  std::vector<std::string> produce = {WEIR_BINARY, "produce", "t", "--data-dir", data_dir};
  produce.insert(produce.begin(), disk.limit_argv.begin(), disk.limit_argv.end());
  CommandResult r = RunCommand(produce, dir_.path().string(), input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;

  // What the log holds is a clean prefix of the input: readable, in order, nothing torn.
  CommandResult c = Weir({"consume", "t", "--data-dir", data_dir});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  std::vector<std::string> lines = Lines(c.out);
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_NE(lines[i].find(R"("offset":)" + std::to_string(i) + ","), std::string::npos);
    ASSERT_NE(lines[i].find(R"({"n": )" + std::to_string(i) + ","), std::string::npos);
  }
}

TEST_F(Cli, APipelineOnAFullDiskStopsWithTheReasonAndResumesOnceThereIsRoom) {
  std::vector<std::string> input;
  for (int i = 0; i < 40000; ++i) {
    input.push_back(R"({"user":"u)" + std::to_string(i % 300) + R"(","page":"p)" +
                    std::to_string(i % 41) + R"(","ts":)" + std::to_string(1000 + i) +
                    R"(,"pad":")" + std::string(80, 'x') + "\"}");
  }
  testing::WriteLines(dir_ / "in.jsonl", input);
  auto pipeline = [&](const std::string& out) {
    return std::vector<std::string>{
        "source: {file: " + (dir_ / "in.jsonl") + ", key: user, timestamp: ts}",
        "steps: [{group_by: page}, {aggregate: {n: count}}]",
        "sinks: [{file: " + out + "}, {topic: counts}]", "checkpoint: {interval_ms: 20}"};
  };
  testing::WriteLines(dir_ / "reference.yaml", pipeline(dir_ / "reference.jsonl"));
  ASSERT_EQ(
      Weir({"run", dir_ / "reference.yaml", "--data-dir", dir_ / "reference-data", "-q"}).exit_code,
      0);

  SmallDisk disk(dir_ / "small", 24 << 20);
  testing::WriteLines(dir_ / "full.yaml", pipeline(disk.path + "/out.jsonl"));
  std::vector<std::string> run = {WEIR_BINARY,         "run", dir_ / "full.yaml", "--data-dir",
                                  disk.path + "/data", "-q"};
  if (disk.mounted) {
    // Leave about 3 MiB free: less than the run writes.
    std::ofstream filler(disk.path + "/filler");
    filler << std::string(21 << 20, 'f');
  } else {
    run.insert(run.begin(), disk.limit_argv.begin(), disk.limit_argv.end());
  }
  CommandResult full = RunCommand(run, dir_.path().string());
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_TRUE(full.err.find("disk full") != std::string::npos ||
              full.err.find("file size limit") != std::string::npos ||
              full.err.find("No space left") != std::string::npos)
      << full.err;
  EXPECT_EQ(Lines(full.err).size(), 1u) << full.err;

  if (disk.mounted) {
    std::filesystem::remove(disk.path + "/filler");
  } else {
    run.erase(run.begin(), run.begin() + disk.limit_argv.size());
  }
  CommandResult resumed = RunCommand(run, dir_.path().string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  std::vector<std::string> got = testing::ReadLines(disk.path + "/out.jsonl");
  std::vector<std::string> want = testing::ReadLines(dir_ / "reference.jsonl");
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the resumed run's output differs from an uninterrupted run";
}

TEST_F(Cli, TheDemoRunsAndSaysWhereItsOutputsAre) {
  CommandResult r = Weir({"demo", "--events", "3000", "--data-dir", data()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 3000 clicks and 2 very late ones; 3 malformed lines.
  EXPECT_NE(r.out.find("3002 records in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 dead letters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 late"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("user sessions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("page-stats.jsonl"), std::string::npos);
  EXPECT_NE(r.out.find("Try next"), std::string::npos);
  // The clickstream as a lake view, and SQL over it.
  EXPECT_NE(r.out.find("8. The clickstream as a lake view"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("page         purchases  revenue"), std::string::npos) << r.out;
  // Run twice: the demo starts over and agrees with itself.
  CommandResult again = Weir({"demo", "--events", "3000", "--data-dir", data()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Lines(Weir({"consume", "demo.page-stats", "--data-dir", data()}).out).size(), 3002u);
  std::vector<std::string> sessions =
      Lines(Weir({"consume", "demo.sessions", "--data-dir", data()}).out);
  int64_t clicks = 0;
  for (const std::string& line : sessions)
    clicks += Value::Parse(line)->FindPath("value.events")->as_int();
  EXPECT_EQ(clicks, 3000) << "every click but the 2 late ones is in exactly one session";
  // Sensor fusion: one frame per camera frame, 12 of them at quorum without their lidar.
  EXPECT_NE(again.out.find("600 fused frames"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("12 without their lost lidar sweep"), std::string::npos);
  EXPECT_EQ(Lines(Weir({"consume", "demo.fused", "--data-dir", data()}).out).size(), 600u);
  // The second demo's view holds its own clicks, once.
  CommandResult view = Weir(
      {"query", "SELECT count(*) AS n FROM demo_clicks", "--format", "csv", "--data-dir", data()});
  EXPECT_EQ(view.out, "n\r\n3002\r\n") << view.err;
}

}  // namespace
}  // namespace weir
