// `fraud-detector run` as an operator starts it, against a broker address where nothing listens.
#include <gtest/gtest.h>

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
                        "--http-port", "0", "--http-address", "127.0.0.1"},
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

TEST(RunCommand, RefusesAShortCardHashKeyAtStart) {
  TempDir dir;
  ChildProcess process(
      FRAUD_DETECTOR_BIN,
      {"run", "--brokers", "127.0.0.1:1", "--state-dir", dir.file("state"), "--http-port", "0"},
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

}  // namespace
}  // namespace fraud::testing
