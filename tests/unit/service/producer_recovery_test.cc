// The bound on recovering from fatal producer errors: at most kMaxRecoveries within kWindow,
// none when replacing the producer fails, each one counted.
#include "service/producer_recovery.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

namespace fraud::service {
namespace {

using namespace std::chrono_literals;
using Clock = ProducerRecovery::Clock;

class ProducerRecoveryBound : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  prometheus::Counter& counter_ =
      prometheus::BuildCounter().Name("recoveries_total").Register(registry_).Add({});
  int replaced_ = 0;
  base::Status replace_error_;
  const Clock::time_point start_ = Clock::time_point{} + 24h;
  ProducerRecovery recovery_{[this]() -> base::Status {
                               ++replaced_;
                               return replace_error_;
                             },
                             &counter_};
};

TEST_F(ProducerRecoveryBound, OneMoreFatalErrorThanTheBoundWithinTheWindowIsRefused) {
  for (size_t i = 0; i < ProducerRecovery::kMaxRecoveries; ++i) {
    EXPECT_TRUE(recovery_.recover("fenced", start_ + static_cast<int>(i) * 10s))
        << "recovery " << i + 1;
  }
  EXPECT_FALSE(recovery_.recover("fenced", start_ + ProducerRecovery::kWindow - 1s));
  EXPECT_EQ(replaced_, static_cast<int>(ProducerRecovery::kMaxRecoveries));
  EXPECT_EQ(counter_.Value(), static_cast<double>(ProducerRecovery::kMaxRecoveries));
}

TEST_F(ProducerRecoveryBound, RecoveriesOlderThanTheWindowNoLongerCount) {
  for (size_t i = 0; i < ProducerRecovery::kMaxRecoveries; ++i) {
    ASSERT_TRUE(recovery_.recover("fenced", start_ + static_cast<int>(i) * 1s));
  }
  // The first recovery is now a window old: one more fits, and only one.
  EXPECT_TRUE(recovery_.recover("fenced", start_ + ProducerRecovery::kWindow));
  EXPECT_FALSE(recovery_.recover("fenced", start_ + ProducerRecovery::kWindow + 500ms));
  EXPECT_EQ(counter_.Value(), static_cast<double>(ProducerRecovery::kMaxRecoveries + 1));
}

TEST_F(ProducerRecoveryBound, AProducerThatCannotBeReplacedEndsTheRecoveryUncounted) {
  replace_error_ = base::Status::failed("init transactions: timed out");
  EXPECT_FALSE(recovery_.recover("INVALID_TXN_STATE", start_));
  EXPECT_EQ(replaced_, 1);
  EXPECT_EQ(counter_.Value(), 0);
}

TEST(ProducerRecoveryCurable, AnAclRefusalIsNotCuredByANewProducerAFailoverIs) {
  for (const auto code : {RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED,
                          RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                          RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED}) {
    EXPECT_FALSE(ProducerRecovery::curable(code)) << rd_kafka_err2name(code);
  }
  for (const auto code : {RD_KAFKA_RESP_ERR_INVALID_TXN_STATE, RD_KAFKA_RESP_ERR_PRODUCER_FENCED,
                          RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, RD_KAFKA_RESP_ERR_NO_ERROR}) {
    EXPECT_TRUE(ProducerRecovery::curable(code)) << rd_kafka_err2name(code);
  }
}

}  // namespace
}  // namespace fraud::service
