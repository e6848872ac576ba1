// weir views create|list|describe|rebuild|merge, weir query: the lake of a data directory
// (src/lake), or, while another process holds the directory, that process's (POST /query, GET
// /views).
#include <cstdio>

#include "cli/commands.h"
#include "cli/lake_cli.h"
#include "cli/local_log.h"
#include "core/files.h"

namespace weir::cli {
namespace {

// The data directory's log and lake, for one command (the lake closes before the log).
struct LocalLake {
  LocalLog local;
  std::unique_ptr<lake::Lake> lake;
  ~LocalLake() { lake.reset(); }
};

// Runs `local` on the data directory's lake; if another process holds the directory, runs
// `remote` instead (asks that process), or fails naming the holder when there is no `remote`.
int WithLake(const std::string& data_dir, const std::function<Status(LocalLake&)>& local,
             const std::function<Status()>& remote = {}) {
  LocalLake opened;
  Status status;
  auto log = LocalLog::Open(data_dir);
  if (!log.ok() && log.status().code() == StatusCode::kUnavailable && remote) {
    status = remote();  // in use (the lock names its holder): ask the holder
  } else if (!log.ok()) {
    status = log.status();
  } else {
    opened.local = std::move(log).value();
    lake::LakeOptions options;
    options.dir = LakeDir(data_dir);
    auto lake = lake::Lake::Open(*opened.local.log, std::move(options));
    if (lake.ok()) opened.lake = std::move(lake).value();
    status = lake.ok() ? local(opened) : lake.status();
  }
  std::fflush(stdout);
  return status.ok() ? 0 : Fail(status);
}

void WriteOut(std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); }

// `weir views list` or `describe VIEW`: from the lake, or from the holder of the directory.
int ShowViews(const ViewsArgs& args, const std::string& view,
              const std::function<void(const Value&)>& print) {
  return WithLake(
      args.data_dir,
      [&](LocalLake& opened) {
        WEIR_ASSIGN_OR_RETURN(Value json, ViewsJson(*opened.lake, view));
        print(json);
        return Status::OK();
      },
      [&]() -> Status {
        std::string body;
        WEIR_RETURN_IF_ERROR(AskHolder(args.data_dir,
                                       {.method = "GET",
                                        .target = view.empty() ? "/views" : "/views/" + view,
                                        .token = args.token},
                                       [&](std::string_view chunk) { body.append(chunk); }));
        auto json = Value::Parse(body);
        if (!json.ok()) return json.status().WithContext("the server's answer");
        print(*json);
        return Status::OK();
      });
}

// What a rebuild or a merge wrote (a merge reads files, not the log's records).
std::string Figures(const lake::MaterializeFigures& f) {
  std::string out = std::to_string(f.partitions) +
                    (f.partitions == 1 ? " partition" : " partitions") + " written, " +
                    std::to_string(f.rows) + " rows";
  out += f.records > 0 ? " from " + std::to_string(f.records) + " records, " : ", ";
  out += std::to_string(f.bytes) + " bytes";
  if (f.dead_letters > 0) out += ", " + std::to_string(f.dead_letters) + " dead letters";
  return out;
}

}  // namespace

int ViewsCreate(const ViewsArgs& args) {
  auto text = ReadFile(args.file);
  if (!text.ok()) return Fail(text.status().WithContext("cannot read views file " + args.file));
  auto views = lake::ParseViewsFile(*text, args.file);
  if (!views.ok()) return Fail(views.status());
  if (views->empty()) {
    return Fail(
        Status::InvalidArgument(args.file + " has no views: key (views: {NAME: {topic: TOPIC}})"));
  }
  return WithLake(args.data_dir, [&](LocalLake& opened) {
    for (const lake::ViewSpec& view : *views) {
      const std::vector<lake::CatalogView> before = opened.lake->Views();
      auto old = std::find_if(before.begin(), before.end(),
                              [&](const lake::CatalogView& v) { return v.spec.name == view.name; });
      WEIR_RETURN_IF_ERROR(opened.lake->Register(view));
      const char* what = old == before.end() ? "registered"
                         : old->spec == view ? "kept (unchanged)"
                                             : "replaced (partitions of the old definition are "
                                               "stale until rebuilt by the next update)";
      std::printf(
          "view %s on topic %s: %s%s\n", view.name.c_str(), view.topic.c_str(), what,
          opened.local.log->GetTopic(view.topic).ok() ? "" : "; the topic does not exist yet");
    }
    return Status::OK();
  });
}

int ViewsList(const ViewsArgs& args) {
  return ShowViews(args, "", [](const Value& views) { PrintViewList(views); });
}

int ViewsDescribe(const ViewsArgs& args) {
  return ShowViews(args, args.name, [](const Value& view) { PrintViewDescription(view); });
}

int ViewsRebuild(const ViewsArgs& args) {
  return WithLake(args.data_dir, [&](LocalLake& opened) {
    lake::MaterializeFigures figures;
    WEIR_RETURN_IF_ERROR(opened.lake->Rebuild(args.name, &figures));
    std::printf("rebuilt view %s: %s\n", args.name.c_str(), Figures(figures).c_str());
    return Status::OK();
  });
}

int ViewsMerge(const ViewsArgs& args) {
  auto span = ParseDurationFlag(args.span, "--span");
  if (!span.ok()) return Fail(span.status());
  return WithLake(args.data_dir, [&](LocalLake& opened) {
    lake::MaterializeFigures figures;
    WEIR_RETURN_IF_ERROR(opened.lake->Merge(args.name, *span, &figures));
    std::printf("merged view %s into spans of %s: %s\n", args.name.c_str(), args.span.c_str(),
                Figures(figures).c_str());
    return Status::OK();
  });
}

int Query(const QueryArgs& args) {
  auto format = ParseQueryFormat(args.format);
  if (!format.ok()) return Fail(format.status().WithContext("--format"));
  auto timeout = ParseDurationFlag(args.timeout, "--timeout");
  if (!timeout.ok()) return Fail(timeout.status());
  return WithLake(
      args.data_dir,
      [&](LocalLake& opened) {
        return WriteQueryResult(*opened.lake, args.sql, *format, *timeout, WriteOut);
      },
      [&] {
        const Value body = Value::MakeObject(
            {{"sql", args.sql}, {"format", args.format}, {"timeout_ms", timeout->count()}});
        return AskHolder(
            args.data_dir,
            {.method = "POST", .target = "/query", .body = body.ToJson(), .token = args.token},
            WriteOut);
      });
}

}  // namespace weir::cli
