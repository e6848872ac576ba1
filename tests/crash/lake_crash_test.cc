// The crash test of lake materialization: a child process (this test binary, run again with
// WEIR_LAKE_CRASH_CHILD set) appends random records to a topic and materializes two views of it
// in a loop: updates with and without the open span, merges, new versions of one view (its SQL
// changes) each followed by a rebuild, and sweeps with zero graces. The parent kills it with
// SIGKILL at random moments, so that it dies in a COPY, a merge, a catalog commit or a sweep,
// then reopens the log and the lake and checks:
//   - the catalog opens, and each view's live partitions tile the log without overlap;
//   - every live partition's file exists and holds the catalog's row count (read with DuckDB);
//   - queries see exactly the live partitions' rows (an orphan, a file a commit never named,
//     may be on disk but is never read), and a sweep with zero graces leaves nothing on disk
//     but the live partitions' files;
//   - after a full update, queries equal the same SQL over the log's records as `weir consume`
//     prints them (lake_testing.h), each fresh partition holds the view's SQL over exactly its
//     range, and every record that does not fit a view's columns is in its dead-letter topic
//     (at least once: a crash between a dead letter and its partition's commit sends it again).
// Then the child runs again on the same directory.
//
// WEIR_CRASH_KILLS sets the number of kills (default 8).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lake/lake_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir::lake {
namespace {

namespace lt = weir::lake::testing;
using weir::testing::Subprocess;
using weir::testing::TempDir;

constexpr const char* kTopic = "events";
const std::vector<std::string> kViews = {"crash_v", "crash_raw"};

// crash_v: declared columns, its SQL switching with its version, sorted by event time.
ViewSpec CrashView(int64_t version) {
  ViewSpec spec;
  spec.name = "crash_v";
  spec.topic = kTopic;
  spec.version = version;
  spec.sql = version % 2 == 1
                 ? "SELECT _partition, _offset, _ts, a, d, s FROM records WHERE a IS NULL OR "
                   "a % 3 <> 0"
                 : "SELECT _partition, _offset, _ts, _key, a * 2 + 1 AS a2, d / 2 AS half, s, tags "
                   "FROM records";
  spec.columns = {{"id", ColumnKind::kBigInt}, {"a", ColumnKind::kBigInt},
                  {"d", ColumnKind::kDouble},  {"s", ColumnKind::kVarchar},
                  {"b", ColumnKind::kBoolean}, {"tags", ColumnKind::kJson}};
  spec.partition = std::chrono::milliseconds(100);
  spec.sort = {"_ts"};
  return spec;
}

// crash_raw: every column, inferred, sorted by position.
ViewSpec RawView() {
  ViewSpec spec;
  spec.name = "crash_raw";
  spec.topic = kTopic;
  spec.partition = std::chrono::milliseconds(50);
  spec.sort = {"_partition", "_offset"};
  return spec;
}

LakeOptions Options(const std::filesystem::path& dir, std::mt19937_64* rng) {
  LakeOptions options;
  options.dir = dir / "lake";
  options.retired_grace = std::chrono::milliseconds(0);
  options.orphan_grace = std::chrono::milliseconds(0);
  if (rng != nullptr) {
    options.materialize.seal_grace = std::chrono::milliseconds((*rng)() % 150);
    if ((*rng)() % 2 == 0) options.materialize.max_batch_records = 5 + (*rng)() % 30;
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// The child: materializes until killed. Says each step on stdout before taking it; any error
// ends it with exit code 2 and the error on stderr.

[[noreturn]] void Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.ToString().c_str());
  std::fflush(stderr);
  std::_Exit(2);
}

void Step(const char* name) {
  std::printf("%s\n", name);
  std::fflush(stdout);
}

[[noreturn]] void RunChild(const std::filesystem::path& dir, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto log = lt::OpenLog(dir / "log");
  if (!log.ok()) Fail("opening the log", log.status());
  auto topic = (*log)->GetOrCreateTopic(kTopic, {.partitions = 2});
  if (!topic.ok()) Fail("the topic", topic.status());
  auto lake = Lake::Open(**log, Options(dir, &rng));
  if (!lake.ok()) Fail("opening the lake", lake.status());
  int64_t version = 1;
  for (const CatalogView& v : (*lake)->Views()) {
    if (v.spec.name == "crash_v") version = v.spec.version;
  }
  for (const ViewSpec& spec : {CrashView(version), RawView()}) {
    if (Status s = (*lake)->Register(spec); !s.ok()) Fail("registering " + spec.name, s);
  }
  // Record ids go on from what the log holds (they only need to differ).
  int64_t next_id = 0;
  for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) {
    next_id += (*topic)->partition(PartitionId(p)).NextOffset().value();
  }
  lt::EventClock clock(1'700'000'000'000 + 10 * next_id);
  Step("started");
  while (true) {
    Step("append");
    // The first records are well typed, so that crash_raw's inferred columns are the fields'.
    if (Status s = lt::AppendBurst(**topic, rng, clock, next_id, 5 + static_cast<int>(rng() % 80),
                                   next_id == 0);
        !s.ok()) {
      Fail("appending", s);
    }
    for (const std::string& view : kViews) {
      Step(("update " + view).c_str());
      if (Status s = (*lake)->Update(view, rng() % 2 == 0); !s.ok()) Fail("update " + view, s);
    }
    if (rng() % 3 == 0) {
      const std::string& view = kViews[rng() % kViews.size()];
      Step(("merge " + view).c_str());
      const auto span = std::chrono::milliseconds(100) * (2 + rng() % 20);
      if (Status s = (*lake)->Merge(view, span); !s.ok()) Fail("merge " + view, s);
    }
    if (rng() % 6 == 0) {
      Step("new version");
      if (Status s = (*lake)->Register(CrashView(++version)); !s.ok()) Fail("new version", s);
      Step("rebuild crash_v");
      if (Status s = (*lake)->Rebuild("crash_v"); !s.ok()) Fail("rebuild crash_v", s);
    }
    if (rng() % 3 == 0) {
      Step("sweep");
      if (Result<int64_t> swept = (*lake)->Sweep(); !swept.ok()) Fail("sweep", swept.status());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The parent's checks after a kill.

struct Totals {
  int64_t orphans = 0;         // files on disk that the catalog does not name
  int64_t duplicate_dead = 0;  // dead letters sent twice (a crash before their commit)
  int64_t partitions = 0;
  int64_t queries = 0;
};

void CheckAfterKill(const TempDir& dir, lt::Reference& reference, Totals& totals) {
  // The files the catalog names, live or retired: the others on disk are orphans.
  std::set<std::string> named;
  {
    auto catalog = Catalog::Open(dir.path() / "lake");
    ASSERT_TRUE(catalog.ok()) << "the catalog does not open: " << catalog.status().ToString();
    for (const std::string& f : (*catalog)->Files()) named.insert(f);
  }
  for (const std::string& f : lt::ParquetFiles(dir.path() / "lake")) {
    totals.orphans += !named.contains(f);
  }
  auto log = lt::OpenLog(dir.path() / "log");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto lake = Lake::Open(**log, Options(dir.path(), nullptr));
  ASSERT_TRUE(lake.ok()) << "the catalog does not open: " << lake.status().ToString();
  Lake& l = **lake;
  for (const std::string& view : kViews) {
    if (!l.Describe(view).ok()) return;  // killed before its registration
  }
  // As the crash left it: partitions tile, files hold their rows, queries read only them.
  for (const std::string& view : kViews) {
    for (const std::string& p : lt::CheckPartitions(l, **log, reference.db(), view)) {
      ADD_FAILURE() << p;
    }
    Result<ViewStatus> status = l.Describe(view);
    ASSERT_TRUE(status.ok());
    totals.partitions += static_cast<int64_t>(status->partitions.size());
    Result<lt::Rows> count = lt::LakeRows(l, "SELECT count(*) FROM " + view, false);
    ASSERT_TRUE(count.ok()) << count.status().ToString();
    EXPECT_EQ(*count, lt::Rows{std::to_string(status->rows)})
        << view << ": a query sees other rows than the live partitions'";
  }
  const std::set<std::string> live = lt::LiveFiles(l, kViews);
  Result<int64_t> swept = l.Sweep();
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(lt::ParquetFiles(l.dir()), live) << "a sweep with zero graces leaves only live files";

  // Brought up to date: the same answers as DuckDB over the log's records.
  for (const std::string& view : kViews) {
    Status s = l.Update(view, true);
    ASSERT_TRUE(s.ok()) << view << ": " << s.ToString();
  }
  Status loaded = lt::LoadReference(reference, l, **log, kTopic, kViews, dir / "events.jsonl");
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  for (const std::string& view : kViews) {
    for (const std::string& p :
         lt::CheckPartitions(l, **log, reference.db(), view, {.reference = &reference})) {
      ADD_FAILURE() << p;
    }
  }
  for (const char* q : {
           "SELECT * FROM crash_v ORDER BY _partition, _offset",
           "SELECT * FROM crash_raw ORDER BY _partition, _offset",
           "SELECT s, count(*), sum(_offset) FROM crash_v GROUP BY s ORDER BY s NULLS FIRST",
           "SELECT count(*), sum(COLUMNS('^(a|a2|d|half)$')), min(_ts), max(_ts) FROM crash_v",
           "SELECT count(*), count(a), count(d), min(_ts), max(_ts) FROM crash_raw",
           "SELECT count(*) FROM crash_v JOIN crash_raw USING (_partition, _offset)",
       }) {
    ++totals.queries;
    EXPECT_EQ(lt::CompareQuery(l, reference, q, true), "") << q;
  }
  // Dead letters: every record that does not fit, at least once; nothing else.
  Result<log::Topic*> topic = (*log)->GetTopic(kTopic);
  ASSERT_TRUE(topic.ok());
  for (const std::string& view : kViews) {
    Result<ViewStatus> status = l.Describe(view);
    ASSERT_TRUE(status.ok());
    std::set<std::pair<int32_t, int64_t>> want;
    for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) {
      auto misfits = reference.Misfits(status->view.columns, p, 0,
                                       (*topic)->partition(PartitionId(p)).NextOffset().value());
      ASSERT_TRUE(misfits.ok()) << misfits.status().ToString();
      want.insert(misfits->begin(), misfits->end());
    }
    auto dead = lt::DeadLetters(**log, view);
    ASSERT_TRUE(dead.ok()) << dead.status().ToString();
    const std::set<std::pair<int32_t, int64_t>> got(dead->begin(), dead->end());
    totals.duplicate_dead += static_cast<int64_t>(dead->size() - got.size());
    for (const auto& [p, offset] : want) {
      EXPECT_TRUE(got.contains({p, offset}))
          << view << ": no dead letter for partition " << p << " offset " << offset;
    }
    for (const auto& [p, offset] : got) {
      EXPECT_TRUE(want.contains({p, offset}))
          << view << ": a dead letter for partition " << p << " offset " << offset
          << ", which fits";
    }
  }
}

TEST(LakeCrashTest, KilledInTheMiddleOfMaterializingTheLakeStaysConsistent) {
  if (const char* child = std::getenv("WEIR_LAKE_CRASH_CHILD")) {
    const char* seed = std::getenv("WEIR_LAKE_CRASH_SEED");
    RunChild(child, seed ? std::strtoull(seed, nullptr, 10) : 1);
  }
  const char* env_kills = std::getenv("WEIR_CRASH_KILLS");
  const int kills = env_kills ? std::atoi(env_kills) : 8;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  TempDir dir;
  auto reference = lt::Reference::Create();
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  std::mt19937_64 rng(std::random_device{}());
  Totals totals;
  std::map<std::string, int> killed_in;
  int killed = 0;
  for (int k = 0; k < kills; ++k) {
    const uint64_t seed = rng();
    Subprocess child({self, "--gtest_filter=LakeCrashTest.*"}, dir.path().string(), "",
                     {"WEIR_LAKE_CRASH_CHILD=" + dir.path().string(),
                      "WEIR_LAKE_CRASH_SEED=" + std::to_string(seed)});
    // Alive a random while once started (its start, DuckDB's and the lake's opening, takes a
    // variable time of its own).
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(150 + rng() % 1200);
    while (std::chrono::steady_clock::now() < deadline && !child.Done()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    child.Kill(SIGKILL);
    weir::testing::CommandResult r = child.Wait();
    ASSERT_EQ(r.exit_code, -SIGKILL) << "the child failed (seed " << seed << "): " << r.err;
    ++killed;
    std::string last = r.out;
    while (!last.empty() && last.back() == '\n') last.pop_back();
    last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    killed_in[last.empty() ? "start" : last]++;
    SCOPED_TRACE("after kill " + std::to_string(k + 1) + " (child seed " + std::to_string(seed) +
                 ", killed in '" + last + "')");
    ASSERT_NO_FATAL_FAILURE(CheckAfterKill(dir, **reference, totals));
    if (::testing::Test::HasFailure()) break;
  }
  std::string steps;
  for (const auto& [step, n] : killed_in) steps += " " + step + ": " + std::to_string(n) + ";";
  std::printf(
      "lake crash test: %d kills, killed in:%s %lld orphans found, %lld dead letters sent twice, "
      "%lld partitions checked, %lld queries compared\n",
      killed, steps.c_str(), static_cast<long long>(totals.orphans),
      static_cast<long long>(totals.duplicate_dead), static_cast<long long>(totals.partitions),
      static_cast<long long>(totals.queries));
}

}  // namespace
}  // namespace weir::lake
