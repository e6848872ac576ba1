// Runs the `weir` binary (or any program) as a child process for whole-system tests: stdin from
// a string, stdout and stderr captured, kill -9 at will.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace weir::testing {

struct CommandResult {
  int exit_code = -1;  // -signal if killed
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  // Starts `argv` with `env` added to the environment; its stdout and stderr go to files under
  // `scratch` (a directory), its stdin reads `input`.
  Subprocess(const std::vector<std::string>& argv, const std::string& scratch,
             const std::string& input = "", const std::vector<std::string>& env = {}) {
    static int counter = 0;
    base_ = scratch + "/proc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    {
      std::ofstream in(base_ + ".in");
      in << input;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      int in = ::open((base_ + ".in").c_str(), O_RDONLY);
      int out = ::open((base_ + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open((base_ + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Subprocess() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
    for (const char* suffix : {".in", ".out", ".err"}) ::unlink((base_ + suffix).c_str());
  }

  void Kill(int signal = SIGKILL) { ::kill(pid_, signal); }
  // Waits for the process to end.
  CommandResult Wait() {
    CommandResult r;
    int status = 0;
    if (!waited_) {
      ::waitpid(pid_, &status, 0);
      waited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    r.exit_code = exit_code_;
    r.out = Slurp(base_ + ".out");
    r.err = Slurp(base_ + ".err");
    return r;
  }
  // Whether the process has ended (without waiting).
  bool Done() {
    if (waited_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      waited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    return waited_;
  }
  std::string StdoutSoFar() const { return Slurp(base_ + ".out"); }
  pid_t pid() const { return pid_; }

 private:
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string base_;
  pid_t pid_ = -1;
  bool waited_ = false;
  int exit_code_ = -1;
};

inline CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch,
                                const std::string& input = "",
                                const std::vector<std::string>& env = {}) {
  Subprocess p(argv, scratch, input, env);
  return p.Wait();
}

}  // namespace weir::testing
