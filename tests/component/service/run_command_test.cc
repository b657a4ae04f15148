// `fraud-detector run` as an operator starts it, against a broker address where nothing listens.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <rocksdb/version.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "detectors/transaction.h"
#include "service/version.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace fraud::testing {
namespace {

using std::chrono::seconds;
using ::testing::ContainsRegex;

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

struct Finished {
  int status = -1;
  std::string out;
  std::string err;
};

// fraud-detector with `args`, run to its end (refusals end at once).
Finished runToEnd(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}) {
  TempDir dir;
  ChildProcess process(FRAUD_DETECTOR_BIN, args, env, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  return {status.value_or(-1), process.stdoutText(), process.stderrText()};
}

// What runs: the project's version and those of librdkafka and RocksDB as the process loads
// them (the libraries' own functions; the headers' macros name the build's, not the run's).
TEST(RunCommand, VersionNamesTheLibrariesItRunsWith) {
  const auto run = runToEnd({"--version"});
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, "fraud-detector " + std::string(service::kVersion) + "\nlibrdkafka " +
                         rd_kafka_version_str() + "\nRocksDB " +
                         rocksdb::GetRocksVersionAsString() + "\n");
  EXPECT_EQ(run.err, "");
}

// `run --help` lists its options under headings, in the order a deployment is set up, every
// option under one (issue 28: about 90 lines in one list).
TEST(RunCommand, HelpGroupsTheOptionsUnderHeadings) {
  const auto run = runToEnd({"run", "--help"});
  EXPECT_EQ(run.status, 0);
  size_t at = 0;
  for (const char* heading : {"\nKafka: the cluster, topics and group:\n", "\nState:\n",
                              "\nThe rule:\n", "\nCommits, output, standbys and the stop:\n",
                              "\nThe HTTP API and probes:\n", "\nLateness, lookups, logging:\n"}) {
    const auto found = run.out.find(heading, at);
    ASSERT_NE(found, std::string::npos) << heading << " (in order) in:\n" << run.out;
    at = found;
  }
  for (const char* option : {"--brokers", "--kafka ", "--state-dir", "--window-ms",
                             "--alert-delivery", "--http-port", "--log-level"}) {
    const auto line = run.out.find(std::string("\n  ") + option);
    ASSERT_NE(line, std::string::npos) << option;
    EXPECT_GT(line, run.out.find("\nKafka: the cluster")) << option;
  }
}

// A mistyped subcommand or option gets the closest real one named, in one line: the suggestion,
// not the parser's own complaint before it (issue 28).
TEST(RunCommand, SuggestsTheClosestSubcommand) {
  const auto run = runToEnd({"rnu"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "fraud-detector: unknown command 'rnu'; did you mean 'run'?\n");
}

TEST(RunCommand, SuggestsTheClosestOption) {
  auto run = runToEnd({"run", "--http-prot", "0"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "fraud-detector run: unknown option --http-prot; did you mean --http-port?\n");
  run = runToEnd({"run", "--broker", "127.0.0.1:1"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "fraud-detector run: unknown option --broker; did you mean --brokers?\n");
}

// The values, as a user types them, in the refusal and in --help; not the parser's mapping of
// them to numbers.
TEST(RunCommand, AlertDeliveryNamesItsValues) {
  const auto run = runToEnd({"run", "--alert-delivery", "instant"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "--alert-delivery: must be immediate or transactional, got 'instant'\n"
            "Run with --help for more information.\n");
  const auto help = runToEnd({"run", "--help"});
  EXPECT_EQ(help.status, 0);
  // CLI11 2.3 (Debian 12) prints the default as "=transactional", 2.4 (Debian 13) as
  // " [transactional]".
  EXPECT_THAT(help.out, ContainsRegex("--alert-delivery MODE:immediate or transactional"
                                      "(=| \\[)transactional"));
  EXPECT_EQ(help.out.find("->"), std::string::npos) << help.out;
}

// A problem with a value is reported under the flag that sets it, not the field it fills.
TEST(RunCommand, ValidationNamesFlagsNotFields) {
  TempDir dir;
  const auto run =
      runToEnd({"run", "--embedded-kafka", "--state-dir", dir.file("state"), "--window-ms", "0",
                "--threshold", "5", "--max-events", "4", "--rocksdb-block-cache-mb", "4"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "run: --rocksdb-block-cache-mb must be 8..1048576 MiB, got 4\n"
            "run: --window-ms must be in 1.." +
                std::to_string(detectors::kMaxEventTime) +
                ", got 0\n"
                "run: --max-events must be in --threshold (5)..1000000, got 4\n"
                "run: 3 problem(s); see fraud-detector run --help\n");
}

// The API checks the options the flags become: its problems, too, under the flags' names, and
// each once.
TEST(RunCommand, ApiProblemsNameTheFlagsOnce) {
  TempDir dir;
  const auto run =
      runToEnd({"run", "--embedded-kafka", "--state-dir", dir.file("state"), "--http-address",
                "localhost", "--peer-url-template", "http://peer/", "--tls-cert-file", "cert.pem"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "run: --peer-url-template must contain {member}\n"
            "run: --tls-cert-file and --tls-key-file go together\n"
            "run: --http-address must be an IPv4 or IPv6 literal, got 'localhost'\n"
            "run: 3 problem(s); see fraud-detector run --help\n");
}

// Without a cluster there is still a way to try the service: say so.
TEST(RunCommand, MissingBrokersNamesTheEmbeddedCluster) {
  TempDir dir;
  const auto run = runToEnd(
      {"run", "--state-dir", dir.file("state")},
      {{"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}, {"FRAUD_BROKERS", ""}});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err,
            "run: --brokers (FRAUD_BROKERS) is required; or --embedded-kafka, an in-process "
            "cluster to try the service on\n"
            "run: 1 problem(s); see fraud-detector run --help\n");
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

// The service until its probe listener is up (or it exits, or 60 s pass); then stopped.
struct Started {
  bool exited = false;
  std::string err;
};

Started startAndStop(const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {}) {
  TempDir dir;
  std::vector<std::string> all = {"run", "--embedded-kafka", "--embedded-partitions",
                                  "1",   "--state-dir",      dir.file("state")};
  all.insert(all.end(), args.begin(), args.end());
  std::map<std::string, std::string> all_env = {
      {"FRAUD_CARD_HASH_KEY", "run-command-test-card-hash-key-32-bytes"}};
  all_env.insert(env.begin(), env.end());
  ChildProcess process(FRAUD_DETECTOR_BIN, all, all_env, dir.file("run"));
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline && process.running() &&
         process.stderrText().find("probes on http://") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Started started{!process.running(), process.stderrText()};
  process.signal(SIGTERM);
  EXPECT_TRUE(process.waitExit(seconds(60)).has_value());
  return started;
}

// The line of `text` that holds `what`, without its newline; "" when there is none.
std::string lineWith(const std::string& text, const std::string& what) {
  const size_t at = text.find(what);
  if (at == std::string::npos) return "";
  const size_t start = text.rfind('\n', at);
  const size_t begin = start == std::string::npos ? 0 : start + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

// The port of "API on http://ADDRESS:PORT " in the log, or 0.
int apiPort(const std::string& err, const std::string& address) {
  const std::string prefix = "API on http://" + address + ":";
  const size_t at = err.find(prefix);
  return at == std::string::npos ? 0 : std::atoi(err.c_str() + at + prefix.size());
}

// Issue 28: --http-port alone moves the probes too (to the next port), so that a second
// instance on the host does not collide with the first on 8081. Two adjacent free ports are
// found by binding them; another process may take one before the service does, so a few pairs
// are tried.
TEST(RunCommand, HttpPortAloneMovesTheProbesToTheNextPort) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = 0;
    {
      const HeldPort api(0);
      const HeldPort probe(api.port() == 65535 ? 0 : api.port() + 1);
      if (api.port() == 0 || probe.port() == 0) continue;
      port = api.port();
    }
    const auto started =
        startAndStop({"--http-port", std::to_string(port), "--http-address", "127.0.0.1"});
    if (started.err.find("cannot serve") != std::string::npos) continue;  // taken meanwhile
    EXPECT_NE(started.err.find("API on http://127.0.0.1:" + std::to_string(port) + " "),
              std::string::npos)
        << started.err;
    EXPECT_NE(started.err.find("probes on http://127.0.0.1:" + std::to_string(port + 1) + " "),
              std::string::npos)
        << started.err;
    return;
  }
  FAIL() << "no two adjacent free ports in 5 attempts";
}

// Issue 28: --embedded-kafka is for trying the product: without --http-address its API (card
// state on /v1/*) is served on loopback alone.
TEST(RunCommand, EmbeddedKafkaServesOnLoopbackByDefault) {
  const auto started = startAndStop({"--http-port", "0"});
  EXPECT_FALSE(started.exited) << started.err;
  EXPECT_NE(apiPort(started.err, "127.0.0.1"), 0) << started.err;
  EXPECT_NE(started.err.find("probes on http://127.0.0.1:"), std::string::npos) << started.err;
  EXPECT_EQ(started.err.find("without a token"), std::string::npos) << started.err;
}

// Card state served to anyone who reaches the address: said at start, in one line.
TEST(RunCommand, WarnsWhenCardStateIsServedWithoutATokenBeyondLoopback) {
  auto started = startAndStop({"--http-port", "0", "--http-address", "0.0.0.0"});
  const int port = apiPort(started.err, "0.0.0.0");
  ASSERT_NE(port, 0) << started.err;
  const std::string warning = lineWith(started.err, "without a token");
  EXPECT_TRUE(warning.ends_with(
      " warning fraud-detector: /v1/* (card state) answers without a token on 0.0.0.0:" +
      std::to_string(port) +
      ", to anyone who reaches it; give --api-token-file (or FRAUD_API_TOKEN), or --http-address "
      "127.0.0.1"))
      << started.err;

  started = startAndStop({"--http-port", "0", "--http-address", "0.0.0.0"},
                         {{"FRAUD_API_TOKEN", "run-command-test-token"}});
  EXPECT_NE(apiPort(started.err, "0.0.0.0"), 0) << started.err;
  EXPECT_EQ(started.err.find("without a token"), std::string::npos) << started.err;
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
