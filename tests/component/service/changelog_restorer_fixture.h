// The fixture of the ChangelogRestorer tests (changelog_restorer_test.cc: where a restore starts,
// what it applies and how it fails; changelog_restorer_rounds_test.cc: how restores are run and
// reported): librdkafka's mock cluster with the changelog topic, real RocksDB in a temp dir, and
// helpers to write the changelog and the local state and to wait for results.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "service/changelog_format.h"
#include "service/changelog_restorer.h"
#include "service/kafka/producer.h"
#include "state/card_state_codec.h"
#include "tests/support/mock_cluster.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service::testing {

using Clock = std::chrono::steady_clock;

inline constexpr int16_t kApiFetch = 1;
inline constexpr int16_t kApiListOffsets = 2;

inline detectors::CardRef refOf(uint8_t n) {
  detectors::CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

inline detectors::CardState stateAt(int64_t time) {
  detectors::CardState state;
  state.events.push_back(detectors::Event{time, detectors::Country::of('F', 'R'), "t"});
  return state;
}

// A card state of about 70 KB: 1000 events with the longest transaction ids.
inline detectors::CardState largeStateAt(int64_t time) {
  detectors::CardState state;
  const detectors::TxId tx_id(std::string(detectors::TxId::kMaxSize, 'x'));
  for (int64_t i = 0; i < 1'000; ++i) {
    state.events.push_back(detectors::Event{time + i, detectors::Country::of('F', 'R'), tx_id});
  }
  return state;
}

class ChangelogRestorerTest : public ::testing::Test {
 protected:
  ChangelogRestorerTest() : ChangelogRestorerTest(1) {}
  // On a cluster of `brokers` brokers, every partition replicated on each.
  explicit ChangelogRestorerTest(int brokers) : cluster_(brokers) {
    cluster_.createTopic(topic_, 3);
    EXPECT_TRUE(producer_.status().ok()) << producer_.status().message();
  }

  [[nodiscard]] kafka::KafkaProperties properties() const {
    return {{"bootstrap.servers", cluster_.bootstrap()}, {"log_level", "2"}};
  }
  // A started restorer over db_ (stopped by its destructor, before db_ and the cluster go).
  std::unique_ptr<ChangelogRestorer> started() {
    auto restorer = std::make_unique<ChangelogRestorer>(properties(), topic_, *db_);
    EXPECT_TRUE(restorer->start().ok());
    return restorer;
  }

  void sendCard(int32_t partition, const detectors::CardRef& ref,
                const detectors::CardState& state) {
    const base::Status sent =
        producer_.send(topic_, partition, ref.raw(), state::encodeCardState(state));
    ASSERT_TRUE(sent.ok()) << sent.message();
  }
  void sendCheckpoint(int32_t partition, const state::PartitionCheckpoint& checkpoint) {
    const base::Status sent =
        producer_.send(topic_, partition, kChangelogCheckpointKey, checkpoint.encode());
    ASSERT_TRUE(sent.ok()) << sent.message();
  }
  // A card's erasure: a record with a null value.
  void sendTombstone(int32_t partition, const detectors::CardRef& ref) {
    auto made = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, properties());
    ASSERT_TRUE(made) << made.message();
    const kafka::KafkaHandle producer = std::move(*made);
    const std::string key(ref.raw());
    ASSERT_EQ(kafka::produceWaiting(producer.get(), {topic_.c_str(), partition, key, std::nullopt},
                                    std::chrono::seconds(10)),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    ASSERT_EQ(rd_kafka_flush(producer.get(), 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  // The partition as a previous restore or owner left it on disk.
  void writeLocal(int32_t partition,
                  const std::vector<std::pair<detectors::CardRef, int64_t>>& cards,
                  const std::optional<state::PartitionCheckpoint>& checkpoint) {
    std::vector<state::CardChange> changes;
    changes.reserve(cards.size());
    for (const auto& [ref, time] : cards) {
      changes.push_back(state::CardChange{ref, state::encodeCardState(stateAt(time))});
    }
    ASSERT_TRUE((*db_).writeRestored(partition, changes, checkpoint).ok());
  }

  // Partition 0's changelog of the rebuild tests: card 2, then a checkpoint (offsets 0 and 1).
  void sendCardAndCheckpoint() {
    sendCard(0, refOf(2), stateAt(2'000));
    sendCheckpoint(0, state::PartitionCheckpoint{7, 2'000, 0});
  }
  // Partition 0 rebuilt from that changelog alone: the local card 9 gone.
  void expectRebuiltFromTheChangelog(const RestoreResult& result) {
    EXPECT_TRUE(result.error.ok()) << result.error.message();
    EXPECT_EQ(result.records, 2u);
    ASSERT_TRUE(result.checkpoint.has_value());
    EXPECT_EQ(*result.checkpoint, (state::PartitionCheckpoint{7, 2'000, 2}));
    EXPECT_EQ(cardOf(0, refOf(9)), std::nullopt) << "the local card did not survive";
    EXPECT_EQ(cardOf(0, refOf(2)), stateAt(2'000));
  }

  // The next `count` results, waiting up to 30 s.
  static std::vector<RestoreResult> waitForResults(ChangelogRestorer& restorer, size_t count) {
    std::vector<RestoreResult> results;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (results.size() < count && Clock::now() < deadline) {
      for (auto& r : restorer.takeCompleted()) results.push_back(std::move(r));
      if (results.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return results;
  }
  // The one result of a restore of one partition.
  static RestoreResult waitForResult(ChangelogRestorer& restorer) {
    auto results = waitForResults(restorer, 1);
    EXPECT_EQ(results.size(), 1u) << "no restore completed within 30 s";
    return results.empty() ? RestoreResult{} : std::move(results[0]);
  }
  // The card's state as a task would find it, or nothing.
  std::optional<detectors::CardState> cardOf(int32_t partition, const detectors::CardRef& ref) {
    auto store = (*db_).cardStore(partition);
    const detectors::CardState* state = store->find(ref);
    return state == nullptr ? std::nullopt : std::optional<detectors::CardState>(*state);
  }

  const std::string topic_ = "changelog";
  MockCluster cluster_;
  kafka::SyncProducer producer_{properties()};
  TempStateDb db_;
};

}  // namespace fraud::service::testing
