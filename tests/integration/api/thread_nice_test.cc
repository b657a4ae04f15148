// The API listener's threads run at ApiOptions::thread_nice, the probe listener's at the
// process's own priority: seen from inside the view calls each listener makes, and from the
// kernel's view of the I/O threads (/proc/self/task).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/api/api_server_fixture.h"

namespace fraud::api {
namespace {

using testing::HttpClient;
using testing::waitFor;

int niceOf(pid_t tid) {
  errno = 0;
  return ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

int niceOfThisThread() { return niceOf(static_cast<pid_t>(::syscall(SYS_gettid))); }

// The niceness of every thread of this process named `name`, from /proc/self/task.
std::vector<int> nicesOfThreadsNamed(const std::string& name) {
  std::vector<int> nices;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return nices;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string comm_name;
    std::getline(comm, comm_name);
    if (comm_name == name) nices.push_back(niceOf(std::stoi(entry->d_name)));
  }
  ::closedir(dir);
  return nices;
}

// Delegates to the fixture's view and records the niceness of the thread that asked.
class NiceRecordingView final : public ServiceView {
 public:
  explicit NiceRecordingView(const ServiceView& inner) : inner_(inner) {}

  [[nodiscard]] int lastNice() const { return last_nice_.load(); }

  [[nodiscard]] ServiceStatus status() const override {
    last_nice_.store(niceOfThisThread());
    return inner_.status();
  }
  [[nodiscard]] std::optional<int32_t> partitionOf(std::string_view card) const override {
    return inner_.partitionOf(card);
  }
  [[nodiscard]] detectors::CardRef cardRef(std::string_view card) const override {
    return inner_.cardRef(card);
  }
  [[nodiscard]] CardLookup lookup(int32_t partition,
                                  const detectors::CardRef& card_ref) const override {
    last_nice_.store(niceOfThisThread());
    return inner_.lookup(partition, card_ref);
  }
  [[nodiscard]] CardLookup lookupHeld(const detectors::CardRef& card_ref) const override {
    return inner_.lookupHeld(card_ref);
  }
  [[nodiscard]] std::optional<std::string> ownerOf(int32_t partition) const override {
    return inner_.ownerOf(partition);
  }

 private:
  const ServiceView& inner_;
  mutable std::atomic<int> last_nice_{-100};
};

class ThreadNiceTest : public ApiServerTest {
 protected:
  void startRecording() {
    router_ = std::make_unique<Router>(options_, recording_, registry_);
    server_ = std::make_unique<HttpServer>(options_, *router_);
    const auto problem = server_->start();
    ASSERT_TRUE(problem.ok()) << problem.message();
    port_ = server_->port();
  }

  NiceRecordingView recording_{view_};
  const int process_nice_ = niceOfThisThread();
};

TEST_F(ThreadNiceTest, ApiThreadsRunAtTheNiceGivenAndProbeThreadsAtTheProcesss) {
  if (process_nice_ > 7) GTEST_SKIP() << "the test process runs at nice " << process_nice_;
  options_.thread_nice = 7;
  options_.threads = 2;
  startRecording();
  HttpClient api(port_);
  ASSERT_EQ(api.get("/readyz")->status, 200);
  EXPECT_EQ(recording_.lastNice(), 7);  // a view thread of the API listener
  ASSERT_EQ(api.lookup(kCard)->status, 404);
  EXPECT_EQ(recording_.lastNice(), 7);

  HttpClient probes(server_->probePort());
  ASSERT_EQ(probes.get("/readyz")->status, 200);
  EXPECT_EQ(recording_.lastNice(), process_nice_);  // the probe listener's view thread

  // Three I/O threads: the API listener's two at 7, the probe listener's one as the process.
  // (Each lowers itself as it starts: wait for the last to have done so.)
  const std::vector<int> expected{process_nice_, 7, 7};
  std::vector<int> io;
  EXPECT_TRUE(waitFor(
      [&] {
        io = nicesOfThreadsNamed("fd-http-io");
        std::sort(io.begin(), io.end());
        return io == expected;
      },
      std::chrono::seconds(5)))
      << ::testing::PrintToString(io);
}

TEST_F(ThreadNiceTest, ByDefaultEveryThreadRunsAsTheProcess) {
  startRecording();
  HttpClient api(port_);
  ASSERT_EQ(api.get("/readyz")->status, 200);
  EXPECT_EQ(recording_.lastNice(), process_nice_);
  for (const int nice : nicesOfThreadsNamed("fd-http-io")) EXPECT_EQ(nice, process_nice_);
}

}  // namespace
}  // namespace fraud::api
