// On a 3-broker cluster started by scripts/kafka: the leader of an input partition is killed
// with SIGKILL mid-stream and started again; the alerts still equal `replay`, none twice.
// Label `fault`: it starts its own cluster and takes a minute, so it runs on demand.
#include <cstdio>

#include "tests/integration/service/live_service_fixture.h"

namespace fraud::testing {
namespace {

class BrokerFailoverTest : public LiveServiceTest {
 protected:
  void SetUp() override {
    cluster_dir_ = fs::temp_directory_path() / TestKafka::uniqueName("fault-kafka");
    // Ports checked free, below the kernel's ephemeral range (a fixed guess there collided with
    // a client's own connection: "Address already in use").
    const std::string port = freeKafkaBase(3);
    ASSERT_FALSE(port.empty()) << "no free ports for a 3-broker cluster";
    const auto out = script({"start", "--brokers", "3", "--port", port});
    const auto at = out.find("bootstrap=");
    ASSERT_NE(at, std::string::npos) << out;
    auto brokers = out.substr(at + 10);
    brokers = brokers.substr(0, brokers.find('\n'));
    useBrokers(brokers);
  }

  void TearDown() override {
    LiveServiceTest::TearDown();
    script({"stop"});
    fs::remove_all(cluster_dir_);
  }

  // scripts/lib/ports.sh's free_kafka_base: a --port BASE with every broker's and controller's
  // port free; empty when none was found.
  static std::string freeKafkaBase(int brokers) {
    const std::string command = "bash -c \". '" + std::string(FRAUD_SOURCE_DIR) +
                                "/scripts/lib/ports.sh' && free_kafka_base " +
                                std::to_string(brokers) + "\"";
    std::string out = run(command);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out.find_first_not_of("0123456789") == std::string::npos ? out : std::string();
  }

  // Runs a shell command; returns its stdout.
  static std::string run(const std::string& command) {
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
      ::pclose(pipe);
    }
    return out;
  }

  // Runs scripts/kafka with the cluster directory; returns its stdout.
  std::string script(std::vector<std::string> args) {
    std::string command = std::string(FRAUD_SOURCE_DIR) + "/scripts/kafka";
    for (const auto& a : args) command += " '" + a + "'";
    command += " --dir '" + cluster_dir_.string() + "' 2>&1";
    return run(command);
  }

  fs::path cluster_dir_;
};

TEST_F(BrokerFailoverTest, LeaderKilledMidStreamAndRestartedLosesNothingRepeatsNothing) {
  StreamOptions options;
  options.records = 150'000;
  options.cards = 5'000;
  options.step_ms = 3;
  produce(generateStream(options));
  auto& service = startInstance("failover", {"--changelog-replication-factor", "3"});
  ASSERT_TRUE(waitForSomeProgress()) << service.stderrText();

  const int leader = kafka_->leaderOf(input_, 0);
  ASSERT_GE(leader, 1);
  const auto killed = script({"kill-broker", std::to_string(leader)});
  std::printf("killed broker %d: %s\n", leader, killed.c_str());
  const auto restarted = script({"start-broker", std::to_string(leader)});
  std::printf("restarted broker %d: %s\n", leader, restarted.c_str());

  expectAlertsMatchReplay();
  service.signal(SIGTERM);
  EXPECT_EQ(service.waitExit(seconds(25)), 0) << service.stderrText();
}

// Every broker gone when SIGTERM comes: the commit cannot go through, and the teardown after the
// stream thread (the fencer's and the owner refresh's threads in admin calls, the clients' close)
// waits on brokers that never answer. The whole stop must still end within
// --shutdown-timeout-ms (plus the watchdog's one second): before, the watchdog was destroyed
// before that teardown ran, and nothing bounded it.
TEST_F(BrokerFailoverTest, EveryBrokerGoneAtSigtermTheStopStillEndsWithinItsDeadline) {
  StreamOptions options;
  options.records = 50'000;
  options.cards = 2'000;
  options.step_ms = 3;
  produce(generateStream(options));
  auto& service = startInstance(
      "unreachable", {"--changelog-replication-factor", "3", "--shutdown-timeout-ms", "3000"});
  ASSERT_TRUE(waitForSomeProgress()) << service.stderrText();
  const auto stopped = script({"stop"});
  std::printf("stopped the cluster: %s\n", stopped.c_str());

  const auto signalled = std::chrono::steady_clock::now();
  service.signal(SIGTERM);
  const auto status = service.waitExit(seconds(20));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - signalled);
  ASSERT_TRUE(status.has_value()) << "still running 20 s after SIGTERM; " << service.stderrText();
  EXPECT_EQ(*status, 1) << "nothing could commit: not a clean stop";
  EXPECT_LE(took.count(), 3000 + 1000 + 500) << "the stop overran --shutdown-timeout-ms 3000";
}

}  // namespace
}  // namespace fraud::testing
