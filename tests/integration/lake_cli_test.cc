// End-to-end tests of the lake on the command line (`weir views ...`, `weir query`, the views of
// `weir run`, POST /query of `weir run --listen` and `weir serve`): the `weir` binary over a
// real data directory, real DuckDB and Parquet, and curl for the HTTP endpoint.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "app/testing.h"
#include "testing/subprocess.h"
#include "weir/value.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using testing::CommandResult;
using testing::RunCommand;
using testing::Subprocess;
using testing::TempDir;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Polls `condition` for up to 30 s.
bool Eventually(const std::function<bool()>& condition) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

// Clicks of three users: views and purchases, one with a note that CSV must quote.
const char* const kClicks =
    R"({"user":"ann","page":"/","action":"view","ts":1767225600000})"
    "\n"
    R"({"user":"bob","page":"/cart","action":"purchase","amount":20.5,"ts":1767225601000})"
    "\n"
    R"({"user":"ann","page":"/cart","action":"purchase","amount":10.25,"ts":1767225602000})"
    "\n"
    R"({"user":"cy","page":"/","action":"view","note":"a, \"quoted\" note","ts":1767225603000})"
    "\n";

const std::vector<std::string> kViews = {
    "views:",
    "  clicks:",
    "    topic: clicks",
    "  purchases:",
    "    topic: clicks",
    "    sql: SELECT _key AS user, page, amount, _ts FROM records WHERE action = 'purchase'",
    "    sort: [_ts]",
};

const std::string kRevenue =
    "SELECT page, count(*) AS n, sum(amount) AS revenue FROM clicks GROUP BY page ORDER BY page";

class LakeCli : public ::testing::Test {
 protected:
  CommandResult Weir(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), WEIR_BINARY);
    return RunCommand(args, dir_.path().string(), input);
  }
  // `weir ARGS --data-dir DATA`.
  CommandResult InData(std::vector<std::string> args) {
    args.push_back("--data-dir");
    args.push_back(data());
    return Weir(std::move(args));
  }
  std::string data() const { return dir_ / "data"; }

  // The clicks produced to the topic `clicks` and the two views registered.
  void ProduceAndRegister() {
    CommandResult produced = Weir({"produce", "clicks", "--create", "--key-field", "user",
                                   "--timestamp-field", "ts", "--data-dir", data()},
                                  kClicks);
    ASSERT_EQ(produced.exit_code, 0) << produced.err;
    testing::WriteLines(dir_ / "views.yaml", kViews);
    CommandResult created = InData({"views", "create", dir_ / "views.yaml"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    EXPECT_EQ(created.out,
              "view clicks on topic clicks: registered\n"
              "view purchases on topic clicks: registered\n");
  }

  // The address in <data>/server.json, once the holder wrote it.
  std::string ServerAddress() {
    std::string address;
    EXPECT_TRUE(Eventually([&] {
      auto json = Value::Parse(testing::ReadLines(data() + "/server.json").empty()
                                   ? ""
                                   : testing::ReadLines(data() + "/server.json")[0]);
      if (!json.ok() || !json->GetString("listen")) return false;
      address = std::string(*json->GetString("listen"));
      return true;
    })) << "no server.json";
    return address;
  }

  // curl -s -o BODY -w STATUS ARGS...: {HTTP status, body}.
  std::pair<std::string, std::string> Curl(std::vector<std::string> args) {
    const std::string body_file = dir_ / "curl.body";
    args.insert(args.begin(), {"/usr/bin/curl", "-s", "-o", body_file, "-w", "%{http_code}"});
    CommandResult r = RunCommand(args, dir_.path().string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(body_file);
    std::stringstream body;
    body << in.rdbuf();
    return {r.out, body.str()};
  }

  TempDir dir_;
};

TEST_F(LakeCli, EveryLakeCommandHasHelp) {
  for (std::vector<std::string> cmd : {std::vector<std::string>{"views"},
                                       {"views", "create"},
                                       {"views", "list"},
                                       {"views", "describe"},
                                       {"views", "rebuild"},
                                       {"views", "merge"},
                                       {"query"}}) {
    cmd.push_back("--help");
    CommandResult r = Weir(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd.back();
    EXPECT_TRUE(Contains(r.out, "Usage")) << r.out;
  }
}

TEST_F(LakeCli, ViewsOfAProducedTopicAnswerQueriesInEachFormat) {
  ProduceAndRegister();
  // Registered, not yet materialized: the query brings the view up to date first.
  CommandResult list = InData({"views", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ASSERT_EQ(Lines(list.out).size(), 3u) << list.out;
  EXPECT_TRUE(Lines(list.out)[1].starts_with("clicks ")) << list.out;

  CommandResult table = InData({"query", kRevenue});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out,
            "page   n  revenue\n"
            "-----  -  -------\n"
            "/      2  NULL\n"
            "/cart  2  30.75\n"
            "(2 rows)\n");
  CommandResult jsonl = InData({"query", kRevenue, "--format", "jsonl"});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  EXPECT_EQ(jsonl.out,
            "{\"page\":\"/\",\"n\":2,\"revenue\":null}\n"
            "{\"page\":\"/cart\",\"n\":2,\"revenue\":30.75}\n");
  CommandResult csv = InData({"query", kRevenue, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "page,n,revenue\r\n/,2,\r\n/cart,2,30.75\r\n");
  // RFC 4180: quotes doubled inside a quoted field; NULL empty, the empty string "".
  CommandResult quoted = InData({"query",
                                 "SELECT note, NULL AS nothing, '' AS empty FROM clicks "
                                 "WHERE note IS NOT NULL",
                                 "--format", "csv"});
  EXPECT_EQ(quoted.out, "note,nothing,empty\r\n\"a, \"\"quoted\"\" note\",,\"\"\r\n");
  // A query with no row: the csv header alone, an empty table.
  EXPECT_EQ(InData({"query", "SELECT page FROM clicks WHERE false", "--format", "csv"}).out,
            "page\r\n");
  EXPECT_EQ(InData({"query", "SELECT page FROM clicks WHERE false"}).out, "page\n----\n(0 rows)\n");
  // A long table: columns sized by the first 1000 rows, the rest streamed in them.
  CommandResult tall = InData({"query", "SELECT range AS n FROM range(1500)"});
  ASSERT_EQ(tall.exit_code, 0) << tall.err;
  EXPECT_TRUE(tall.out.starts_with("n\n---\n0\n")) << tall.out.substr(0, 40);
  EXPECT_EQ(std::count(tall.out.begin(), tall.out.end(), '\n'), 1503);
  EXPECT_TRUE(tall.out.ends_with("\n1499\n(1500 rows)\n")) << tall.out.substr(tall.out.size() - 40);

  // A view with SQL, joined with the other.
  CommandResult join = InData({"query",
                               "SELECT p.user, p.amount, c.action FROM purchases p JOIN clicks c "
                               "ON c._ts = p._ts ORDER BY p._ts",
                               "--format", "jsonl"});
  ASSERT_EQ(join.exit_code, 0) << join.err;
  EXPECT_EQ(join.out,
            "{\"user\":\"bob\",\"amount\":20.5,\"action\":\"purchase\"}\n"
            "{\"user\":\"ann\",\"amount\":10.25,\"action\":\"purchase\"}\n");

  list = InData({"views", "list"});
  ASSERT_EQ(Lines(list.out).size(), 3u) << list.out;
  EXPECT_EQ(Lines(list.out)[0],
            "view                     topic                    partitions         rows          "
            "bytes  stale");
  EXPECT_TRUE(
      Lines(list.out)[1].starts_with("clicks                   clicks                  "
                                     "          1            4 "))
      << list.out;
  EXPECT_TRUE(
      Lines(list.out)[2].starts_with("purchases                clicks                  "
                                     "          1            2 "))
      << list.out;
  EXPECT_TRUE(Lines(list.out)[2].ends_with(" 0")) << "no stale partition: " << list.out;

  CommandResult describe = InData({"views", "describe", "purchases"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  const std::vector<std::string> lines = Lines(describe.out);
  ASSERT_GE(lines.size(), 14u) << describe.out;
  EXPECT_TRUE(lines[0].starts_with("view purchases on topic clicks: 1 partitions, 2 rows, "))
      << describe.out;
  EXPECT_TRUE(
      lines[1].starts_with("definition: {\"name\":\"purchases\",\"topic\":\"clicks\","
                           "\"sql\":\"SELECT _key AS user"))
      << describe.out;
  EXPECT_TRUE(lines[2].starts_with("schema hash: ")) << describe.out;
  EXPECT_EQ(lines[2].size(), std::string("schema hash: ").size() + 64);
  EXPECT_TRUE(Contains(describe.out,
                       "columns:\n  user                           VARCHAR\n"
                       "  page                           VARCHAR\n"
                       "  amount                         DOUBLE\n"
                       "  _ts                            TIMESTAMP\n"))
      << describe.out;
  EXPECT_TRUE(Contains(describe.out, "record columns (inferred):\n")) << describe.out;
  EXPECT_TRUE(Contains(describe.out, "  note                           varchar\n"));
  const std::string& partition = lines.back();
  EXPECT_TRUE(partition.starts_with("0         0-4  ")) << partition;
  EXPECT_TRUE(Contains(partition, "Z+1h ")) << partition;
  // The event times of the partition's records (its range of the topic, before the view's SQL).
  EXPECT_TRUE(Contains(partition, " 2026-01-01T00:00:00.000Z 2026-01-01T00:00:03.000Z _ts "))
      << partition;
  EXPECT_TRUE(Contains(partition, " ok     purchases/0/")) << partition;

  CommandResult missing = InData({"views", "describe", "nope"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "weir: no lake view named 'nope'\n");
}

TEST_F(LakeCli, RebuildAndMergeKeepEveryRow) {
  ASSERT_EQ(InData({"topics", "create", "t"}).exit_code, 0);
  // Spans of one second of appends: two batches apart are two partitions, sealed once the
  // clock is past their span (plus the 2 s grace).
  testing::WriteLines(dir_ / "views.yaml", {"views:", "  v: {topic: t, partition: 1s, sort: [n]}"});
  ASSERT_EQ(InData({"views", "create", dir_ / "views.yaml"}).exit_code, 0);
  ASSERT_EQ(Weir({"produce", "t", "--data-dir", data()}, "{\"n\":1}\n{\"n\":2}\n").exit_code, 0);
  ASSERT_EQ(InData({"query", "SELECT count(*) FROM v"}).exit_code, 0);
  std::this_thread::sleep_for(1100ms);
  ASSERT_EQ(Weir({"produce", "t", "--data-dir", data()}, "{\"n\":3}\n").exit_code, 0);
  std::this_thread::sleep_for(3100ms);
  const std::string sum = "SELECT count(*) AS n, sum(n) AS total FROM v";
  CommandResult before = InData({"query", sum, "--format", "csv"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, "n,total\r\n3,6\r\n");
  CommandResult described = InData({"views", "describe", "v"});
  EXPECT_TRUE(Contains(described.out, "view v on topic t: 2 partitions, 3 rows")) << described.out;

  CommandResult rebuilt = InData({"views", "rebuild", "v"});
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  EXPECT_TRUE(
      rebuilt.out.starts_with("rebuilt view v: 2 partitions written, 3 rows from 3 "
                              "records"))
      << rebuilt.out;
  CommandResult merged = InData({"views", "merge", "v"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_TRUE(
      merged.out.starts_with("merged view v into spans of 1d: 1 partition written, 3 rows, "))
      << merged.out;
  described = InData({"views", "describe", "v"});
  EXPECT_TRUE(Contains(described.out, "view v on topic t: 1 partitions, 3 rows")) << described.out;
  EXPECT_TRUE(Contains(described.out, "Z+1d ")) << described.out;
  EXPECT_EQ(InData({"query", sum, "--format", "csv"}).out, "n,total\r\n3,6\r\n");

  CommandResult bad_span = InData({"views", "merge", "v", "--span", "a while"});
  EXPECT_EQ(bad_span.exit_code, 2);
  EXPECT_EQ(bad_span.err, "weir: --span takes a duration such as 30s, 1h or 1d, not 'a while'\n");
  EXPECT_EQ(InData({"views", "rebuild", "nope"}).exit_code, 2);
}

TEST_F(LakeCli, AQueryThatWritesOrReadsOutsideTheLakeExitsWithTwo) {
  ProduceAndRegister();
  const std::string refused = "a lake query is one SELECT (or WITH ... SELECT) statement";
  for (const std::string& sql :
       {std::string("CREATE TABLE x AS SELECT 1"), std::string("INSERT INTO x VALUES (1)"),
        std::string("SELECT 1; DROP TABLE clicks"), std::string("ATTACH '/tmp/other.db'")}) {
    CommandResult r = InData({"query", sql});
    EXPECT_EQ(r.exit_code, 2) << sql << ": " << r.err;
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_TRUE(Contains(InData({"query", "CREATE TABLE x AS SELECT 1"}).err, refused));
  CommandResult outside = InData({"query", "SELECT * FROM read_csv('/etc/passwd')"});
  EXPECT_EQ(outside.exit_code, 2) << outside.err;
  EXPECT_TRUE(Contains(outside.err, "Cannot access file \"/etc/passwd\"")) << outside.err;
  CommandResult copy = InData({"query", "COPY (SELECT * FROM clicks) TO '/tmp/x.csv'"});
  EXPECT_EQ(copy.exit_code, 2) << copy.err;
  CommandResult timeout = InData({"query", "SELECT 1", "--timeout", "soon"});
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_TRUE(Contains(timeout.err, "--timeout takes a duration")) << timeout.err;
}

TEST_F(LakeCli, ABadViewsFileIsRefusedNamingTheYamlPath) {
  testing::WriteLines(dir_ / "bad.yaml",
                      {"views:", "  clicks:", "    topic: clicks", "    partition: soon"});
  CommandResult r = InData({"views", "create", dir_ / "bad.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, dir_ / "bad.yaml" + ": views.clicks.partition: expected a duration"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "(line 4")) << r.err;
  testing::WriteLines(dir_ / "none.yaml", {"name: x"});
  CommandResult none = InData({"views", "create", dir_ / "none.yaml"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(Contains(none.err, "has no views: key")) << none.err;
  CommandResult unreadable = InData({"views", "create", dir_ / "missing.yaml"});
  EXPECT_EQ(unreadable.exit_code, 2);
  EXPECT_TRUE(Contains(unreadable.err, "cannot read views file")) << unreadable.err;
  // A view whose SQL does not run over its topic's records is refused when registered.
  ASSERT_EQ(Weir({"produce", "t", "--create", "--data-dir", data()}, "{\"a\":1}\n").exit_code, 0);
  testing::WriteLines(
      dir_ / "sql.yaml",
      {"views:", "  v: {topic: t, columns: {a: bigint}, sql: SELECT b FROM records}"});
  CommandResult sql = InData({"views", "create", dir_ / "sql.yaml"});
  EXPECT_EQ(sql.exit_code, 2);
  EXPECT_TRUE(Contains(sql.err, "view 'v': its sql does not run over its records")) << sql.err;
}

// A pipeline file with views: `weir run` registers them and leaves them up to date; a file of
// views alone is not a pipeline.
TEST_F(LakeCli, RunRegistersAFilesViewsAndTheyAnswerAfterwards) {
  testing::WriteLines(dir_ / "p.yaml",
                      {"name: gen", "source: {generator: {users: 20, events: 1000}}",
                       "steps: [{aggregate: {n: count}}]", "sink: {topic: counts}", "views:",
                       "  counts: {topic: counts, sql: 'SELECT _key AS user, n FROM records'}"});
  CommandResult run = InData({"run", dir_ / "p.yaml", "--listen", "off"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.err, "lake: keeping 1 view up to date")) << run.err;
  // Every output record is in the view, without a query having named it.
  CommandResult list = InData({"views", "list"});
  EXPECT_TRUE(
      Lines(list.out)[1].starts_with("counts                   counts                  "
                                     "          1         1000 "))
      << list.out;
  CommandResult q = InData(
      {"query", "SELECT count(*) AS rows, min(n) AS first FROM counts", "--format", "jsonl"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "{\"rows\":1000,\"first\":1}\n");

  testing::WriteLines(dir_ / "views-only.yaml", {"views:", "  c: {topic: counts}"});
  CommandResult only = InData({"run", dir_ / "views-only.yaml"});
  EXPECT_EQ(only.exit_code, 2);
  EXPECT_TRUE(Contains(only.err, "declares views but no pipeline")) << only.err;
  EXPECT_TRUE(Contains(only.err, "weir views create " + dir_ / "views-only.yaml")) << only.err;
}

// While `weir run --listen` holds the data directory, `weir query` and `weir views` ask it.
TEST_F(LakeCli, AQueryWhileAPipelineRunsGoesThroughItsServer) {
  testing::WriteLines(dir_ / "p.yaml", {"name: gen", "source: {generator: {users: 20}, rate: 2000}",
                                        "steps: [{aggregate: {n: count}}]", "sink: {topic: counts}",
                                        "checkpoint: {interval_ms: 200}",
                                        "views:", "  counts: {topic: counts, refresh: 500ms}"});
  Subprocess run(
      {WEIR_BINARY, "run", dir_ / "p.yaml", "--data-dir", data(), "--listen", "127.0.0.1:0"},
      dir_.path().string());
  ServerAddress();
  int64_t seen = 0;
  ASSERT_TRUE(Eventually([&] {
    CommandResult q = InData({"query", "SELECT count(*) AS n FROM counts", "--format", "jsonl"});
    auto json = Value::Parse(q.out);
    seen = json.ok() && json->GetInt("n") ? *json->GetInt("n") : 0;
    return q.exit_code == 0 && seen > 0;
  })) << "the running pipeline's view never answered";
  CommandResult csv = InData({"query", "SELECT 'a,b' AS x", "--format", "csv"});
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "x\r\n\"a,b\"\r\n");
  CommandResult table = InData({"query", "SELECT 1 AS one"});
  EXPECT_EQ(table.out, "one\n---\n1\n(1 row)\n");
  CommandResult list = InData({"views", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(Lines(list.out).size() == 2 && Lines(list.out)[1].starts_with("counts ")) << list.out;
  CommandResult describe = InData({"views", "describe", "counts"});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_TRUE(describe.out.starts_with("view counts on topic counts: ")) << describe.out;
  CommandResult refused = InData({"query", "CREATE TABLE x AS SELECT 1"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.err,
            "weir: a lake query is one SELECT (or WITH ... SELECT) statement; this is a statement "
            "of another kind\n");
  EXPECT_EQ(InData({"views", "rebuild", "counts"}).exit_code, 1) << "a write needs the directory";

  run.Kill(SIGINT);
  CommandResult stopped = run.Wait();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_FALSE(std::filesystem::exists(data() + "/server.json"));
  // Everything the run wrote is in the view: its last update came after its last checkpoint.
  CommandResult after = InData({"query", "SELECT count(*) AS n FROM counts", "--format", "csv"});
  const size_t records = Lines(InData({"consume", "counts"}).out).size();
  EXPECT_EQ(after.out, "n\r\n" + std::to_string(records) + "\r\n");
  EXPECT_GE(static_cast<int64_t>(records), seen);
}

TEST_F(LakeCli, ServeAnswersPostQueryAndItsRefusals) {
  ProduceAndRegister();
  Subprocess serve({WEIR_BINARY, "serve", "--data-dir", data(), "--listen", "127.0.0.1:0",
                    "--max-frame-bytes", "1024", "--subscribe-token", "s3cret"},
                   dir_.path().string());
  const std::string url = "http://" + ServerAddress();
  const std::string bearer = "Authorization: Bearer s3cret";

  // weir query asks the server, with the token.
  CommandResult unauthorized = InData({"query", kRevenue});
  EXPECT_EQ(unauthorized.exit_code, 2);
  EXPECT_TRUE(Contains(unauthorized.err, "pass --token")) << unauthorized.err;
  CommandResult table = InData({"query", kRevenue, "--token", "s3cret"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out,
            "page   n  revenue\n-----  -  -------\n/      2  NULL\n/cart  2  30.75\n(2 rows)\n");
  CommandResult csv = InData({"query", kRevenue, "--token", "s3cret", "--format", "csv"});
  EXPECT_EQ(csv.out, "page,n,revenue\r\n/,2,\r\n/cart,2,30.75\r\n");
  CommandResult outside =
      InData({"query", "SELECT * FROM read_csv('/etc/passwd')", "--token", "s3cret"});
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_TRUE(Contains(outside.err, "Cannot access file \"/etc/passwd\"")) << outside.err;

  // Stopped by its time limit after rows: the rows, then the reason, and exit 1.
  CommandResult stopped = InData({"query", "SELECT i FROM range(1000000000) t(i)", "--token",
                                  "s3cret", "--format", "csv", "--timeout", "300ms"});
  EXPECT_EQ(stopped.exit_code, 1);
  EXPECT_EQ(stopped.err, "weir: lake query stopped after its time limit of 300 ms\n");
  EXPECT_TRUE(stopped.out.starts_with("i\r\n0\r\n1\r\n")) << stopped.out.substr(0, 100);
  EXPECT_TRUE(stopped.out.ends_with("\r\n")) << "the error line is not output";

  // curl: the body is the SQL, JSON lines by default; or {"sql", "format"}.
  auto jsonl = Curl({"-H", bearer, "--data-binary", kRevenue, url + "/query"});
  EXPECT_EQ(jsonl.first, "200");
  EXPECT_EQ(jsonl.second,
            "{\"page\":\"/\",\"n\":2,\"revenue\":null}\n"
            "{\"page\":\"/cart\",\"n\":2,\"revenue\":30.75}\n");
  auto json_body =
      Curl({"--data-binary", R"({"sql": "SELECT count(*) AS n FROM purchases", "format": "csv"})",
            url + "/query?token=s3cret"});
  EXPECT_EQ(json_body.first, "200");
  EXPECT_EQ(json_body.second, "n\r\n2\r\n");
  auto cut = Curl({"--data-binary",
                   R"json({"sql": "SELECT i FROM range(1000000000) t(i)", "timeout_ms": 300})json",
                   url + "/query?token=s3cret"});
  EXPECT_EQ(cut.first, "200");
  EXPECT_TRUE(cut.second.starts_with("{\"i\":0}\n{\"i\":1}\n"));
  EXPECT_TRUE(
      cut.second.ends_with("}\n{\"error\":\"lake query stopped after its time limit of 300 "
                           "ms\",\"code\":\"Resource exhausted\"}\n"))
      << cut.second.substr(cut.second.size() - std::min<size_t>(200, cut.second.size()));
  auto refused = Curl({"-H", bearer, "--data-binary", "INSERT INTO x VALUES (1)", url + "/query"});
  EXPECT_EQ(refused.first, "400");
  EXPECT_TRUE(refused.second.starts_with("{\"error\":\"")) << refused.second;
  EXPECT_TRUE(Contains(refused.second, "\"code\":\"Invalid argument\"")) << refused.second;
  EXPECT_EQ(Curl({"--data-binary", "SELECT 1", url + "/query"}).first, "401");
  EXPECT_EQ(Curl({"-H", "Authorization: Bearer wrong", "--data-binary", "SELECT 1", url + "/query"})
                .first,
            "401");
  auto get = Curl({"-H", bearer, url + "/query"});
  EXPECT_EQ(get.first, "405");
  EXPECT_EQ(get.second, R"({"error":"post_a_query"})");
  auto big = Curl(
      {"-H", bearer, "--data-binary", "SELECT '" + std::string(2000, 'x') + "'", url + "/query"});
  EXPECT_EQ(big.first, "413");
  EXPECT_EQ(big.second, R"({"error":"too_big","max":1024})");
  EXPECT_EQ(Curl({"-H", bearer, url + "/views/nope"}).first, "404");
  EXPECT_EQ(Curl({"-H", bearer, url + "/queries"}).first, "404");
  auto views = Curl({"-H", bearer, url + "/views"});
  EXPECT_EQ(views.first, "200");
  EXPECT_TRUE(views.second.starts_with(R"([{"name":"clicks","topic":"clicks","partitions":1,)"))
      << views.second;

  serve.Kill(SIGTERM);
  EXPECT_EQ(serve.Wait().exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(data() + "/server.json"));
}

// A holder that serves no queries is named, with the way out.
TEST_F(LakeCli, AQueryOnADirectoryHeldWithoutAServerSaysToListen) {
  ProduceAndRegister();
  Subprocess follower({WEIR_BINARY, "consume", "clicks", "--follow", "--data-dir", data()},
                      dir_.path().string());
  ASSERT_TRUE(Eventually([&] { return follower.StdoutSoFar().size() > 0; }));
  CommandResult r = InData({"query", "SELECT 1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, "is in use by another process (pid " +
                                  std::to_string(follower.pid()) + "), which serves no queries"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "start it with --listen")) << r.err;
  // A server.json left by a process that is gone is not trusted.
  testing::WriteLines(data() + "/server.json", {R"({"listen":"127.0.0.1:9","pid":1})"});
  CommandResult stale = InData({"views", "list"});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_TRUE(Contains(stale.err, "server.json was left by pid 1")) << stale.err;
  follower.Kill(SIGTERM);
  EXPECT_EQ(follower.Wait().exit_code, 0);
}

}  // namespace
}  // namespace weir
