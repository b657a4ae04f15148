#include "service/client_settings.h"

#include <gtest/gtest.h>

#include "service/transaction_fencer.h"

namespace fraud::service {
namespace {

ServiceConfig config() {
  ServiceConfig c;
  c.brokers = "kafka:9092";
  c.group_id = "fraud";
  c.instance_id = "fraud-0";
  c.resolveDefaults();
  return c;
}

TEST(ClientSettings, EveryClientGetsTheBrokersAndTheInstanceAsClientIdUnlessTheUserNamedOne) {
  const auto common = commonSettings(config(), {{"bootstrap.servers", "elsewhere:1"}});
  EXPECT_EQ(common.at("bootstrap.servers"), "kafka:9092");
  EXPECT_EQ(common.at("client.id"), "fraud-0");
  EXPECT_EQ(commonSettings(config(), {{"client.id", "mine"}}).at("client.id"), "mine");
}

TEST(ClientSettings, TheProducerIsTransactionalWhateverTheUserSaysAndTakesTheUsersTuning) {
  const auto props = producerSettings(config(), {{"enable.idempotence", "false"},
                                                 {"acks", "1"},
                                                 {"transactional.id", "x"},
                                                 {"linger.ms", "50"},
                                                 {"transaction.timeout.ms", "20000"}});
  EXPECT_EQ(props.at("transactional.id"), transactionalIdOf("fraud", "fraud-0"));
  EXPECT_EQ(props.at("enable.idempotence"), "true");
  EXPECT_EQ(props.at("acks"), "all");
  EXPECT_EQ(props.at("linger.ms"), "50");
  EXPECT_EQ(props.at("transaction.timeout.ms"), "20000");
  const auto defaults = producerSettings(config(), {});
  EXPECT_EQ(defaults.at("linger.ms"), "5");
  EXPECT_EQ(defaults.at("transaction.timeout.ms"), "60000");
  EXPECT_EQ(defaults.at("queue.buffering.max.kbytes"), "262144");
}

TEST(ClientSettings, TheConsumerReadsCommittedAndCommitsOnlyInTheTransaction) {
  auto c = config();
  c.auto_offset_reset = "latest";
  const auto props = consumerSettings(c, {{"isolation.level", "read_uncommitted"},
                                          {"enable.auto.commit", "true"},
                                          {"partition.assignment.strategy", "range"}});
  EXPECT_EQ(props.at("group.id"), "fraud");
  EXPECT_EQ(props.at("isolation.level"), "read_committed");
  EXPECT_EQ(props.at("enable.auto.commit"), "false");
  EXPECT_EQ(props.at("enable.auto.offset.store"), "false");
  EXPECT_EQ(props.at("auto.offset.reset"), "latest");
  EXPECT_EQ(props.at("partition.assignment.strategy"), "range");  // the user's choice
  EXPECT_EQ(props.count("group.instance.id"), 0u);
  EXPECT_EQ(props.count("fetch.wait.max.ms"), 0u);
  EXPECT_EQ(props.at("queued.max.messages.kbytes"), "16384") << "the prefetch queue's bound";
  EXPECT_EQ(consumerSettings(c, {{"queued.max.messages.kbytes", "65536"}})
                .at("queued.max.messages.kbytes"),
            "65536")
      << "a default the user may change";
}

TEST(ClientSettings, StaticMembershipAndTheEmbeddedClusterShowInTheConsumer) {
  auto c = config();
  c.static_membership = true;
  c.embedded_kafka = true;
  const auto props = consumerSettings(c, {});
  EXPECT_EQ(props.at("group.instance.id"), "fraud-0");
  EXPECT_EQ(props.at("fetch.wait.max.ms"), "5");
  EXPECT_EQ(consumerSettings(c, {{"fetch.wait.max.ms", "100"}}).at("fetch.wait.max.ms"), "100");
}

TEST(ClientSettings, TheCommitFollowsTheConfigAndTheEmbeddedClusterPersistsEveryCommit) {
  auto c = config();
  c.commit_interval_ms = 200;
  c.checkpoint_interval_ms = 5'000;
  c.max_held_output_mb = 3;
  auto commit = commitOptions(c);
  EXPECT_EQ(commit.input_topic, c.input_topic);
  EXPECT_EQ(commit.changelog_topic, c.changelog_topic);
  EXPECT_EQ(commit.owner, "fraud-0");
  EXPECT_EQ(commit.commit_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(commit.checkpoint_interval, std::chrono::milliseconds(5'000));
  EXPECT_EQ(commit.max_held_bytes, size_t{3} << 20);
  EXPECT_FALSE(commit.commit_offsets_outside_transaction);
  c.embedded_kafka = true;
  commit = commitOptions(c);
  EXPECT_EQ(commit.checkpoint_interval, std::chrono::milliseconds(0));
  EXPECT_TRUE(commit.commit_offsets_outside_transaction);
}

}  // namespace
}  // namespace fraud::service
