// fraud-loadgen against a real broker (FRAUD_TEST_BROKERS; skipped when unset): determinism under
// --seed, partition placement as librdkafka's own partitioners, and `verify` passing on exactly
// the alerts `fraud-detector replay` derives from each partition, failing when one is removed or
// duplicated. Every test uses fresh, uniquely named topics.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "detectors/partitioner.h"
#include "detectors/record_codec.h"
#include "detectors/record_headers.h"
#include "service/kafka/admin.h"
#include "service/kafka/producer.h"
#include "service/kafka/reader.h"
#include "service/kafka/wall_clock.h"
#include "tests/support/test_kafka.h"

namespace fraud::loadgen {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kTimeoutMs = 30'000;
constexpr const char* kKey = "integration-test-card-hash-key-of-32-bytes-or-more";
constexpr const char* kStartTime = "1700000000000";

// Runs a program to completion, stdout into `stdout_path`, stderr into `stdout_path`.err.
// Returns its exit status (128 + signal when killed).
int run(const std::vector<std::string>& args, const std::string& stdout_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open((stdout_path + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "cannot execute %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<std::string> readLines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Record {
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = 0;
  std::string key;
  std::string value;
};

class LoadgenKafkaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto brokers = fraud::testing::testBrokers();
    if (!brokers)
      GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set: start a broker with "
                      "scripts/kafka start and export its bootstrap address";
    brokers_ = *brokers;
    dir_ = fs::temp_directory_path() /
           ("fraud-loadgen-it-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    key_file_ = (dir_ / "card-hash.key").string();
    std::ofstream(key_file_) << kKey << "\n";
    admin_ = std::make_unique<kafka::SyncProducer>(
        kafka::KafkaProperties{{"bootstrap.servers", brokers_}});
    ASSERT_TRUE(admin_->status().ok()) << admin_->status().message();
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  std::string freshTopic(const std::string& name, int32_t partitions) {
    const std::string topic = "lg-it-" + name + "-" + std::to_string(::getpid()) + "-" +
                              std::to_string(kafka::wallClockMs());
    const auto created =
        kafka::createTopic(admin_->client(), {topic, partitions, -1, {}}, kTimeoutMs);
    EXPECT_TRUE(created.ok()) << created.message();
    return topic;
  }

  // Every record of the topic, by partition, in partition order.
  std::map<int32_t, std::vector<Record>> readTopic(const std::string& topic) {
    std::map<int32_t, std::vector<Record>> records;
    auto consumer = kafka::makeReader({{"bootstrap.servers", brokers_}}, true);
    EXPECT_TRUE(consumer) << consumer.message();
    if (!consumer) return records;
    const auto partitions = kafka::topicPartitionCount(consumer->get(), topic, kTimeoutMs);
    EXPECT_TRUE(partitions) << partitions.message();
    if (!partitions) return records;
    const auto ends = kafka::highWatermarks(consumer->get(), topic, *partitions, kTimeoutMs);
    EXPECT_TRUE(ends) << ends.message();
    if (!ends) return records;
    const auto read = kafka::readToEnd(
        consumer->get(), topic, *ends,
        [&](const rd_kafka_message_t& m) {
          records[m.partition].push_back(
              Record{m.partition, m.offset, kafka::timestampOf(&m).value_or(-1),
                     std::string(kafka::keyOf(&m)), std::string(kafka::payloadOf(&m))});
        },
        kTimeoutMs);
    EXPECT_TRUE(read.ok()) << read.message();
    return records;
  }

  // Runs fraud-loadgen producing `count` records of seed 5 to `topic`; returns its summary.
  json produceTraffic(const std::string& topic, const fs::path& out, uint64_t count,
                      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {FRAUD_LOADGEN_BIN,
                                     "--brokers",
                                     brokers_,
                                     "--topic",
                                     topic,
                                     "--count",
                                     std::to_string(count),
                                     "--rate",
                                     "max",
                                     "--seed",
                                     "5",
                                     "--start-time",
                                     kStartTime,
                                     "--cards",
                                     "20000",
                                     "--fraud-rate",
                                     "300",
                                     "--malformed-fraction",
                                     "0.01",
                                     "--duplicate-fraction",
                                     "0.01",
                                     "--card-hash-key-file",
                                     key_file_,
                                     "--no-latency",
                                     "--no-progress",
                                     "--output",
                                     (out / "partitions").string(),
                                     "--truth",
                                     (out / "truth.jsonl").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    fs::create_directories(out);
    const std::string summary_path = (out / "summary.json").string();
    const int status = run(args, summary_path);
    EXPECT_EQ(status, 0) << readFile(summary_path + ".err");
    return json::parse(readFile(summary_path), nullptr, false);
  }

  json verify(const std::string& topic, const std::string& alerts, const std::string& dlq,
              const fs::path& truth, int& status) {
    const std::string report_path = (dir_ / ("verify-" + alerts + ".json")).string();
    status = run({FRAUD_LOADGEN_BIN, "verify", "--brokers", brokers_, "--topic", topic,
                  "--alerts-topic", alerts, "--dlq-topic", dlq, "--truth", truth.string(),
                  "--card-hash-key-file", key_file_, "--wait-seconds", "0"},
                 report_path);
    return json::parse(readFile(report_path), nullptr, false);
  }

  // Queues one record to a named topic; flush() waits for every acknowledgement.
  void produceTo(const std::string& topic, int32_t partition, const std::string& key,
                 const std::string& value, const kafka::Headers& headers) {
    const base::Status queued = admin_->enqueue(topic, partition, key, value, headers);
    ASSERT_TRUE(queued.ok()) << queued.message();
  }
  void flush() {
    const base::Status flushed = admin_->flush(kTimeoutMs);
    ASSERT_TRUE(flushed.ok()) << flushed.message();
  }

  // Produces alerts as the service does: key card_ref, header idempotency-key.
  void produceAlert(const std::string& topic, const std::string& line, int32_t partition) {
    const auto alert = json::parse(line);
    produceTo(topic, partition, alert["card_ref"].get<std::string>(), line,
              {{std::string(detectors::headers::kIdempotencyKey),
                alert["idempotency_key"].get<std::string>()}});
  }

  // What the service makes of the partition files of `generated` (partition-P.jsonl): the
  // alerts of `replay` of each, and the records it rejects.
  struct ServiceOutput {
    std::vector<std::pair<int32_t, std::string>> alerts;  // partition, alert line
    std::vector<std::pair<int32_t, int64_t>> rejected;    // partition, offset
    std::vector<std::string> reasons;                     // of each rejected record
  };
  void replayPartitions(const fs::path& generated, int32_t partitions, ServiceOutput& out) {
    detectors::RecordDecoder decoder;
    for (int32_t p = 0; p < partitions; ++p) {
      const fs::path input = generated / ("partition-" + std::to_string(p) + ".jsonl");
      const fs::path output = dir_ / ("alerts-" + std::to_string(p) + ".jsonl");
      ASSERT_EQ(run({FRAUD_DETECTOR_BIN, "replay", "--input", input.string(), "--output",
                     output.string(), "--card-hash-key-file", key_file_},
                    (dir_ / "replay.out").string()),
                0)
          << readFile(dir_ / "replay.out.err");
      for (auto& line : readLines(output)) out.alerts.emplace_back(p, std::move(line));
      const auto lines = readLines(input);
      for (size_t offset = 0; offset < lines.size(); ++offset) {
        const auto decoded = decoder.decode(lines[offset]);
        if (decoded.ok()) continue;
        out.rejected.emplace_back(p, static_cast<int64_t>(offset));
        out.reasons.emplace_back(detectors::rejectReasonName(*decoded.rejected));
      }
    }
  }

  std::string brokers_;
  fs::path dir_;
  std::string key_file_;
  std::unique_ptr<kafka::SyncProducer> admin_;
  static inline int counter_ = 0;
};

TEST_F(LoadgenKafkaTest, SameSeedGivesByteIdenticalFilesAndTopicContents) {
  const std::string topic_a = freshTopic("det-a", 6);
  const std::string topic_b = freshTopic("det-b", 6);
  const auto summary_a = produceTraffic(topic_a, dir_ / "a", 40'000);
  const auto summary_b = produceTraffic(topic_b, dir_ / "b", 40'000);
  ASSERT_EQ(summary_a["acked"], 40'000);
  ASSERT_EQ(summary_b["acked"], 40'000);

  for (int32_t p = 0; p < 6; ++p) {
    const auto name = "partition-" + std::to_string(p) + ".jsonl";
    const std::string a = readFile(dir_ / "a" / "partitions" / name);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, readFile(dir_ / "b" / "partitions" / name)) << name;
  }
  EXPECT_EQ(readFile(dir_ / "a" / "truth.jsonl"), readFile(dir_ / "b" / "truth.jsonl"));

  const auto records_a = readTopic(topic_a);
  const auto records_b = readTopic(topic_b);
  ASSERT_EQ(records_a.size(), 6u);
  size_t total = 0;
  for (int32_t p = 0; p < 6; ++p) {
    const auto& a = records_a.at(p);
    const auto& b = records_b.at(p);
    ASSERT_EQ(a.size(), b.size()) << "partition " << p;
    // Each partition holds exactly its file, in order, keyed by card.
    const auto lines =
        readLines(dir_ / "a" / "partitions" / ("partition-" + std::to_string(p) + ".jsonl"));
    ASSERT_EQ(a.size(), lines.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].key, b[i].key);
      ASSERT_EQ(a[i].value, b[i].value);
      ASSERT_EQ(a[i].value, lines[i]);
      ASSERT_EQ(a[i].offset, static_cast<int64_t>(i));
      ASSERT_EQ(detectors::partitionCrc32(a[i].key, 6), p);
    }
    total += a.size();
  }
  EXPECT_EQ(total, 40'000u);
}

TEST_F(LoadgenKafkaTest, Murmur2PartitionerPlacesKeysAsTheJavaClientWould) {
  const std::string topic = freshTopic("murmur", 5);
  produceTraffic(topic, dir_ / "m", 5'000, {"--partitioner", "murmur2"});
  const auto records = readTopic(topic);
  size_t total = 0;
  for (const auto& [partition, list] : records) {
    for (const auto& r : list) ASSERT_EQ(detectors::partitionMurmur2(r.key, 5), partition);
    total += list.size();
  }
  EXPECT_EQ(total, 5'000u);
}

// librdkafka's own partitioners, used by a producer that does not pick partitions, put every key
// where detectors/partitioner.h says: the service's card lookup can trust it.
TEST_F(LoadgenKafkaTest, LibrdkafkaPartitionersAgreeWithOursOnTheBroker) {
  for (const char* partitioner : {"consistent_random", "murmur2_random"}) {
    const std::string topic = freshTopic(std::string("rdk-") + partitioner, 7);
    kafka::SyncProducer producer({{"bootstrap.servers", brokers_}, {"partitioner", partitioner}});
    ASSERT_TRUE(producer.status().ok()) << producer.status().message();
    std::mt19937_64 random(99);
    for (int i = 0; i < 3000; ++i) {
      const std::string key = "card-" + std::to_string(random());
      const base::Status queued = producer.enqueue(topic, RD_KAFKA_PARTITION_UA, key, "v");
      ASSERT_TRUE(queued.ok()) << queued.message();
    }
    const base::Status flushed = producer.flush(kTimeoutMs);
    ASSERT_TRUE(flushed.ok()) << flushed.message();
    const auto ours = std::string(partitioner) == "murmur2_random" ? &detectors::partitionMurmur2
                                                                   : &detectors::partitionCrc32;
    size_t total = 0;
    for (const auto& [partition, list] : readTopic(topic)) {
      for (const auto& r : list) ASSERT_EQ(ours(r.key, 7), partition) << partitioner;
      total += list.size();
    }
    EXPECT_EQ(total, 3000u) << partitioner;
  }
}

TEST_F(LoadgenKafkaTest, VerifyPassesOnReplayAlertsAndFailsOnARemovedOrDuplicatedAlert) {
  constexpr int32_t kPartitions = 4;
  const std::string topic = freshTopic("verify-in", kPartitions);
  const auto summary = produceTraffic(topic, dir_ / "v", 60'000);
  ASSERT_EQ(summary["acked"], 60'000);
  ASSERT_GT(summary["kinds"]["malformed"].get<int>(), 0);

  // What the service must produce: replay of each partition file, and the rejected records.
  ServiceOutput expected;
  ASSERT_NO_FATAL_FAILURE(replayPartitions(dir_ / "v" / "partitions", kPartitions, expected));
  const auto& [alerts, rejected, reasons] = expected;
  ASSERT_GT(alerts.size(), 10u);
  const std::string dlq = freshTopic("verify-dlq", 2);
  for (size_t i = 0; i < rejected.size(); ++i) {
    produceTo(dlq, static_cast<int32_t>(i % 2), "", "raw record",
              {{"reject-reason", reasons[i]},
               {"source-topic", topic},
               {"source-partition", std::to_string(rejected[i].first)},
               {"source-offset", std::to_string(rejected[i].second)}});
  }
  const std::string full = freshTopic("verify-alerts", 3);
  const std::string missing = freshTopic("verify-alerts-missing", 3);
  const std::string duplicated = freshTopic("verify-alerts-dup", 3);
  const size_t victim = alerts.size() / 2;
  const std::string victim_key = json::parse(alerts[victim].second)["idempotency_key"];
  for (size_t i = 0; i < alerts.size(); ++i) {
    const int32_t partition = alerts[i].first % 3;
    produceAlert(full, alerts[i].second, partition);
    produceAlert(duplicated, alerts[i].second, partition);
    if (i != victim) produceAlert(missing, alerts[i].second, partition);
  }
  produceAlert(duplicated, alerts[victim].second, alerts[victim].first % 3);
  flush();
  const fs::path truth = dir_ / "v" / "truth.jsonl";

  int status = -1;
  const json pass = verify(topic, full, dlq, truth, status);
  EXPECT_EQ(status, 0) << pass.dump(2);
  EXPECT_EQ(pass["verdict"], "pass");
  EXPECT_EQ(pass["alerts"]["expected"], alerts.size());
  EXPECT_EQ(pass["alerts"]["records"], alerts.size());
  EXPECT_EQ(pass["dlq"]["expected"], rejected.size());
  EXPECT_GT(pass["truth"]["scenarios"].get<int>(), 5);
  EXPECT_EQ(pass["truth"]["recalled"], pass["truth"]["scenarios"]);

  const json lost = verify(topic, missing, dlq, truth, status);
  EXPECT_EQ(status, 1) << lost.dump(2);
  EXPECT_EQ(lost["verdict"], "fail");
  EXPECT_EQ(lost["alerts"]["missing"]["count"], 1);
  EXPECT_EQ(lost["alerts"]["missing"]["keys"], json::array({victim_key}));
  EXPECT_EQ(lost["alerts"]["unexpected"]["count"], 0);
  EXPECT_EQ(lost["alerts"]["duplicates"]["count"], 0);

  const json twice = verify(topic, duplicated, dlq, truth, status);
  EXPECT_EQ(status, 1) << twice.dump(2);
  EXPECT_EQ(twice["verdict"], "fail");
  EXPECT_EQ(twice["alerts"]["missing"]["count"], 0);
  EXPECT_EQ(twice["alerts"]["duplicates"]["count"], 1);
  EXPECT_EQ(twice["alerts"]["duplicates"]["items"][0]["key"], victim_key);
  EXPECT_EQ(twice["alerts"]["duplicates"]["items"][0]["times"], 2);
  EXPECT_EQ(twice["truth"]["recalled"], twice["truth"]["scenarios"]);
}

TEST_F(LoadgenKafkaTest, VerifyFailsWhenARejectedRecordIsMissingFromTheDeadLetterTopic) {
  const std::string topic = freshTopic("dlq-in", 2);
  const std::string alerts = freshTopic("dlq-alerts", 1);
  const std::string dlq = freshTopic("dlq-dlq", 1);
  produceTo(topic, 0, "card-1", "{not json", {});
  produceTo(topic, 1, "card-2", "{\"tx_id\":\"a\"}", {});
  produceTo(dlq, 0, "", "{not json",
            {{"reject-reason", "invalid_json"},
             {"source-topic", topic},
             {"source-partition", "0"},
             {"source-offset", "0"}});
  flush();
  std::ofstream(dir_ / "empty-truth.jsonl").close();
  int status = -1;
  const json report = verify(topic, alerts, dlq, dir_ / "empty-truth.jsonl", status);
  EXPECT_EQ(status, 1) << report.dump(2);
  EXPECT_EQ(report["dlq"]["expected"], 2);
  EXPECT_EQ(report["dlq"]["missing"]["items"],
            json::array({json{{"partition", 1}, {"offset", 0}}}));
}

}  // namespace
}  // namespace fraud::loadgen
