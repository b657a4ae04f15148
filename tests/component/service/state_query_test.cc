// StateQuery, the API's view of the tasks, over real RocksDB: the lookups an HTTP I/O thread
// makes (tryLookupCached, tryLookupHeldCached) answer what the blocking ones answer for a card in
// the memory cache, and decline one evicted to disk, which only the blocking ones read.
#include "service/state_query.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "service/task_manager.h"
#include "service/topic_admin.h"
#include "tests/support/service_fakes.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::FakeInput;
using testing::FakeRestorer;
using testing::RecordingCollector;
using testing::TaskHarness;
using testing::TempStateDb;
using testing::txJson;

// Cards enough to overflow a 1 MiB card cache (a card costs about 260 bytes there).
constexpr int kCards = 8'000;

class StateQueryTest : public ::testing::Test {
 protected:
  StateQueryTest()
      : db_(/*card_cache_mb=*/1),
        tasks_(harness_.context, db_, input_, restorer_),
        admin_(nullptr, harness_.config),  // an empty owner map: no call reaches a client
        query_(harness_.config, harness_.hasher, db_) {
    query_.attach(tasks_, admin_, /*input_partitions=*/4);
  }

  static std::string cardOf(int i) { return "card-" + std::to_string(100'000 + i); }
  detectors::CardRef refOf(int i) const { return harness_.hasher.hash(cardOf(i)); }

  // Partition 0 active with kCards cards, committed and written: the cache evicted some to disk.
  void fillPartition0() {
    tasks_.assign({0});
    restorer_.complete(0, restorer_.lastTicket(0));
    ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{0});
    PartitionTask* task = tasks_.task(0);
    for (int i = 0; i < kCards; ++i) {
      const std::string card = cardOf(i);  // InputRecord holds views: keep the key alive
      InputRecord record;
      record.offset = i;
      record.key = card;
      const std::string value = txJson("t" + std::to_string(i), cardOf(i), "FR", 1'000 + i);
      record.value = value;
      ASSERT_EQ(task->process(record), PartitionTask::Processed::kDone);
    }
    RecordingCollector changelog;
    ASSERT_TRUE(task->prepareCommit(changelog, "changelog"));
    ASSERT_TRUE(task->markCommitted().committed);
    ASSERT_TRUE(task->persist().ok());
  }

  TempStateDb db_;
  TaskHarness harness_;
  FakeInput input_;
  FakeRestorer restorer_;
  TaskManager tasks_;
  TopicAdmin admin_;
  StateQuery query_;
};

TEST_F(StateQueryTest, ACachedCardIsAnsweredAtOnceAndOneEvictedToDiskIsDeclined) {
  fillPartition0();
  int answered = 0;
  int declined = 0;
  for (int i = 0; i < kCards; ++i) {
    // First: the blocking lookup reads an evicted card back into the cache.
    const std::optional<api::CardLookup> cached = query_.tryLookupCached(0, refOf(i));
    const api::CardLookup blocking = query_.lookup(0, refOf(i));
    ASSERT_EQ(blocking.outcome, api::CardLookupOutcome::kFound) << i;
    if (!cached) {
      ++declined;
      continue;
    }
    ++answered;
    ASSERT_EQ(cached->outcome, api::CardLookupOutcome::kFound) << i;
    EXPECT_EQ(cached->card->state, blocking.card->state);
    EXPECT_EQ(cached->card->stream_time_ms, blocking.card->stream_time_ms);
    EXPECT_EQ(cached->card->partition, 0);
    EXPECT_EQ(cached->card->card_ref, refOf(i));
  }
  EXPECT_GT(answered, 0);
  EXPECT_GT(declined, 0) << "nothing was evicted: the test proves nothing";
}

TEST_F(StateQueryTest, AnEvictedCardIsDeclinedUntilALookupReadsItBackIntoTheCache) {
  fillPartition0();
  std::optional<int> evicted;
  for (int i = 0; i < kCards && !evicted; ++i) {
    if (!query_.tryLookupCached(0, refOf(i))) evicted = i;
  }
  ASSERT_TRUE(evicted.has_value());
  EXPECT_FALSE(query_.tryLookupHeldCached(refOf(*evicted)).has_value());
  const api::CardLookup read = query_.lookupHeld(refOf(*evicted));  // from RocksDB, cached again
  ASSERT_EQ(read.outcome, api::CardLookupOutcome::kFound);
  const std::optional<api::CardLookup> cached = query_.tryLookupHeldCached(refOf(*evicted));
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->outcome, api::CardLookupOutcome::kFound);
  EXPECT_EQ(cached->card->state, read.card->state);
}

TEST_F(StateQueryTest, NotHeldAndRestoringNeedNoStateAndAreAnsweredAtOnce) {
  tasks_.assign({2});  // restoring
  const std::optional<api::CardLookup> other = query_.tryLookupCached(1, refOf(0));
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->outcome, api::CardLookupOutcome::kNotHeld);
  const std::optional<api::CardLookup> restoring = query_.tryLookupCached(2, refOf(0));
  ASSERT_TRUE(restoring.has_value());
  EXPECT_EQ(restoring->outcome, api::CardLookupOutcome::kRestoring);
  const std::optional<api::CardLookup> held = query_.tryLookupHeldCached(refOf(0));
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->outcome, api::CardLookupOutcome::kRestoring);
  EXPECT_EQ(query_.instanceId(), query_.status().instance_id);
}

TEST_F(StateQueryTest, ACardNoPartitionHasIsNotFoundAtOnceWhileTheCacheIsComplete) {
  tasks_.assign({3});
  restorer_.complete(3, restorer_.lastTicket(3));
  ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{3});
  const std::optional<api::CardLookup> cached = query_.tryLookupHeldCached(refOf(0));
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->outcome, api::CardLookupOutcome::kNotFound);
  EXPECT_EQ(query_.lookupHeld(refOf(0)).outcome, api::CardLookupOutcome::kNotFound);
}

}  // namespace
}  // namespace fraud::service
