// `fraud-detector run` as an operator starts it, against a broker address where nothing listens.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace fraud::testing {
namespace {

using std::chrono::seconds;

// Port 1 on loopback: every connection is refused, as with a broker that is down.
TEST(RunCommand, UnreachableBrokerIsReportedAsSuchNotAsAMissingTopic) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN,
                       {"run", "--brokers", "127.0.0.1:1", "--state-dir", dir.file("state"),
                        "--http-port", "0", "--probe-port", "0", "--http-address", "127.0.0.1"},
                       {{"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}},
                       dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 1);
  const auto err = process.stderrText();
  EXPECT_NE(err.find("broker unreachable"), std::string::npos) << err;
  EXPECT_EQ(err.find("create it first"), std::string::npos) << err;
  // librdkafka's own lines come through the service's log (spdlog, its format and level names),
  // not as librdkafka's "%3|...|FAIL|".
  EXPECT_EQ(err.find("|FAIL|"), std::string::npos) << err;
  EXPECT_NE(err.find("fraud-detector: kafka "), std::string::npos) << err;
  EXPECT_NE(err.find(" FAIL: "), std::string::npos) << err;
}

// A --state-dir that cannot hold the state (a plain file, a path under one) is a problem of the
// configuration: reported with the others, naming the path, exit 2, before the embedded broker
// or any listener starts (it used to start both, then die of SIGSEGV, status 139).
TEST(RunCommand, AnUnusableStateDirIsRefusedBeforeAnythingStarts) {
  TempDir dir;
  const std::string file = dir.write("plain-file", "not a directory");
  for (const std::string& state_dir : {file, file + "/state"}) {
    SCOPED_TRACE(state_dir);
    ChildProcess process(
        FRAUD_DETECTOR_BIN,
        {"run", "--embedded-kafka", "--embedded-partitions", "1", "--state-dir", state_dir,
         "--http-port", "0", "--probe-port", "0", "--http-address", "127.0.0.1"},
        {{"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}}, dir.file("run"));
    const auto status = process.waitExit(seconds(60));
    ASSERT_TRUE(status.has_value()) << "still running";
    EXPECT_EQ(*status, 2) << process.stderrText();
    const auto err = process.stderrText();
    EXPECT_NE(err.find("run: --state-dir " + state_dir), std::string::npos) << err;
    EXPECT_NE(err.find(file + " is not a directory"), std::string::npos) << err;
    EXPECT_NE(err.find("1 problem(s)"), std::string::npos) << err;
    EXPECT_EQ(process.stdoutText().find("bootstrap="), std::string::npos)
        << "the embedded broker started: " << process.stdoutText();
    EXPECT_EQ(err.find("API on"), std::string::npos) << "a listener started: " << err;
    EXPECT_EQ(err.find("probes on"), std::string::npos) << "a listener started: " << err;
  }
}

TEST(RunCommand, RefusesAShortCardHashKeyAtStart) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN,
                       {"run", "--brokers", "127.0.0.1:1", "--state-dir", dir.file("state"),
                        "--http-port", "0", "--probe-port", "0"},
                       {{"FRAUD_CARD_HASH_KEY", "0123456789"}}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 2);
  const auto err = process.stderrText();
  EXPECT_NE(err.find("at least 32"), std::string::npos) << err;
  EXPECT_NE(err.find("openssl rand -hex 32"), std::string::npos) << err;
}

}  // namespace
}  // namespace fraud::testing

namespace fraud::testing {
namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The service checks its flags and the API checks the options they become: an operator must
// read each mistake once, under the flag's name.
TEST(RunCommand, OneBadFlagIsReportedOnce) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN,
                       {"run", "--embedded-kafka", "--state-dir", dir.file("state"), "--http-port",
                        "99999", "--probe-port", "70000", "--ready-max-lag", "-1"},
                       {}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 2);
  const auto err = process.stderrText();
  EXPECT_EQ(occurrences(err, "99999"), 1u) << err;
  EXPECT_EQ(occurrences(err, "70000"), 1u) << err;
  EXPECT_EQ(occurrences(err, "ready-max-lag"), 1u) << err;
  EXPECT_EQ(occurrences(err, "ready_max_lag"), 0u) << err;
  EXPECT_NE(err.find("3 problem(s)"), std::string::npos) << err;
}

// A mistyped subcommand or option gets the closest real one named.
TEST(RunCommand, SuggestsTheClosestSubcommand) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN, {"rnu"}, {}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 2);
  const auto err = process.stderrText();
  EXPECT_NE(err.find("did you mean 'run'?"), std::string::npos) << err;
}

TEST(RunCommand, SuggestsTheClosestOption) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN, {"run", "--broker", "127.0.0.1:1"}, {}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 2);
  const auto err = process.stderrText();
  EXPECT_NE(err.find("fraud-detector run: no option --broker; did you mean --brokers?"),
            std::string::npos)
      << err;
}

// A listening TCP socket on 127.0.0.1:`port` (0: any free port), or none when the port is taken
// already (by someone else: taken either way).
class HeldPort {
 public:
  explicit HeldPort(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 1) != 0) {
      return;
    }
    socklen_t size = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  [[nodiscard]] uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

// With the defaults' ports (8080, 8081) taken, as by another instance on the host, a service
// asked for any free API port takes any free probe port too.
TEST(RunCommand, AnyFreeHttpPortMeansAnyFreeProbePortToo) {
  const HeldPort api(8080);
  const HeldPort probe(8081);
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN,
                       {"run", "--embedded-kafka", "--embedded-partitions", "1", "--state-dir",
                        dir.file("state"), "--http-port", "0", "--http-address", "127.0.0.1"},
                       {{"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}},
                       dir.file("run"));
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  std::string err;
  while (std::chrono::steady_clock::now() < deadline && process.running()) {
    err = process.stderrText();
    if (err.find("probes on http://127.0.0.1:") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  err = process.stderrText();
  EXPECT_NE(err.find("probes on http://127.0.0.1:"), std::string::npos) << err;
  EXPECT_EQ(err.find("probes on http://127.0.0.1:8081 "), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot serve"), std::string::npos) << err;
  process.signal(SIGTERM);
  EXPECT_EQ(process.waitExit(seconds(60)), 0) << process.stderrText();
}

// A probe port that is taken is reported under its flag and number, not the API's.
TEST(RunCommand, ATakenProbePortIsNamedWithItsFlag) {
  const HeldPort taken(0);
  ASSERT_NE(taken.port(), 0);
  const std::string port = std::to_string(taken.port());
  TempDir dir;
  ChildProcess process(
      FRAUD_DETECTOR_BIN,
      {"run", "--embedded-kafka", "--embedded-partitions", "1", "--state-dir", dir.file("state"),
       "--http-port", "0", "--probe-port", port, "--http-address", "127.0.0.1"},
      {{"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << "still running";
  EXPECT_EQ(*status, 1);
  const auto err = process.stderrText();
  EXPECT_NE(
      err.find("cannot serve the probes on 127.0.0.1:" + port + " (--probe-port " + port + ")"),
      std::string::npos)
      << err;
}

}  // namespace
}  // namespace fraud::testing
