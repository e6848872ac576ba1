// The remote invoker against real worker processes: the raw-protocol policy worker
// (testdata/policy_worker.py) misbehaving on request, the Python and Node example workers, and
// weir-cpp-worker. Deadlines are generous: these machines are shared and slow at times.
#include "process/worker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"

extern char** environ;

namespace weir::process {
namespace {

using std::chrono::milliseconds;

const std::string kPolicyWorker = std::string(WEIR_PROCESS_TESTDATA) + "/policy_worker.py";
const std::string kPythonExamples = std::string(WEIR_WORKER_EXAMPLES) + "/python";
const std::string kNodeExamples = std::string(WEIR_WORKER_EXAMPLES) + "/node";

RemoteWorkerOptions Options(std::vector<std::string> command) {
  RemoteWorkerOptions options;
  options.step = "cart";
  options.process.id = "cart_abandon";
  options.process.state = {"cart"};
  options.process.timers = {"abandon"};
  options.command = std::move(command);
  options.deadline = milliseconds(5000);
  options.first_backoff = milliseconds(10);
  options.max_backoff = milliseconds(50);
  return options;
}

RemoteWorkerOptions PolicyWorker(std::vector<std::string> arguments = {}) {
  std::vector<std::string> command = {"python3", kPolicyWorker};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return Options(std::move(command));
}

std::unique_ptr<Invoker> Start(const RemoteWorkerOptions& options) {
  auto invoker = StartRemoteInvoker(options);
  EXPECT_TRUE(invoker.ok()) << invoker.status().ToString();
  return invoker.ok() ? std::move(invoker).value() : nullptr;
}

Value Json(std::string_view text) { return Value::Parse(text).value(); }

// A call over `inputs` (keyed "u1", "u2", ...; activation ids 1, 2, ...), which it holds.
class TestCall {
 public:
  TestCall(int64_t id, std::vector<Value> inputs) : inputs_(std::move(inputs)) {
    call.call = id;
    call.watermark = 100;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      call.activations.push_back({.id = static_cast<int64_t>(i + 1),
                                  .key = Key::String("u" + std::to_string(i + 1)),
                                  .time = 1000 + static_cast<int64_t>(i),
                                  .watermark = 100,
                                  .input = &inputs_[i],
                                  .state = &state_});
    }
  }
  TestCall(const TestCall&) = delete;
  TestCall& operator=(const TestCall&) = delete;
  // One input doing `what` (policy_worker.py).
  static TestCall Doing(int64_t id, std::string_view what) {
    return TestCall(id, {Value::MakeObject({{"do", what}})});
  }
  Call call;

 private:
  std::vector<Value> inputs_;
  Value state_ = Json("{}");
};

// The reason `invoker` refuses `call` with, or "" if it does not.
std::string Refusal(Invoker& invoker, const Call& call,
                    InvokeFailure expected = InvokeFailure::kRefused) {
  std::vector<ProcessResult> results;
  std::optional<InvokeError> error = invoker.Invoke(call, results);
  if (!error) return "";
  EXPECT_EQ(error->failure, expected) << error->reason;
  return error->reason;
}

void ExpectEchoed(Invoker& invoker, const TestCall& test) {
  std::vector<ProcessResult> results;
  std::optional<InvokeError> error = invoker.Invoke(test.call, results);
  ASSERT_FALSE(error) << error->reason;
  ASSERT_EQ(results.size(), test.call.activations.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const ProcessActivation& activation = test.call.activations[i];
    EXPECT_EQ(results[i].id, activation.id);
    ASSERT_EQ(results[i].outputs.size(), 1u);
    EXPECT_EQ(results[i].outputs[0].value, *activation.input);
    EXPECT_EQ(results[i].outputs[0].time, activation.time);
  }
}

TEST(RemoteWorker, ACallRoundTrips) {
  auto invoker = Start(PolicyWorker());
  ASSERT_TRUE(invoker);
  ExpectEchoed(*invoker, TestCall(1, {Json(R"({"n":1})"), Json(R"({"n":2,"s":"é\n"})")}));
  ExpectEchoed(*invoker, TestCall(2, {Json("[]")}));
}

TEST(RemoteWorker, ACrashRefusesTheCallAndTheNextCallRestartsTheWorker) {
  RemoteWorkerOptions options = PolicyWorker();
  options.first_backoff = options.max_backoff = milliseconds(500);
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "crash").call),
            "worker exited with code 3 (waiting for call 1)");
  milliseconds backoff = invoker->RetryDelay(2);
  EXPECT_GT(backoff.count(), 0);
  EXPECT_LE(backoff.count(), 500);
  ExpectEchoed(*invoker, TestCall::Doing(1, "echo"));
}

TEST(RemoteWorker, AHangIsRefusedAtTheDeadlineAndRestarted) {
  RemoteWorkerOptions options = PolicyWorker();
  options.deadline = milliseconds(1000);
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(7, "hang").call),
            "worker did not answer call 7 within 1000 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ExpectEchoed(*invoker, TestCall::Doing(8, "echo"));
}

TEST(RemoteWorker, GarbageIsAProtocolViolation) {
  auto invoker = Start(PolicyWorker());
  ASSERT_TRUE(invoker);
  std::string reason = Refusal(*invoker, TestCall::Doing(1, "garbage").call);
  EXPECT_EQ(reason.rfind("worker broke the protocol answering call 1: not JSON", 0), 0u) << reason;
  ExpectEchoed(*invoker, TestCall::Doing(2, "echo"));
}

TEST(RemoteWorker, ALineOverTheFrameLimitIsRefused) {
  RemoteWorkerOptions options = PolicyWorker();
  options.max_frame_bytes = 1 << 20;
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "oversize").call),
            "worker sent a line of more than 1048576 bytes (waiting for call 1)");
  ExpectEchoed(*invoker, TestCall::Doing(2, "echo"));
}

TEST(RemoteWorker, AnAnswerToAnotherCallIsRefused) {
  auto invoker = Start(PolicyWorker());
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(4, "wrong-call").call),
            "worker answered call 5 while call 4 was in flight");
  ExpectEchoed(*invoker, TestCall::Doing(5, "echo"));
}

TEST(RemoteWorker, AnErrorReplyRefusesTheCallAndKeepsTheWorker) {
  RemoteWorkerOptions options = PolicyWorker();
  options.restart_budget = 0;  // a restart would be fatal
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "raise").call),
            "worker refused call 1: ValueError: asked to");
  EXPECT_EQ(invoker->RetryDelay(2), milliseconds(0));
  ExpectEchoed(*invoker, TestCall::Doing(2, "echo"));
}

TEST(RemoteWorker, ASlowStartWithinTheStartDeadlineWorks) {
  RemoteWorkerOptions options = PolicyWorker({"--start-delay", "1"});
  options.start_deadline = milliseconds(10000);
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  ExpectEchoed(*invoker, TestCall::Doing(1, "echo"));
}

TEST(RemoteWorker, AStartPastTheStartDeadlineIsRefused) {
  RemoteWorkerOptions options = PolicyWorker({"--start-delay", "30"});
  options.start_deadline = milliseconds(500);
  auto invoker = Start(options);  // the first start's failure is counted, not returned
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "echo").call),
            "worker sent no ready within 500 ms");
}

TEST(RemoteWorker, AnotherProtocolVersionIsRefusedAtStart) {
  auto invoker = Start(PolicyWorker({"--protocol", "2"}));
  ASSERT_TRUE(invoker);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "echo").call),
            "worker broke the protocol at its start: the worker speaks protocol 2, Weir speaks 1");
}

TEST(RemoteWorker, PrintsGoToWeirsStderrNamingTheStep) {
  ::testing::internal::CaptureStderr();
  {
    auto invoker = Start(PolicyWorker());
    ASSERT_TRUE(invoker);
    ExpectEchoed(*invoker, TestCall::Doing(1, "print"));
    ExpectEchoed(*invoker, TestCall::Doing(2, "echo"));
  }  // stopping the worker drains its output
  std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(stderr_text.find("weir: [process cart] a stray print on stdout\n"), std::string::npos)
      << stderr_text;
  EXPECT_NE(stderr_text.find("weir: [process cart] and one on stderr\n"), std::string::npos)
      << stderr_text;
}

TEST(RemoteWorker, ASpentRestartBudgetIsFatal) {
  RemoteWorkerOptions options = PolicyWorker();
  options.restart_budget = 2;
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  EXPECT_NE(Refusal(*invoker, TestCall::Doing(1, "crash").call), "");
  EXPECT_NE(Refusal(*invoker, TestCall::Doing(1, "crash").call), "");
  const std::string fatal = "process step 'cart': worker [python3 " + kPolicyWorker +
                            "] failed 3 times in a row; last: worker exited with code 3 "
                            "(waiting for call 1)";
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(1, "crash").call, InvokeFailure::kFatal), fatal);
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(2, "echo").call, InvokeFailure::kFatal), fatal);
}

TEST(RemoteWorker, ASuccessResetsTheRestartBudget) {
  RemoteWorkerOptions options = PolicyWorker();
  options.restart_budget = 1;
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  for (int64_t call = 1; call <= 3; ++call) {
    EXPECT_NE(Refusal(*invoker, TestCall::Doing(call, "crash").call), "");
    ExpectEchoed(*invoker, TestCall::Doing(call, "echo"));
  }
}

TEST(RemoteWorker, ACommandThatDoesNotExistIsAnErrorAtStart) {
  auto invoker = StartRemoteInvoker(Options({"no-such-weir-worker", "x"}));
  ASSERT_FALSE(invoker.ok());
  EXPECT_EQ(invoker.status().message(),
            "process step 'cart': cannot run worker [no-such-weir-worker x]: No such file or "
            "directory");
}

TEST(RemoteWorker, OptionsAreChecked) {
  RemoteWorkerOptions options = Options({});
  EXPECT_EQ(StartRemoteInvoker(options).status().message(),
            "process step 'cart': give a worker either a command or connect, not both nor "
            "neither");
  for (std::string address : {"10.0.0.1:9000", "example.com:80", "0.0.0.0:80", ":80"}) {
    options.connect = address;
    EXPECT_EQ(StartRemoteInvoker(options).status().message(),
              "process step 'cart': connect '" + address +
                  "' is not a loopback address: a worker is reached at unix:PATH, "
                  "127.0.0.1:PORT or localhost:PORT only (the protocol has no authentication)");
  }
  options.connect = "localhost:99999";
  EXPECT_FALSE(StartRemoteInvoker(options).ok());
}

// A process the test runs beside the invoker, killed at the end.
class Server {
 public:
  explicit Server(std::vector<std::string> command) {
    std::vector<char*> argv;
    for (std::string& arg : command) argv.push_back(arg.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawnp(&pid_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  }
  ~Server() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

void WaitForFile(const std::filesystem::path& path) {
  for (int i = 0; i < 1000 && !std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
}

TEST(RemoteWorker, ConnectsToAWorkerOnAUnixSocketAndReconnectsAfterAFailure) {
  testing::TempDir dir;
  const std::string socket_path = dir / "worker.sock";
  Server server({"python3", kPolicyWorker, "--listen", "unix:" + socket_path});
  WaitForFile(socket_path);
  RemoteWorkerOptions options = Options({});
  options.connect = "unix:" + socket_path;
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  ExpectEchoed(*invoker, TestCall(1, {Json(R"({"n":1})")}));
  EXPECT_EQ(Refusal(*invoker, TestCall::Doing(2, "garbage").call)
                .rfind("worker broke the protocol answering call 2", 0),
            0u);
  ExpectEchoed(*invoker, TestCall::Doing(3, "echo"));
}

TEST(RemoteWorker, AWorkerThatIsNotListeningCountsAgainstTheBudget) {
  testing::TempDir dir;
  RemoteWorkerOptions options = Options({});
  options.connect = "unix:" + (dir / "nobody.sock");
  options.restart_budget = 1;
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  std::string fatal = Refusal(*invoker, TestCall::Doing(1, "echo").call, InvokeFailure::kFatal);
  EXPECT_NE(fatal.find("failed 2 times in a row; last: cannot connect: No such file"),
            std::string::npos)
      << fatal;
}

// The cart example (Python or Node): an add sets the cart and the timer, a checkout clears
// both, the timer emits the alert.
void ExpectCartAbandon(const RemoteWorkerOptions& options) {
  auto started = Start(options);
  ASSERT_TRUE(started);
  Invoker& invoker = *started;
  TestCall adds(1, {Json(R"({"action":"add_to_cart"})"), Json(R"({"action":"checkout"})")});
  std::vector<ProcessResult> results;
  std::optional<InvokeError> error = invoker.Invoke(adds.call, results);
  ASSERT_FALSE(error) << error->reason;
  ASSERT_EQ(results.size(), 2u);
  ProcessResult added{.id = 1};
  added.Set("cart", 1);
  added.SetTimer("abandon", 1000 + 600000);
  EXPECT_EQ(results[0], added);
  ProcessResult checked_out{.id = 2};
  checked_out.Clear("cart");
  checked_out.CancelTimer("abandon");
  EXPECT_EQ(results[1], checked_out);

  Value state = Json(R"({"cart":3})");
  Call fired{.call = 2, .attempt = 1, .watermark = 700000, .activations = {}};
  fired.activations.push_back({.id = 3,
                               .key = Key::String("ann"),
                               .time = 601000,
                               .watermark = 700000,
                               .input = nullptr,
                               .timer = "abandon",
                               .state = &state});
  error = invoker.Invoke(fired, results);
  ASSERT_FALSE(error) << error->reason;
  ProcessResult alert{.id = 3};
  alert.Emit(Json(R"({"user":"ann","items":3,"abandoned_at":601000})"), 601000);
  alert.Clear("cart");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], alert);
}

TEST(RemoteWorker, ThePythonExampleRuns) {
  RemoteWorkerOptions options = Options({"python3", "cart_abandon.py"});
  options.working_dir = kPythonExamples;
  ExpectCartAbandon(options);
}

// Listening, the Python library serves each task's connection (a step of several tasks opens
// one each), at the same time.
TEST(RemoteWorker, ThePythonLibraryListensWhenAskedAndServesEachTasksConnectionAtOnce) {
  testing::TempDir dir;
  const std::string socket_path = dir / "cart.sock";
  Server server(
      {"python3", kPythonExamples + "/cart_abandon.py", "--listen", "unix:" + socket_path});
  WaitForFile(socket_path);
  RemoteWorkerOptions options = Options({});
  options.connect = "unix:" + socket_path;
  ExpectCartAbandon(options);

  options.restart_budget = 0;  // a connection that is not served fails the test
  auto first = Start(options);
  auto second = Start(options);
  ASSERT_TRUE(first && second);
  std::vector<ProcessResult> results;
  for (Invoker* invoker : {first.get(), second.get(), first.get()}) {
    TestCall view(1, {Json(R"({"action":"view"})")});
    std::optional<InvokeError> error = invoker->Invoke(view.call, results);
    ASSERT_FALSE(error) << error->reason;
    EXPECT_EQ(results.size(), 1u);
  }
}

// A loopback TCP port nobody listens on now (the kernel's pick for a socket bound to port 0).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  close(fd);
  return ntohs(address.sin_port);
}

// Waits (up to 10 s) until something accepts connections on the loopback `port`.
void WaitForLoopbackPort(int port) {
  for (int i = 0; i < 1000; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool up = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (up) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

TEST(RemoteWorker, ThePythonLibraryListensOnALoopbackTcpPort) {
  const int port = FreeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  Server server({"python3", kPythonExamples + "/cart_abandon.py", "--listen", address});
  WaitForLoopbackPort(port);
  RemoteWorkerOptions options = Options({});
  options.connect = address;
  ExpectCartAbandon(options);
}

TEST(RemoteWorker, TheNodeExampleRuns) {
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  RemoteWorkerOptions options = Options({"node", "cart_abandon.js"});
  options.working_dir = kNodeExamples;
  ExpectCartAbandon(options);
}

TEST(RemoteWorker, TheCppWorkerCountsIdleKeys) {
  RemoteWorkerOptions options = Options({WEIR_CPP_WORKER, "count-idle"});
  options.process.state = {"count"};
  options.process.timers = {"idle"};
  auto invoker = Start(options);
  ASSERT_TRUE(invoker);
  TestCall input(1, {Json(R"({"x":1})")});
  std::vector<ProcessResult> results;
  std::optional<InvokeError> error = invoker->Invoke(input.call, results);
  ASSERT_FALSE(error) << error->reason;
  ProcessResult counted{.id = 1};
  counted.Set("count", 1);
  counted.SetTimer("idle", 1000 + 60000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], counted);

  Value state = Json(R"({"count":4})");
  Call fired{.call = 2, .attempt = 1, .watermark = 61000, .activations = {}};
  fired.activations.push_back({.id = 2,
                               .key = Key::Int(42),
                               .time = 61000,
                               .watermark = 61000,
                               .input = nullptr,
                               .timer = "idle",
                               .state = &state});
  error = invoker->Invoke(fired, results);
  ASSERT_FALSE(error) << error->reason;
  ProcessResult idle{.id = 2};
  idle.Emit(Json(R"({"key":42,"count":4})"), 61000);
  idle.Clear("count");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], idle);
}

}  // namespace
}  // namespace weir::process
