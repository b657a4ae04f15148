// Core dumps are off by default: the function in a child process, then the fraud-detector binary
// as started (`replay` and `run`), seen from outside through procfs.
#include "service/core_dumps.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fraud::service {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// The policy applied in a forked child, which reports through its exit status:
// bit 0 dumpable, bit 1 a core-size limit above 0.
int childReport(bool disable) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (disable && !disableCoreDumps().ok()) ::_exit(100);
    rlimit core{};
    ::getrlimit(RLIMIT_CORE, &core);
    const int dumpable = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 ? 1 : 0;
    ::_exit(dumpable | (core.rlim_cur > 0 || core.rlim_max > 0 ? 2 : 0));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CoreDumps, DisablingMakesTheProcessNonDumpableWithNoCoreSize) {
  // The test process itself may inherit RLIMIT_CORE 0; give the child something to lower.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  rlimit some = saved;
  some.rlim_cur = some.rlim_max;
  ::setrlimit(RLIMIT_CORE, &some);
  const bool limit_above_zero = some.rlim_max > 0;

  const int untouched = childReport(false);
  EXPECT_EQ(untouched & 1, 1) << "a plain child is dumpable";
  if (limit_above_zero) {
    EXPECT_EQ(untouched & 2, 2);
  }
  EXPECT_EQ(childReport(true), 0) << "dumpable and/or a core-size limit after disableCoreDumps()";
  ::setrlimit(RLIMIT_CORE, &saved);
}

// --- the binary, from outside ------------------------------------------------------------------

// The kernel hands the files of /proc/PID of a non-dumpable process to root (proc(5),
// PR_SET_DUMPABLE), so the owner of /proc/PID/status tells whether the process is dumpable,
// provided the process does not run as root: as root, the test starts the binary as this
// unprivileged uid.
constexpr uid_t kUnprivileged = 65534;

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "/core-dumps-XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// fraud-detector started with `args` and `env` (added to a minimal environment), as
// kUnprivileged when this test runs as root; stdout and stderr go to files in `dir`.
class Started {
 public:
  Started(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
          const std::string& dir)
      : out_(dir + "/stdout"), err_(dir + "/stderr") {
    const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::vector<std::string> argv_text = {FRAUD_DETECTOR_BIN};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<std::string> env_text = {"PATH=/usr/bin:/bin"};
    for (const auto& [name, value] : env) env_text.push_back(name + "=" + value);
    std::vector<char*> argv, envp;
    for (auto& a : argv_text) argv.push_back(a.data());
    for (auto& e : env_text) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      const int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, STDIN_FILENO);
      if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(kUnprivileged) != 0 ||
                               ::setuid(kUnprivileged) != 0)) {
        ::_exit(120);
      }
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
  }
  ~Started() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Started(const Started&) = delete;
  Started& operator=(const Started&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] static uid_t runnerUid() { return ::geteuid() == 0 ? kUnprivileged : ::geteuid(); }

  [[nodiscard]] std::string text(const std::string& path) const {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  [[nodiscard]] std::string stdoutText() const { return text(out_); }
  [[nodiscard]] std::string stderrText() const { return text(err_); }

  // Waits for stdout to hold `needle`; false at the deadline or when the process has exited.
  [[nodiscard]] bool waitForOutput(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (stdoutText().find(needle) != std::string::npos) return true;
      if (exitStatus(milliseconds(0))) return false;
      std::this_thread::sleep_for(milliseconds(20));  // polling a file, bounded by the deadline
    }
    return false;
  }
  // The exit status once the process has exited within `timeout`, else nothing.
  [[nodiscard]] std::optional<int> exitStatus(std::chrono::milliseconds timeout) {
    if (exited_) return status_;
    const auto deadline = Clock::now() + timeout;
    do {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return status_;
      }
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(milliseconds(20));
    } while (true);
    return std::nullopt;
  }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

uid_t procOwner(pid_t pid) {
  struct stat info {};
  // The file, not the directory: /proc/PID itself always shows the effective uid.
  if (::stat(("/proc/" + std::to_string(pid) + "/status").c_str(), &info) != 0) {
    return static_cast<uid_t>(-1);
  }
  return info.st_uid;
}

// The "Max core file size" line of /proc/PID/limits: soft and hard, as written there.
std::string coreLimit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max core file size", 0) == 0) {
      std::istringstream fields(line.substr(std::string("Max core file size").size()));
      std::string soft, hard;
      fields >> soft >> hard;
      return soft + " " + hard;
    }
  }
  return "(none)";
}

// `fraud-detector replay --input FIFO`: the input is opened after the policy is applied, and
// blocks until this test opens the FIFO's other end, so while the test holds it the process is
// alive and past its start.
void checkReplay(const std::vector<std::string>& extra_args,
                 const std::map<std::string, std::string>& extra_env, bool expect_dumpable) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);  // the unprivileged child writes nothing here
  const std::string fifo = dir.path() + "/input";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(fifo.c_str(), 0666), 0);
  std::vector<std::string> args = {"replay", "--input", fifo, "--output", "-"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::map<std::string, std::string> env = {
      {"FRAUD_CARD_HASH_KEY", "core-dump-test-key-0123456789abcdef"}};
  env.insert(extra_env.begin(), extra_env.end());
  Started process(args, env, dir.path());

  // O_NONBLOCK writer opens fail with ENXIO until the reader has opened: poll with a deadline.
  int writer = -1;
  const auto deadline = Clock::now() + seconds(30);
  while ((writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 &&
         Clock::now() < deadline) {
    ASSERT_FALSE(process.exitStatus(milliseconds(0)).has_value()) << process.stderrText();
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_GE(writer, 0) << "replay never opened its input: " << process.stderrText();

  const uid_t owner = procOwner(process.pid());
  const std::string limit = coreLimit(process.pid());
  if (expect_dumpable) {
    EXPECT_EQ(owner, Started::runnerUid())
        << "/proc/PID/status of a dumpable process is its user's";
  } else {
    EXPECT_EQ(owner, 0u)
        << "/proc/PID/status belongs to root only when the process is not dumpable";
    EXPECT_EQ(limit, "0 0");
  }
  ::close(writer);  // end of input: replay finishes
  EXPECT_EQ(process.exitStatus(seconds(30)), 0) << process.stderrText();
}

TEST(CoreDumps, ReplayIsNotDumpableByDefault) { checkReplay({}, {}, false); }

TEST(CoreDumps, ReplayIsDumpableWithAllowCoreDumps) {
  checkReplay({"--allow-core-dumps"}, {}, true);
  checkReplay({}, {{"FRAUD_ALLOW_CORE_DUMPS", "true"}}, true);
}

// `fraud-detector run --embedded-kafka`: checked once it has printed its bootstrap line, which
// comes after the policy is applied.
void checkRun(const std::vector<std::string>& extra_args, bool expect_dumpable) {
  TempDir dir;
  const std::string state = dir.path() + "/state";
  ASSERT_TRUE(std::filesystem::create_directory(state));
  ASSERT_EQ(::chown(state.c_str(), Started::runnerUid(), static_cast<gid_t>(-1)), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  std::vector<std::string> args = {"run",
                                   "--embedded-kafka",
                                   "--embedded-partitions",
                                   "1",
                                   "--state-dir",
                                   state,
                                   "--http-address",
                                   "127.0.0.1",
                                   "--http-port",
                                   "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // FRAUD_PROBE_PORT=0: any free port, where the service has a separate probe listener.
  Started process(args, {{"FRAUD_PROBE_PORT", "0"}}, dir.path());
  ASSERT_TRUE(process.waitForOutput("bootstrap=", seconds(60)))
      << process.stdoutText() << process.stderrText();
  const uid_t owner = procOwner(process.pid());
  if (expect_dumpable) {
    EXPECT_EQ(owner, Started::runnerUid());
  } else {
    EXPECT_EQ(owner, 0u) << "run is dumpable";
    EXPECT_EQ(coreLimit(process.pid()), "0 0");
  }
  ::kill(process.pid(), SIGTERM);
  EXPECT_TRUE(process.exitStatus(seconds(60)).has_value()) << process.stderrText();
}

TEST(CoreDumps, RunIsNotDumpableByDefault) { checkRun({}, false); }

TEST(CoreDumps, RunIsDumpableWithAllowCoreDumps) { checkRun({"--allow-core-dumps"}, true); }

}  // namespace
}  // namespace fraud::service
