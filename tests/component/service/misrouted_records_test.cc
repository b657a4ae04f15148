// Misrouted records (docs/rule.md §9) through the whole ingest loop on librdkafka's mock cluster:
// a record produced explicitly to partition 1 whose key the producers' partitioner puts in
// partition 0 is processed as part of partition 1 (no data dropped) and counted, per topic and
// partition, in fraud_misrouted_records_total and in /v1/partitions' misrouted_records.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/router.h"
#include "detectors/partitioner.h"
#include "tests/support/mock_cluster_service.h"

namespace fraud::service {
namespace {

using testing::txJson;
using namespace std::chrono_literals;

// A card whose key the default partitioner (crc32) maps to `partition` of the 2 input partitions.
std::string cardIn(int32_t partition) {
  for (int i = 0;; ++i) {
    std::string card = "card-" + std::to_string(1000 + i);
    if (detectors::partitionCrc32(card, 2) == partition) return card;
  }
}

class MisroutedRecordsTest : public testing::MockClusterServiceTest {
 protected:
  MisroutedRecordsTest() : MockClusterServiceTest("misrouted-test") {}

  std::string metricsText() {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }
  double accepted() { return metrics_.records.Add({{"outcome", "accepted"}}).Value(); }
};

TEST_F(MisroutedRecordsTest, AMisroutedRecordIsProcessedInItsPartitionAndCounted) {
  const std::string misrouted = cardIn(0);
  const std::string in_place = cardIn(1);
  const auto running = startProcessor();
  ASSERT_TRUE(running->startError().ok()) << running->startError().message();
  api::ServiceView& view = running->processor().view();

  produce(1, misrouted, txJson("m1", misrouted, "FR", 1'000));  // belongs in partition 0
  produce(1, in_place, txJson("p1", in_place, "DE", 1'001));
  produce(0, cardIn(0), txJson("p0", cardIn(0), "ES", 1'002));
  ASSERT_TRUE(running->waitFor([&] { return accepted() >= 3; }, 60s))
      << "the records were not processed and committed within 60 s";

  // Processed as part of partition 1: its card's state is there.
  const api::CardLookup found = view.lookup(1, hasher_.hash(misrouted));
  EXPECT_EQ(found.outcome, api::CardLookupOutcome::kFound);

  const std::string text = metricsText();
  const std::string series = "fraud_misrouted_records_total{partition=\"";
  const std::string topic = "\",topic=\"" + config_.input_topic + "\"} ";
  EXPECT_NE(text.find(series + "1" + topic + "1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(series + "0" + topic + "0\n"), std::string::npos)
      << "every input partition's series at 0 from the start\n"
      << text;

  prometheus::Registry api_registry;
  const api::Router router(api::ApiOptions{}, view, api_registry);
  const api::HttpResponse answer =
      router.handle(api::HttpRequest{"GET", "/v1/partitions", {}, "", "127.0.0.1:1"});
  ASSERT_EQ(answer.status, 200) << answer.body;
  const nlohmann::json body = nlohmann::json::parse(answer.body);
  ASSERT_EQ(body["partitions"].size(), 2u) << body.dump();
  for (const auto& p : body["partitions"]) {
    EXPECT_EQ(p.value("misrouted_records", -1), p["partition"] == 1 ? 1 : 0) << p.dump();
  }
}

}  // namespace
}  // namespace fraud::service
