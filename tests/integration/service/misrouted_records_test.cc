// Misrouted records (docs/rule.md §9) through `fraud-detector run` on a real broker: a record
// produced explicitly to partition 1 whose key librdkafka's default partitioner puts in
// partition 2 is processed in partition 1 (its card's state is there), counted in
// fraud_misrouted_records_total{topic, partition="1"} and in /v1/partitions' misrouted_records,
// and logged with its offset, never its key.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "detectors/card_ref.h"
#include "tests/integration/service/live_service_fixture.h"
#include "tests/support/http_probe.h"

namespace fraud::testing {
namespace {

// The first of "card-10000", "card-10001", ... that crc32 maps to `partition` of kPartitions.
std::string cardIn(int32_t partition) {
  for (int i = 0;; ++i) {
    std::string card = "card-" + std::to_string(10'000 + i);
    if (detectors::partitionCrc32(card, kPartitions) == partition) return card;
  }
}

std::string transaction(const std::string& tx_id, const std::string& card, int64_t time) {
  return R"({"tx_id":")" + tx_id + R"(","card":")" + card + R"(","country":"FR","event_time":)" +
         std::to_string(time) + "}";
}

// The API port the instance logged ("API on http://ADDRESS:PORT ..."), within 30 s.
std::optional<int> apiPort(ChildProcess& instance) {
  const std::regex logged(R"(API on https?://[^ ]*:([0-9]+) )");
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string text = instance.stderrText();
    if (std::regex_search(text, match, logged)) return std::stoi(match[1].str());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

TEST_F(LiveServiceTest, AMisroutedRecordIsProcessedWhereItIsCountedAndShown) {
  const std::string misrouted = cardIn(2);
  const std::string in_place = cardIn(1);
  kafka_->produce(input_, 1, misrouted, transaction("m1", misrouted, 1'000));
  kafka_->produce(input_, 1, in_place, transaction("p1", in_place, 1'001));
  kafka_->produce(input_, 2, cardIn(2), transaction("p2", cardIn(2), 1'002));
  kafka_->flush();
  auto& service = startInstance("misrouted");
  const std::optional<int> port = apiPort(service);
  ASSERT_TRUE(port.has_value()) << service.stderrText();
  const std::string base = "http://127.0.0.1:" + std::to_string(*port);
  ASSERT_TRUE(kafka_->waitForCaughtUp(group_, input_, seconds(120))) << service.stderrText();

  // The metric is added once the commit that carries the record is through: wait for it.
  const std::string series =
      R"(fraud_misrouted_records_total{partition="1",topic=")" + input_ + "\"} 1\n";
  std::string metrics;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    metrics = httpGet(base + "/metrics").body;
    if (metrics.find(series) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(metrics.find(series), std::string::npos) << metrics;
  for (const char* partition : {"0", "2", "3"}) {
    EXPECT_NE(metrics.find("fraud_misrouted_records_total{partition=\"" + std::string(partition) +
                           "\",topic=\"" + input_ + "\"} 0\n"),
              std::string::npos)
        << "partition " << partition << " at 0\n"
        << metrics;
  }

  const HttpAnswer partitions = httpGet(base + "/v1/partitions");
  ASSERT_EQ(partitions.status, 200) << partitions.body;
  const json status = json::parse(partitions.body);
  ASSERT_EQ(status["partitions"].size(), static_cast<size_t>(kPartitions)) << status.dump();
  for (const auto& p : status["partitions"]) {
    EXPECT_EQ(p.value("misrouted_records", -1), p["partition"] == 1 ? 1 : 0) << p.dump();
  }

  // Processed as part of partition 1: the card's state is held there.
  const std::string ref = detectors::CardHasher(kKey).hash(misrouted).hex();
  const HttpAnswer card = httpGet(base + "/v1/cards/" + ref);
  ASSERT_EQ(card.status, 200) << card.body;
  EXPECT_EQ(json::parse(card.body)["partition"], 1);

  EXPECT_TRUE(stopCleanly(service));
  const std::string log = service.stderrText();
  EXPECT_NE(log.find("partition 1: the record at offset 0 is misrouted: the crc32 partitioner "
                     "(--partitioner) maps its key to partition 2 of 4"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find(misrouted), std::string::npos) << "never the key: it is the card";
}

}  // namespace
}  // namespace fraud::testing
