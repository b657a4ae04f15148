#pragma once

// A fixture for tests of `fraud-detector run` against a real broker: topics of its own, the
// service as child processes, and the comparison of the alerts topic with `replay`.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "detectors/partitioner.h"
#include "tests/support/child_process.h"
#include "tests/support/test_kafka.h"
#include "tests/support/transaction_stream.h"

namespace fraud::testing {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::seconds;

constexpr int kPartitions = 4;
constexpr const char* kKey = "integration-test-card-hash-key-of-32-bytes";

// Alerts keyed by idempotency key, without detected_at; keys seen more than once are counted,
// and so are the repeats that are not exact.
struct AlertSet {
  std::map<std::string, json> by_key;
  int duplicates = 0;
  int differing_repeats = 0;

  void add(const std::string& text) {
    json alert = json::parse(text);
    alert.erase("detected_at");
    const std::string key = alert.at("idempotency_key");
    const auto [it, inserted] = by_key.emplace(key, alert);
    if (!inserted) {
      ++duplicates;
      if (it->second != alert) ++differing_repeats;
    }
  }
};

// How the service delivers alerts, and so what the alerts topic may hold (--alert-delivery).
enum class Delivery { kTransactional, kImmediateNoFault, kImmediateAfterFault };

class LiveServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto brokers = testBrokers();
    if (!brokers) GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set (scripts/test starts a broker)";
    useBrokers(*brokers);
  }

  // Creates this test's topics on `brokers`.
  void useBrokers(const std::string& brokers) {
    kafka_ = std::make_unique<TestKafka>(brokers);
    const auto name = TestKafka::uniqueName("live");
    input_ = name + ".tx";
    alerts_ = name + ".alerts";
    dlq_ = name + ".dlq";
    group_ = name + ".group";
    kafka_->createTopic(input_, kPartitions);
    kafka_->createTopic(alerts_, 2);
    kafka_->createTopic(dlq_, 1);
    work_ = fs::temp_directory_path() / name;
    fs::create_directories(work_);
    partitions_.resize(kPartitions);
  }

  void TearDown() override {
    instances_.clear();
    if (!work_.empty() && !HasFailure() && std::getenv("FRAUD_TEST_KEEP") == nullptr)
      fs::remove_all(work_);
  }

  ChildProcess& startInstance(const std::string& instance,
                              const std::vector<std::string>& extra = {},
                              std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"run",
                                     "--brokers",
                                     kafka_->brokers(),
                                     "--input-topic",
                                     input_,
                                     "--alerts-topic",
                                     alerts_,
                                     "--dlq-topic",
                                     dlq_,
                                     "--group-id",
                                     group_,
                                     "--instance-id",
                                     instance,
                                     "--state-dir",
                                     (work_ / ("state-" + instance)).string(),
                                     "--commit-interval-ms",
                                     "100",
                                     "--kafka",
                                     "session.timeout.ms=6000",
                                     "--kafka",
                                     "heartbeat.interval.ms=500",
                                     "--log-level",
                                     "info"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--http-port") == extra.end()) {
      args.insert(args.end(), {"--http-port", "0"});
    }
    if (std::find(extra.begin(), extra.end(), "--probe-port") == extra.end()) {
      args.insert(args.end(), {"--probe-port", "0"});  // instances side by side
    }
    const auto log = (work_ / (instance + "-" + std::to_string(instances_.size()))).string();
    env["FRAUD_CARD_HASH_KEY"] = kKey;
    instances_.push_back(std::make_unique<ChildProcess>(FRAUD_DETECTOR_BIN, args, env, log));
    return *instances_.back();
  }

  // SIGTERM, then exit status 0 within 25 s; false (a failure added) otherwise.
  bool stopCleanly(ChildProcess& instance) {
    instance.signal(SIGTERM);
    const auto status = instance.waitExit(seconds(25));
    EXPECT_EQ(status, 0) << instance.stderrText();
    return status == 0;
  }

  void produce(const std::vector<TestRecord>& records) {
    for (const auto& r : records) {
      const int32_t p = detectors::partitionCrc32(r.key, kPartitions);
      kafka_->produce(input_, p, r.key, r.value);
      partitions_[static_cast<size_t>(p)].push_back(r.value);
    }
    kafka_->flush();
  }

  // What `fraud-detector replay` says each partition's records must raise.
  AlertSet expectedAlerts() {
    AlertSet expected;
    for (int p = 0; p < kPartitions; ++p) {
      const auto input = work_ / ("partition-" + std::to_string(p) + ".jsonl");
      const auto output = work_ / ("expected-" + std::to_string(p) + ".jsonl");
      {
        std::ofstream file(input);
        for (const auto& value : partitions_[static_cast<size_t>(p)]) file << value << '\n';
      }
      ChildProcess replay(FRAUD_DETECTOR_BIN,
                          {"replay", "--input", input.string(), "--output", output.string()},
                          {{"FRAUD_CARD_HASH_KEY", kKey}}, (work_ / "replay").string());
      EXPECT_EQ(replay.waitExit(seconds(120)), 0) << replay.stderrText();
      std::ifstream lines(output);
      for (std::string line; std::getline(lines, line);) expected.add(line);
    }
    return expected;
  }

  AlertSet actualAlerts() {
    AlertSet actual;
    for (const auto& record : kafka_->readAll(alerts_)) {
      actual.add(record.value.value_or(""));
      const json alert = json::parse(record.value.value_or("{}"));
      EXPECT_EQ(record.key, alert.value("card_ref", ""));
      EXPECT_EQ(record.headers.count("idempotency-key"), 1u);
      EXPECT_EQ(record.headers.at("idempotency-key"), alert.value("idempotency_key", ""));
    }
    return actual;
  }

  // Every expected alert present and equal; no other. Transactional, or immediate without a
  // fault: each key once. Immediate after a fault: a key may repeat, only exactly. Returns the
  // number of repeated records.
  int expectAlertsMatchReplay(Delivery delivery = Delivery::kTransactional) {
    if (!kafka_->waitForCaughtUp(group_, input_, seconds(180))) {
      ADD_FAILURE() << "the service did not catch up; logs in " << work_ << "; committed "
                    << ::testing::PrintToString(kafka_->committedOffsets(group_, input_)) << " of "
                    << ::testing::PrintToString(kafka_->endOffsets(input_));
      return -1;
    }
    const AlertSet expected = expectedAlerts();
    const AlertSet actual = actualAlerts();
    EXPECT_GT(expected.by_key.size(), 100u) << "the stream should raise many alerts";
    if (delivery == Delivery::kImmediateAfterFault) {
      EXPECT_EQ(actual.differing_repeats, 0) << "a repeated idempotency key with other content";
    } else {
      EXPECT_EQ(actual.duplicates, 0) << "an idempotency key was written twice";
    }
    for (const auto& [key, alert] : expected.by_key) {
      const auto it = actual.by_key.find(key);
      if (it == actual.by_key.end()) {
        ADD_FAILURE() << "missing alert " << key;
      } else {
        EXPECT_EQ(it->second, alert) << "alert " << key << " differs";
      }
    }
    for (const auto& [key, alert] : actual.by_key) {
      EXPECT_EQ(expected.by_key.count(key), 1u) << "unexpected alert " << key;
    }
    return actual.duplicates;
  }

  // Starts `instance`, kills it with SIGKILL once it has committed something and before the end
  // of the input, and starts it again (the same instance id fences the dead one's transaction).
  // Returns the second run.
  ChildProcess& killNineMidStreamAndRestart(const std::string& instance,
                                            const std::vector<std::string>& extra = {}) {
    auto& first = startInstance(instance, extra);
    EXPECT_TRUE(waitForSomeProgress()) << first.stderrText();
    first.signal(SIGKILL);
    EXPECT_TRUE(first.waitExit(seconds(10)).has_value());
    const auto at_crash = kafka_->committedOffsets(group_, input_);
    const auto ends = kafka_->endOffsets(input_);
    bool mid_stream = false;
    for (size_t p = 0; p < ends.size(); ++p) mid_stream |= at_crash[p] < ends[p];
    EXPECT_TRUE(mid_stream) << "the crash came after the end of the stream: nothing was tested";
    return startInstance(instance, extra);
  }

  bool waitForSomeProgress() {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const int64_t offset : kafka_->committedOffsets(group_, input_)) {
        if (offset > 0) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::unique_ptr<TestKafka> kafka_;
  std::string input_, alerts_, dlq_, group_;
  fs::path work_;
  std::vector<std::vector<std::string>> partitions_;
  std::vector<std::unique_ptr<ChildProcess>> instances_;
};

}  // namespace fraud::testing
