// What the self-checking examples (session_late, join_rekey) share: writing their input once,
// reading a topic back, and comparing what they read with what they worked out by hand. Written
// against the public API only, like the examples.
#pragma once

#include <weir/weir.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace example {

// The directory the program works in, its one argument: inputs in it, the data directory in
// DIR/weir-data. Without it, prints the usage and exits with status 2.
inline std::string DirArgument(int argc, char** argv, const char* program) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", program);
    std::exit(2);
  }
  return argv[1];
}

// Writes `text` to `path` unless it exists: a resume must find the input it read before (Run()
// refuses a file rewritten under the same path, unless it only grew).
inline void WriteOnce(const std::string& path, const char* text) {
  if (std::filesystem::exists(path)) return;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Strings and integers, concatenated: Text("o", 4, " at ", 4500) is "o4 at 4500".
inline void AppendText(std::string& out, std::string_view s) { out += s; }
inline void AppendText(std::string& out, int64_t i) { out += std::to_string(i); }
template <typename... Parts>
std::string Text(const Parts&... parts) {
  std::string out;
  (AppendText(out, parts), ...);
  return out;
}

// A file of JSON lines keyed by the string field `key_field`, with its event time (ms) in "ts".
// Filled member by member, not with the designated initializer stream.h shows
// (app.FromFile({.path = ..., .key = {"user"}, .timestamp_field = "ts"})): GCC 12 at -O3 reports
// a string of that temporary as maybe-uninitialized on its exception cleanup path, a false
// positive that -Wall -Werror (Install.ExamplesBuildAgainstPackage builds so) makes an error.
inline weir::FileSourceOptions JsonLinesFile(std::string path, std::string key_field) {
  weir::FileSourceOptions options;
  options.path = std::move(path);
  options.key.field = std::move(key_field);
  options.timestamp_field = "ts";
  return options;
}

// A key as JSON text: "ann" for a string key.
inline std::string KeyText(const weir::Key& key) {
  std::string text;
  key.AppendJson(text);
  return text;
}

// What a fresh run over the whole input must count.
struct ExpectedSummary {
  int64_t records_in = 0;  // lines that became records
  int64_t dead_letters = 0;
  int64_t user_function_failures = 0;
  int64_t late = 0;
};

// Prints what the run made and checks it; Finish() says whether everything was as expected.
class Checker {
 public:
  Checker(const char* program, std::string data_dir)
      : program_(program), data_dir_(std::move(data_dir)) {}

  // Prints the run's counts in one line. A fresh run (no checkpoint restored) must count what
  // `expected` says. A resume reads only what the last checkpoint had not (nothing, after a run
  // that ended), so its counts are printed, not checked: the topics are, whatever the runs were.
  // `on_late_calls`, if given, is how many times the program's OnLate was called: once per late
  // event on a fresh run. A run that failed ends the program, with the reason.
  void Summary(const weir::Result<weir::RunSummary>& run, const ExpectedSummary& expected,
               std::optional<int64_t> on_late_calls = std::nullopt) {
    if (!run.ok()) Exit(run.status());
    const weir::RunSummary& summary = *run;
    std::string on_late;
    if (on_late_calls) on_late = Text(" (OnLate called ", *on_late_calls, " times)");
    std::printf("%s: %lld records in, %lld dead letters (%lld in user functions), %lld late%s%s\n",
                program_, static_cast<long long>(summary.records_in),
                static_cast<long long>(summary.dead_letters),
                static_cast<long long>(summary.user_function_failures),
                static_cast<long long>(summary.late), on_late.c_str(),
                summary.restored_checkpoint > 0 ? ", resumed from a checkpoint" : "");
    if (!summary.completed) Fail("the run did not complete");
    if (summary.restored_checkpoint > 0) return;
    Count("records in", summary.records_in, expected.records_in);
    Count("dead letters", summary.dead_letters, expected.dead_letters);
    Count("user function failures", summary.user_function_failures,
          expected.user_function_failures);
    Count("late", summary.late, expected.late);
    if (on_late_calls) Count("OnLate calls", *on_late_calls, expected.late);
  }

  // Every record of a topic, in partition and offset order; an error ends the program.
  std::vector<weir::Record> ReadTopic(const std::string& topic) {
    auto consumer = weir::TopicConsumer::Open({.data_dir = data_dir_, .topic = topic});
    if (!consumer.ok()) Exit(consumer.status());
    std::vector<weir::Record> records;
    while (true) {
      weir::Result<std::vector<weir::ConsumedRecord>> batch = (*consumer)->Poll();
      if (!batch.ok()) Exit(batch.status());
      if (batch->empty()) return records;
      for (weir::ConsumedRecord& r : *batch) records.push_back(std::move(r.record));
    }
  }

  void Count(const char* what, int64_t got, int64_t expected) {
    if (got != expected) Fail(Text(what, ": ", got, ", expected ", expected));
  }

  // Prints `lines`, one per record of the `records` read, and checks them against `expected`.
  // The count catches a duplicate record, which the set would hide.
  void Lines(const char* what, const std::set<std::string>& lines, size_t records,
             const std::set<std::string>& expected) {
    std::printf("%s:\n", what);
    for (const std::string& line : lines) std::printf("  %s\n", line.c_str());
    Count(what, static_cast<int64_t>(records), static_cast<int64_t>(expected.size()));
    if (lines == expected) return;
    std::string message = Text(what, " differ from what was expected:");
    for (const std::string& line : expected) message += "\n  " + line;
    Fail(message);
  }

  // Reads the dead-letter topic ({"reason", "source", "position": {"file", "line"}, ...}) as
  // "<file name> line <n>: <reason>" and checks that each starts with one of `expected`, each
  // met once (the rest of a reason, such as a JSON parser's message, is not checked).
  void DeadLetters(const std::string& topic, const std::set<std::string>& expected) {
    std::vector<weir::Record> dead = ReadTopic(topic);
    std::set<std::string> lines;
    std::set<std::string> matched;
    for (const weir::Record& r : dead) {
      std::filesystem::path file(r.value.GetString("position.file").value_or("?"));
      std::string line =
          Text(file.filename().string(), " line ", r.value.GetInt("position.line").value_or(0),
               ": ", r.value.GetString("reason").value_or("?"));
      lines.insert(line);
      for (const std::string& prefix : expected) {
        if (line.starts_with(prefix)) matched.insert(prefix);
      }
    }
    std::printf("dead letters:\n");
    for (const std::string& line : lines) std::printf("  %s\n", line.c_str());
    Count("dead letters in the topic", static_cast<int64_t>(dead.size()),
          static_cast<int64_t>(expected.size()));
    if (matched != expected) {
      std::string message = "dead letters differ from what was expected:";
      for (const std::string& prefix : expected) message += "\n  " + prefix + "...";
      Fail(message);
    }
  }

  // Prints "<program>: ok" and returns 0, or "<program>: FAILED" and returns 1.
  int Finish() const {
    std::printf("%s: %s\n", program_, ok_ ? "ok" : "FAILED");
    return ok_ ? 0 : 1;
  }

 private:
  void Fail(const std::string& what) {
    std::printf("%s: WRONG %s\n", program_, what.c_str());
    ok_ = false;
  }
  [[noreturn]] void Exit(const weir::Status& status) const {
    std::fprintf(stderr, "%s: %s\n", program_, status.ToString().c_str());
    std::exit(1);
  }

  const char* program_;
  std::string data_dir_;
  bool ok_ = true;
};

}  // namespace example
