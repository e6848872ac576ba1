// The lake (src/lake) on the command line: `weir views ...` and `weir query` (views.cc), the
// lake that `weir run` and `weir serve` keep up to date and serve (lake_service.cc), the output
// formats they share (lake_output.cc), and asking the process that holds a data directory
// (lake_remote.cc).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lake/lake.h"
#include "weir/application.h"
#include "weir/serve.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir::cli {

// <data-dir>/lake
std::filesystem::path LakeDir(const std::string& data_dir);

// A duration as YAML writes one ("30s", "1h", "1d", or milliseconds), for a flag.
Result<std::chrono::milliseconds> ParseDurationFlag(const std::string& text, std::string_view flag);

// --- Output (lake_output.cc) ---------------------------------------------------------------------

// A query's result as `weir query --format` and POST /query's format name them: table (aligned
// columns under a header, NULL as NULL, then "(N rows)"; held until the last row), jsonl (one
// JSON object per row), csv (RFC 4180: a header, CRLF line ends, NULL an empty field, an empty
// string "").
enum class QueryFormat : uint8_t { kTable, kJsonl, kCsv };
Result<QueryFormat> ParseQueryFormat(std::string_view name);

// Runs a read-only query (bringing the views it names up to date first) and writes its result
// through `write` as it comes (the csv header with the first row, or at the end if none).
// `cancelled` (optional) stops it (kCancelled) once it says so, e.g. when the client hung up.
Status WriteQueryResult(lake::Lake& lake, std::string_view sql, QueryFormat format,
                        std::chrono::milliseconds timeout,
                        const std::function<void(std::string_view)>& write,
                        std::function<bool()> cancelled = {});

// What `weir views list` (view empty: an array of every view's summary) and `weir views
// describe VIEW` (one object) show, as JSON: also the answer of GET /views and /views/VIEW.
Result<Value> ViewsJson(lake::Lake& lake, std::string_view view);
// Prints ViewsJson's answer as `weir views list` / `describe` do.
void PrintViewList(const Value& views);
void PrintViewDescription(const Value& view);

// --- The lake of a running process (lake_service.cc) ---------------------------------------------

// The data directory's lake while `weir run` or `weir serve` holds it: Start opens it on the
// process's log, registers `views` (a YAML file's), and updates every registered view in the
// background; Stop updates each once more (its open span too), so that what the run wrote is
// in, then stops. The server's handlers (Serve) answer queries with it.
class LakeService : public RunService {
 public:
  LakeService(std::string data_dir, std::vector<lake::ViewSpec> views)
      : data_dir_(std::move(data_dir)), views_(std::move(views)) {}
  Status Start(log::LogStore& log,
               const std::function<void(const std::string&)>& progress) override;
  void Stop() override;
  const std::string& data_dir() const { return data_dir_; }
  // The lake once started; kFailedPrecondition if the data directory has none (no view was
  // ever registered in it: Start opens no lake then).
  Result<lake::Lake*> lake() const;

  // POST /query and GET /views answered with this lake (ServerOptions' handlers).
  static void Serve(const std::shared_ptr<LakeService>& service, ServerOptions& options);
  // Subscribers below retention caught up through the topics' archive views (ServerOptions'
  // archive).
  static void ServeArchives(const std::shared_ptr<LakeService>& service, ServerOptions& options);

 private:
  std::string data_dir_;
  std::vector<lake::ViewSpec> views_;
  std::function<void(const std::string&)> progress_;
  std::unique_ptr<lake::Lake> lake_;
};

// The views of a pipeline file's `views:` key (none without it), for `weir run`. A file of
// views and no pipeline is kInvalidArgument, pointing at `weir views create`.
Result<std::vector<lake::ViewSpec>> ViewsBesideThePipeline(const std::string& path);

// <data-dir>/server.json, {"listen":"HOST:PORT","pid":N}: where the process holding the data
// directory answers queries. Written once its server listens, removed when it stops.
Status WriteServerFile(const std::string& data_dir, const std::string& host, int port);
void RemoveServerFile(const std::string& data_dir);

// --- Asking the holder of a data directory (lake_remote.cc) --------------------------------------

// A request to the process that holds `data_dir` (LocalLog found it locked), found through its
// server.json. Body chunks go to `on_body` as they arrive. kUnavailable naming the holder's pid
// and saying to start it with --listen if it has no server.json or does not answer; a refusal
// as the server's error (with its status code: kInvalidArgument for a refused query).
struct RemoteRequest {
  std::string method;  // GET or POST
  std::string target;  // "/query", "/views/clicks"
  std::string body;
  std::string token;  // the server's subscribe token, if it has one
};
Status AskHolder(const std::string& data_dir, const RemoteRequest& request,
                 const std::function<void(std::string_view)>& on_body);

}  // namespace weir::cli
