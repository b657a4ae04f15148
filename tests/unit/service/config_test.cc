#include "service/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "service/cli/detector_flags.h"
#include "tests/support/temp_dir.h"

namespace fraud::service {
namespace {

using fraud::testing::TempDir;
using ::testing::HasSubstr;

ServiceConfig parse(std::vector<std::string> args) {
  CLI::App app;
  ServiceConfig config;
  addRunFlags(app, config);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  config.resolveDefaults();
  return config;
}

TEST(ServiceConfig, DefaultsNeedOnlyBrokers) {
  const auto config = parse({"--brokers", "localhost:9092"});
  EXPECT_TRUE(config.validate().empty());
  EXPECT_EQ(config.input_topic, "transactions");
  EXPECT_EQ(config.alerts_topic, "alerts");
  EXPECT_EQ(config.dlq_topic, "transactions.dlq");
  EXPECT_EQ(config.group_id, "fraud-detector");
  EXPECT_EQ(config.changelog_topic, "fraud-detector.state-changelog");
  EXPECT_FALSE(config.instance_id.empty());
}

TEST(ServiceConfig, ReportsEveryProblemAtOnce) {
  const auto config = parse({"--window-ms", "0", "--grace-ms", "-1", "--threshold", "5",
                             "--max-events", "4", "--auto-offset-reset", "middle", "--log-format",
                             "xml", "--alerts-topic", "bad topic", "--kafka", "novalue"});
  const auto problems = config.validate();
  EXPECT_EQ(problems.size(), 8u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--brokers")));
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--window-ms must be in 1..")));
  EXPECT_THAT(problems,
              ::testing::Contains("--max-events must be in --threshold (5)..1000000, got 4"));
  EXPECT_THAT(problems, ::testing::Each(::testing::Not(HasSubstr("_ms"))));
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--kafka expects KEY=VALUE")));
}

TEST(ServiceConfig, FlagWinsOverEnvironmentVariable) {
  ::setenv("FRAUD_WINDOW_MS", "1234", 1);
  ::setenv("FRAUD_GRACE_MS", "55", 1);
  const auto config = parse({"--brokers", "b:1", "--window-ms", "999"});
  ::unsetenv("FRAUD_WINDOW_MS");
  ::unsetenv("FRAUD_GRACE_MS");
  EXPECT_EQ(config.detector.window_ms, 999);
  EXPECT_EQ(config.detector.grace_ms, 55);
}

// One definition of the rule's flags (service/cli/detector_flags.h): `run` words them as
// `replay` and fraud-loadgen do, and each keeps its FRAUD_* variable.
TEST(ServiceConfig, DetectorFlagsAreTheSharedOnesWithTheirVariables) {
  CLI::App run;
  ServiceConfig config;
  addRunFlags(run, config);
  CLI::App shared;
  detectors::DetectorOptions options;
  cli::addDetectorFlags(shared, options);
  for (const std::string name : {"--window-ms", "--grace-ms", "--threshold", "--max-events"}) {
    const CLI::Option* option = run.get_option(name);
    EXPECT_EQ(option->get_description(), shared.get_option(name)->get_description()) << name;
    std::string env = "FRAUD_" + name.substr(2);
    std::replace(env.begin(), env.end(), '-', '_');
    std::transform(env.begin(), env.end(), env.begin(), ::toupper);
    EXPECT_EQ(option->get_envname(), env) << name;
  }
  ::setenv("FRAUD_THRESHOLD", "4", 1);
  ::setenv("FRAUD_MAX_EVENTS", "77", 1);
  const auto parsed = parse({"--brokers", "b:1"});
  ::unsetenv("FRAUD_THRESHOLD");
  ::unsetenv("FRAUD_MAX_EVENTS");
  EXPECT_EQ(parsed.detector.threshold, 4u);
  EXPECT_EQ(parsed.detector.max_events, 77u);
}

TEST(ServiceConfig, ProbePortIsOnByDefaultFromItsVariableAndNotTheHttpPort) {
  EXPECT_EQ(parse({"--brokers", "b:1"}).probe_port, 8081);
  ::setenv("FRAUD_PROBE_PORT", "0", 1);
  const auto from_env = parse({"--brokers", "b:1"});
  ::unsetenv("FRAUD_PROBE_PORT");
  EXPECT_EQ(from_env.probe_port, 0);
  EXPECT_TRUE(from_env.validate().empty());
  EXPECT_TRUE(parse({"--brokers", "b:1", "--probe-port", "-1"}).validate().empty());
  EXPECT_THAT(parse({"--brokers", "b:1", "--probe-port", "-2"}).validate(),
              ::testing::Contains(HasSubstr("--probe-port must be -1..65535")));
  EXPECT_THAT(parse({"--brokers", "b:1", "--http-port", "9000", "--probe-port", "9000"}).validate(),
              ::testing::Contains(HasSubstr("--probe-port must differ from --http-port")));
}

// Issue 28: a second instance on the host given only another --http-port must not collide with
// the first on the probe port: the probes follow the API port unless --probe-port is given.
TEST(ServiceConfig, ProbePortFollowsTheHttpPortUnlessGiven) {
  EXPECT_EQ(parse({"--brokers", "b:1"}).probe_port, 8081);
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-port", "18082"}).probe_port, 18083);
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-port", "0"}).probe_port, 0);
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-port", "18082", "--probe-port", "9000"}).probe_port,
            9000);
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-port", "18082", "--probe-port", "-1"}).probe_port,
            -1);
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-port", "0", "--probe-port", "8081"}).probe_port,
            8081);
  ::setenv("FRAUD_HTTP_PORT", "18090", 1);
  EXPECT_EQ(parse({"--brokers", "b:1"}).probe_port, 18091);
  ::setenv("FRAUD_PROBE_PORT", "9100", 1);
  EXPECT_EQ(parse({"--brokers", "b:1"}).probe_port, 9100);
  ::unsetenv("FRAUD_PROBE_PORT");
  ::unsetenv("FRAUD_HTTP_PORT");
  // No port after 65535: say so rather than pick one.
  EXPECT_THAT(parse({"--brokers", "b:1", "--http-port", "65535"}).validate(),
              ::testing::ElementsAre(
                  "--probe-port: --http-port 65535 has no next port for the probes; give one"));
  EXPECT_TRUE(parse({"--brokers", "b:1", "--http-port", "65535", "--probe-port", "8081"})
                  .validate()
                  .empty());
}

// Issue 28: --embedded-kafka is for trying the product; its API (card state) stays on this host
// unless an address is given.
TEST(ServiceConfig, EmbeddedKafkaListensOnLoopbackUnlessAnAddressIsGiven) {
  EXPECT_EQ(parse({"--embedded-kafka"}).http_address, "127.0.0.1");
  EXPECT_EQ(parse({"--brokers", "b:1"}).http_address, "0.0.0.0");
  EXPECT_EQ(parse({"--embedded-kafka", "--http-address", "0.0.0.0"}).http_address, "0.0.0.0");
  EXPECT_EQ(parse({"--brokers", "b:1", "--http-address", "127.0.0.1"}).http_address, "127.0.0.1");
  ::setenv("FRAUD_HTTP_ADDRESS", "::", 1);
  const auto from_env = parse({"--embedded-kafka"});
  ::unsetenv("FRAUD_HTTP_ADDRESS");
  EXPECT_EQ(from_env.http_address, "::");
}

TEST(ServiceConfig, AlertDeliveryIsTakenByName) {
  EXPECT_EQ(parse({"--brokers", "b:1"}).alert_delivery, AlertDelivery::kTransactional);
  EXPECT_EQ(parse({"--brokers", "b:1", "--alert-delivery", "immediate"}).alert_delivery,
            AlertDelivery::kImmediate);
  EXPECT_EQ(parse({"--brokers", "b:1", "--alert-delivery", "transactional"}).alert_delivery,
            AlertDelivery::kTransactional);
  ::setenv("FRAUD_ALERT_DELIVERY", "immediate", 1);
  const auto from_env = parse({"--brokers", "b:1"});
  ::unsetenv("FRAUD_ALERT_DELIVERY");
  EXPECT_EQ(from_env.alert_delivery, AlertDelivery::kImmediate);
  EXPECT_THROW(parse({"--brokers", "b:1", "--alert-delivery", "1"}), CLI::ValidationError);
}

TEST(ServiceConfig, ApiThreadNiceIsZeroByDefaultAndAtMost19) {
  EXPECT_EQ(parse({"--brokers", "b:1"}).api_thread_nice, 0);
  ::setenv("FRAUD_API_THREAD_NICE", "10", 1);
  const auto from_env = parse({"--brokers", "b:1"});
  ::unsetenv("FRAUD_API_THREAD_NICE");
  EXPECT_EQ(from_env.api_thread_nice, 10);
  EXPECT_TRUE(from_env.validate().empty());
  for (const char* bad : {"-1", "20"}) {
    EXPECT_THAT(parse({"--brokers", "b:1", "--api-thread-nice", bad}).validate(),
                ::testing::Contains(HasSubstr("--api-thread-nice must be 0..19")))
        << bad;
  }
}

TEST(ServiceConfig, KafkaPropertiesComeFromFileThenFlags) {
  TempDir dir;
  const std::string path =
      dir.write("kafka.properties",
                "# comment\nsecurity.protocol = SASL_SSL\nsasl.mechanism: PLAIN\n\nlinger.ms=1\n");
  auto config = parse({"--brokers", "b:1", "--kafka-config", path, "--kafka", "linger.ms=20"});
  std::vector<std::string> problems;
  const auto properties = kafkaProperties(config, problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(properties.at("security.protocol"), "SASL_SSL");
  EXPECT_EQ(properties.at("sasl.mechanism"), "PLAIN");
  EXPECT_EQ(properties.at("linger.ms"), "20");
}

TEST(ServiceConfig, UnreadableKafkaConfigIsAProblem) {
  auto config = parse({"--brokers", "b:1", "--kafka-config", "/nonexistent/kafka.properties"});
  std::vector<std::string> problems;
  (void)kafkaProperties(config, problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("/nonexistent/kafka.properties"));
}

TEST(ServiceConfig, MalformedKafkaConfigLineIsAProblemWithItsLineNumber) {
  TempDir dir;
  const auto path = dir.write("kafka.properties", "acks=all\nsasl.password\n");
  auto config = parse({"--brokers", "b:1", "--kafka-config", path});
  std::vector<std::string> problems;
  (void)kafkaProperties(config, problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr(path + ":2: expected key=value"));
}

// The state directory is checked with the other settings, so that an unusable one stops the
// service before any listener or broker starts: a plain file, and a path under one.
TEST(ServiceConfig, AStateDirThatIsAPlainFileOrUnderOneIsAProblemNamingIt) {
  TempDir dir;
  const std::string file = dir.write("plain-file", "not a directory");
  for (const std::string& state_dir : {file, file + "/state", file + "/a/b"}) {
    const auto problems =
        parse({"--brokers", "b:1", "--state-dir", state_dir, "--window-ms", "0"}).validate();
    ASSERT_EQ(problems.size(), 2u) << ::testing::PrintToString(problems);
    EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--window-ms")))
        << "reported with the others";
    EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--state-dir " + state_dir)));
    EXPECT_THAT(problems, ::testing::Contains(HasSubstr(file + " is not a directory")));
  }
}

// A state directory that does not exist yet is fine where it can be created, and checking it
// creates nothing (the database creates it when it opens).
TEST(ServiceConfig, AStateDirThatCanBeCreatedIsNoProblemAndIsNotCreatedByTheCheck) {
  TempDir dir;
  for (const std::string& state_dir : {dir.path().string(), dir.file("state"), dir.file("a/b")}) {
    EXPECT_TRUE(parse({"--brokers", "b:1", "--state-dir", state_dir}).validate().empty())
        << state_dir;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "the check left something behind";
}

// A directory the service's user cannot write in. Root writes anywhere (the permission bits do
// not apply to it), so the case cannot be made when the tests run as root.
TEST(ServiceConfig, AStateDirThatIsNotWritableIsAProblem) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: no directory is unwritable to root";
  TempDir dir;
  const std::string locked = dir.file("locked");
  ASSERT_TRUE(std::filesystem::create_directory(locked));
  ASSERT_EQ(::chmod(locked.c_str(), 0500), 0);
  for (const std::string& state_dir : {locked, locked + "/state"}) {
    const auto problems = parse({"--brokers", "b:1", "--state-dir", state_dir}).validate();
    EXPECT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
    EXPECT_THAT(problems, ::testing::Contains(HasSubstr("--state-dir " + state_dir)));
    EXPECT_THAT(problems, ::testing::Contains(HasSubstr("Permission denied")));
  }
  ::chmod(locked.c_str(), 0700);  // for TempDir to remove it
}

// --allow-core-dumps (service/core_dumps.h): off unless asked for by flag or environment.
TEST(CoreDumps, AllowedOnlyOnPurposeByFlagOrEnvironment) {
  EXPECT_FALSE(parse({"--brokers", "b:1"}).allow_core_dumps);
  EXPECT_TRUE(parse({"--brokers", "b:1", "--allow-core-dumps"}).allow_core_dumps);
  ::setenv("FRAUD_ALLOW_CORE_DUMPS", "true", 1);
  EXPECT_TRUE(parse({"--brokers", "b:1"}).allow_core_dumps);
  ::setenv("FRAUD_ALLOW_CORE_DUMPS", "false", 1);
  EXPECT_FALSE(parse({"--brokers", "b:1"}).allow_core_dumps);
  ::unsetenv("FRAUD_ALLOW_CORE_DUMPS");
}

}  // namespace
}  // namespace fraud::service
