// KafkaFencingCluster::fence on a real broker, against a transaction left open the way an owner
// killed mid-commit leaves it. The coordinator aborts it on the first init_transactions and
// answers CONCURRENT_TRANSACTIONS meanwhile; librdkafka would ask again only 500 ms later, so
// the fence asks again with a new producer (issue 25: the fence was most of a failover with
// standbys).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "service/kafka/client.h"
#include "service/transaction_fencer.h"
#include "tests/integration/service/transactional_owner.h"
#include "tests/support/test_kafka.h"

namespace fraud::service {
namespace {

using fraud::testing::Owner;
using fraud::testing::TestKafka;

class TransactionFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto brokers = fraud::testing::testBrokers();
    if (!brokers) GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set (scripts/test starts a broker)";
    brokers_ = *brokers;
    kafka_ = std::make_unique<TestKafka>(brokers_);
    topic_ = TestKafka::uniqueName("fence");
    kafka_->createTopic(topic_, 1);
    victim_id_ = topic_ + "-instance-2";
  }

  // The departed owner, its transaction open with one record on the changelog.
  std::unique_ptr<Owner> openTransaction() {
    auto owner = std::make_unique<Owner>(brokers_, victim_id_);
    owner->begin();
    owner->send(topic_, "card", "state");
    owner->flush();
    return owner;
  }

  [[nodiscard]] base::Status fence(int timeout_ms, FencePatience patience) {
    KafkaFencingCluster cluster(nullptr, {{"bootstrap.servers", brokers_}, {"log_level", "2"}},
                                topic_ + "-group", topic_, timeout_ms, patience);
    return cluster.fence(victim_id_);
  }

  std::string brokers_;
  std::unique_ptr<TestKafka> kafka_;
  std::string topic_;
  std::string victim_id_;
};

TEST_F(TransactionFenceTest, TheOpenTransactionIsAbortedAndItsOwnerFenced) {
  auto victim = openTransaction();
  const base::Status fenced = fence(30'000, {});
  ASSERT_TRUE(fenced.ok()) << fenced.message();
  const kafka::KafkaError commit = victim->tryCommit();
  ASSERT_TRUE(commit) << "the departed owner committed after the fence";
  EXPECT_TRUE(rd_kafka_error_is_fatal(commit.get())) << rd_kafka_error_string(commit.get());
  EXPECT_TRUE(kafka_->readAll(topic_).empty()) << "the aborted record became visible";
}

// One producer alone is answered CONCURRENT_TRANSACTIONS and asks again only after 500 ms,
// past the 400 ms given here; a second asks as soon as the first wait (100 ms) ends.
TEST_F(TransactionFenceTest, ASecondProducerAsksAgainWhileTheAbortIsAnswered) {
  auto victim = openTransaction();
  const base::Status fenced = fence(400, {.first_wait_ms = 100, .producers = 3});
  ASSERT_TRUE(fenced.ok()) << fenced.message();
  EXPECT_TRUE(victim->tryCommit()) << "the departed owner committed after the fence";
}

}  // namespace
}  // namespace fraud::service
