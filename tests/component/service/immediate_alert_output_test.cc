// ImmediateAlertOutput (--alert-delivery immediate) on librdkafka's mock cluster: what a commit
// waits for, and what ends the service instead of aborting forever.
#include "service/immediate_alert_output.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/mock_cluster.h"

namespace fraud::service {
namespace {

using namespace std::chrono_literals;
using testing::MockCluster;

class ImmediateAlertOutputTest : public ::testing::Test {
 protected:
  ImmediateAlertOutputTest() {
    cluster_.createTopic("alerts", 2);
    auto output = ImmediateAlertOutput::create(
        {{"bootstrap.servers", cluster_.bootstrap()}, {"log_level", "2"}}, "alerts", {});
    EXPECT_TRUE(output) << output.message();
    if (output) output_ = std::move(*output);
  }

  void sendOne(int i) {
    output_->sendAlert("card-" + std::to_string(i % 7), "{}",
                       {{"idempotency-key", "k" + std::to_string(i)}});
  }

  MockCluster cluster_;
  std::unique_ptr<ImmediateAlertOutput> output_;
};

TEST_F(ImmediateAlertOutputTest, ACommitWaitsOnlyForAlertsSentBeforeItAtASteadyRate) {
  // Acknowledgements take 100 ms while alerts keep coming every 2 ms: the producer's queue is
  // never empty, so waiting for all of it (rd_kafka_flush) would never end. A commit waits for
  // the alerts sent before it only.
  cluster_.setRoundTripMs(100);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    for (int i = 0; !stop.load(); ++i) {
      sendOne(i);
      output_->serveDeliveries();
      std::this_thread::sleep_for(2ms);
    }
  });
  std::this_thread::sleep_for(200ms);
  int ready = 0;
  for (int commit = 0; commit < 5; ++commit) {
    const auto started = std::chrono::steady_clock::now();
    const CommitReadiness result = output_->flushForCommit(3'000);
    EXPECT_EQ(result, CommitReadiness::kReady)
        << "commit " << commit << " after "
        << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started)
               .count()
        << " ms";
    ready += result == CommitReadiness::kReady ? 1 : 0;
  }
  stop = true;
  sender.join();
  EXPECT_EQ(ready, 5);
  EXPECT_EQ(output_->failures(), 0u);
}

TEST_F(ImmediateAlertOutputTest, AnAlertNotAcknowledgedMakesTheNextCommitRetry) {
  cluster_.failNext(testing::kApiProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  sendOne(1);
  EXPECT_EQ(output_->flushForCommit(10'000), CommitReadiness::kRetry);
  sendOne(2);
  EXPECT_EQ(output_->flushForCommit(10'000), CommitReadiness::kReady) << "counted once";
}

TEST_F(ImmediateAlertOutputTest, AProducerFailedForGoodMakesTheCommitFatal) {
  // An idempotent producer's fatal error (e.g. a sequence gap it cannot repair) means nothing
  // it sends will ever be acknowledged: every commit would abort and retry forever.
  sendOne(1);
  ASSERT_EQ(output_->flushForCommit(10'000), CommitReadiness::kReady);
  ASSERT_EQ(
      rd_kafka_test_fatal_error(output_->producer(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                "injected by the test"),
      RD_KAFKA_RESP_ERR_NO_ERROR);
  sendOne(2);
  EXPECT_EQ(output_->flushForCommit(10'000), CommitReadiness::kFatal);
}

}  // namespace
}  // namespace fraud::service
