// `fraud-loadgen`'s command line as a newcomer meets it: the help, a mistyped flag, the log
// lines. No broker needed.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <rocksdb/version.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace fraud::testing {
namespace {

using std::chrono::seconds;

struct Output {
  int status = -1;
  std::string out;
  std::string err;
};

Output runProgram(const std::string& program, const std::vector<std::string>& args) {
  TempDir dir;
  ChildProcess process(program, args, {}, dir.file("run"));
  const auto status = process.waitExit(seconds(60));
  return {status.value_or(-1), process.stdoutText(), process.stderrText()};
}

TEST(LoadgenCommand, HelpShowsNoDefaultOfANegatingFlag) {
  const auto help = runProgram(FRAUD_LOADGEN_BIN, {"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--no-latency"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("{false}"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("{true}"), std::string::npos) << help.out;
}

// One definition of the rule's flags: the same help text in both programs.
TEST(LoadgenCommand, DetectorFlagsAreWordedAsTheServicesAre) {
  const auto service = runProgram(FRAUD_DETECTOR_BIN, {"replay", "--help"});
  const auto loadgen = runProgram(FRAUD_LOADGEN_BIN, {"--help"});
  const auto verify = runProgram(FRAUD_LOADGEN_BIN, {"verify", "--help"});
  for (const std::string text :
       {"Window W in milliseconds (>= 1)", "Grace G in milliseconds (>= 0)",
        "Distinct countries N that alert (>= 1)",
        "Live events M one card may hold (>= threshold)"}) {
    EXPECT_NE(service.out.find(text), std::string::npos) << service.out;
    EXPECT_NE(loadgen.out.find(text), std::string::npos) << loadgen.out;
    EXPECT_NE(verify.out.find(text), std::string::npos) << verify.out;
  }
}

TEST(LoadgenCommand, SuggestsTheClosestOption) {
  const auto run = runProgram(FRAUD_LOADGEN_BIN, {"verify", "--brokr", "127.0.0.1:1"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "fraud-loadgen verify: unknown option --brokr; did you mean --brokers?\n");
}

TEST(LoadgenCommand, SuggestsTheClosestCommand) {
  const auto run = runProgram(FRAUD_LOADGEN_BIN, {"verfiy"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "fraud-loadgen: unknown command 'verfiy'; did you mean 'verify'?\n");
}

// What runs, as fraud-detector --version says it: the project's version, librdkafka's and
// RocksDB's as the process loads them.
TEST(LoadgenCommand, VersionNamesTheLibrariesItRunsWith) {
  const auto run = runProgram(FRAUD_LOADGEN_BIN, {"--version"});
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, std::string("fraud-loadgen ") + FRAUD_PROJECT_VERSION + "\nlibrdkafka " +
                         rd_kafka_version_str() + "\nRocksDB " +
                         rocksdb::GetRocksVersionAsString() + "\n");
}

// The rule's bounds under the flags' names, as fraud-detector reports them.
TEST(LoadgenCommand, NamesTheRulesFlagsInAProblem) {
  TempDir dir;
  const auto run = runProgram(FRAUD_LOADGEN_BIN, {"--count", "1", "--output-single",
                                                  dir.file("out.jsonl"), "--window-ms", "0"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("fraud-loadgen: --window-ms must be in 1.."), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("window_ms"), std::string::npos) << run.err;
}

// librdkafka's lines (here: a broker that is down) in fraud-detector's log format:
// "<UTC time> <level> <program>: kafka <client> <facility>: <message>".
TEST(LoadgenCommand, LogsInTheServicesFormat) {
  const auto run =
      runProgram(FRAUD_LOADGEN_BIN, {"--brokers", "127.0.0.1:1", "--count", "1", "--no-latency"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(" fraud-loadgen: kafka "), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("|FAIL|"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("[kafka]"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace fraud::testing
