#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fraud::testing {

// A program run as a child process for a test, its stdout and stderr captured in files.
// Killed with SIGKILL when still running at destruction.
class ChildProcess {
 public:
  // Standard input comes from `stdin_path`.
  ChildProcess(const std::string& program, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env, const std::string& log_prefix,
               const std::string& stdin_path = "/dev/null");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void signal(int sig) const;
  // The exit status (or 128 + signal), or nothing if it is still running at the deadline.
  [[nodiscard]] std::optional<int> waitExit(std::chrono::milliseconds timeout);
  [[nodiscard]] bool running();
  [[nodiscard]] std::string stdoutText() const;
  [[nodiscard]] std::string stderrText() const;
  // Waits until stdout holds a line starting with `prefix`; returns the rest of that line.
  [[nodiscard]] std::optional<std::string> waitForStdoutLine(const std::string& prefix,
                                                             std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string stdout_path_;
  std::string stderr_path_;
};

}  // namespace fraud::testing
