// ChangelogRestorer on a real broker, with a transaction left open on the changelog the way an
// owner killed mid-commit leaves it: the restore must wait for that transaction (until it is
// fenced) and then take what was committed after it, never stop at the last stable offset nor
// wipe a local checkpoint that lies past it (issue 16).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "service/changelog_format.h"
#include "service/changelog_restorer.h"
#include "service/kafka/client.h"
#include "service/kafka/producer.h"
#include "state/card_state_codec.h"
#include "tests/integration/service/transactional_owner.h"
#include "tests/support/test_kafka.h"

namespace fraud::service {
namespace {

using namespace std::chrono_literals;
using testing::Owner;
using testing::TestKafka;

detectors::CardRef refOf(uint8_t n) {
  detectors::CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

std::string stateWith(const std::string& tx_id, int64_t time) {
  detectors::CardState state;
  state.events.push_back(
      detectors::Event{time, detectors::Country::of('F', 'R'), std::string_view(tx_id)});
  return state::encodeCardState(state);
}

class OpenTransactionRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto brokers = testing::testBrokers();
    if (!brokers) GTEST_SKIP() << "FRAUD_TEST_BROKERS is not set (scripts/test starts a broker)";
    brokers_ = *brokers;
    kafka_ = std::make_unique<TestKafka>(brokers_);
    topic_ = TestKafka::uniqueName("restore-open-txn");
    kafka_->createTopic(topic_, 1);
    prefix_ = topic_ + "-owner-";
    dir_ = std::filesystem::temp_directory_path() / topic_;
    state::StateDbOptions options;
    options.dir = dir_.string();
    options.card_cache_mb = 16;
    options.block_cache_mb = 8;
    options.write_buffer_mb = 4;
    auto db = state::StateDb::open(options);
    ASSERT_TRUE(db) << db.message();
    db_ = std::move(*db);
  }
  void TearDown() override {
    db_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Offsets 0-2: owner A commits card 1 (state "a1") and checkpoint 10. Offset 3: owner B (dead)
  // leaves a transaction open. Offsets 4-6: owner C commits card 1 (state "c1") and checkpoint
  // 20. Returns the dead owner, whose transaction is still open.
  std::unique_ptr<Owner> writeChangelogWithAnOpenTransaction() {
    Owner a(brokers_, prefix_ + "a");
    a.begin();
    a.send(topic_, refOf(1).raw(), stateWith("a1", 1'000));
    a.send(topic_, kChangelogCheckpointKey, state::PartitionCheckpoint{10, 1'000, 0}.encode());
    a.commit();
    auto dead = std::make_unique<Owner>(brokers_, prefix_ + "b");
    dead->begin();
    dead->send(topic_, refOf(2).raw(), stateWith("b1", 2'000));
    dead->flush();  // on the broker, never committed
    Owner c(brokers_, prefix_ + "c");
    c.begin();
    c.send(topic_, refOf(1).raw(), stateWith("c1", 3'000));
    c.send(topic_, kChangelogCheckpointKey, state::PartitionCheckpoint{20, 3'000, 0}.encode());
    c.commit();
    return dead;
  }

  // What a new owner does on arrival: init_transactions under the dead owner's id.
  void fenceDeadOwner() { Owner fencer(brokers_, prefix_ + "b"); }

  std::vector<RestoreResult> waitForResults(ChangelogRestorer& restorer,
                                            std::chrono::milliseconds wait) {
    std::vector<RestoreResult> results;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (results.empty() && std::chrono::steady_clock::now() < deadline) {
      results = restorer.takeCompleted();
      if (results.empty()) std::this_thread::sleep_for(10ms);
    }
    return results;
  }

  std::string brokers_;
  std::unique_ptr<TestKafka> kafka_;
  std::string topic_;
  std::string prefix_;
  std::filesystem::path dir_;
  std::unique_ptr<state::StateDb> db_;
};

TEST_F(OpenTransactionRestoreTest, ALocalCheckpointPastTheOpenTransactionWaitsForItNeverWipes) {
  auto dead = writeChangelogWithAnOpenTransaction();
  // The local disk already holds owner C's committed state (C persisted it before the partition
  // moved): its checkpoint continues after C's checkpoint record, past the last stable offset.
  state::CardChange c1{refOf(1), stateWith("c1", 3'000)};
  ASSERT_TRUE(db_->writeRestored(0, {c1}, state::PartitionCheckpoint{20, 3'000, 6}).ok());

  ChangelogRestorer restorer({{"bootstrap.servers", brokers_}, {"log_level", "2"}}, topic_, *db_);
  ASSERT_TRUE(restorer.start().ok());
  restorer.enqueue({{0, 1}});
  EXPECT_TRUE(waitForResults(restorer, 3s).empty()) << "done while a transaction is open";
  ASSERT_TRUE(db_->checkpoint(0).has_value()) << "the local checkpoint was wiped";
  EXPECT_EQ(db_->checkpoint(0)->next_offset, 20);

  fenceDeadOwner();
  const auto results = waitForResults(restorer, 30s);
  ASSERT_EQ(results.size(), 1u) << "the restore did not end once the transaction was fenced";
  ASSERT_TRUE(results[0].error.ok()) << results[0].error.message();
  ASSERT_TRUE(results[0].checkpoint.has_value());
  EXPECT_EQ(results[0].checkpoint->next_offset, 20) << "C's checkpoint, not A's";
  auto store = db_->cardStore(0);
  ASSERT_NE(store->find(refOf(1)), nullptr);
  EXPECT_EQ(state::encodeCardState(*store->find(refOf(1))), stateWith("c1", 3'000));
  EXPECT_EQ(store->find(refOf(2)), nullptr) << "the fenced transaction's card";
  restorer.stop();
}

TEST_F(OpenTransactionRestoreTest,
       ARestoreFromScratchTakesWhatWasCommittedAfterTheOpenTransaction) {
  auto dead = writeChangelogWithAnOpenTransaction();
  ChangelogRestorer restorer({{"bootstrap.servers", brokers_}, {"log_level", "2"}}, topic_, *db_);
  ASSERT_TRUE(restorer.start().ok());
  restorer.enqueue({{0, 1}});
  EXPECT_TRUE(waitForResults(restorer, 2s).empty()) << "stopped at the last stable offset";
  fenceDeadOwner();
  const auto results = waitForResults(restorer, 30s);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].error.ok()) << results[0].error.message();
  ASSERT_TRUE(results[0].checkpoint.has_value());
  EXPECT_EQ(results[0].checkpoint->next_offset, 20);
  auto store = db_->cardStore(0);
  ASSERT_NE(store->find(refOf(1)), nullptr);
  EXPECT_EQ(state::encodeCardState(*store->find(refOf(1))), stateWith("c1", 3'000));
  EXPECT_EQ(store->find(refOf(2)), nullptr);
  restorer.stop();
}

}  // namespace
}  // namespace fraud::service
