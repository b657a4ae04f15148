// PartitionTask::tryLookupCached, the card lookup an HTTP I/O thread makes: it answers what
// lookup() answers when the store's cache can tell at once, and otherwise declines without
// waiting for the task's lock or reading the store below.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "service/partition_task.h"
#include "state/card_state_copy.h"
#include "tests/support/service_fakes.h"
#include "tests/unit/service/partition_task_fixture.h"

namespace fraud::service {
namespace {

using testing::txJson;

class PartitionTaskLookupTest : public PartitionTaskTest {
 protected:
  detectors::CardRef refOf(int i) const {
    return harness_.hasher.hash("card-" + std::to_string(10'000 + i));
  }
  // Activates the task anew over a partition of `cards` cards whose cache holds only a few
  // (budget_ of 4000 bytes): the rest are on the store below alone.
  void activateOverAColdCache(int cards) {
    auto storage = std::make_unique<state::MemoryCardSource>();
    for (int i = 0; i < cards; ++i) {
      storage->cards.modify(refOf(i)).events.push_back(
          detectors::Event{1'000 + i, detectors::Country::of('F', 'R'), "t"});
    }
    task_.restart(2);
    budget_.limit = 4000;
    ASSERT_TRUE(task_.activate(liveStore(std::move(storage)), state::PartitionCheckpoint{}, 0));
    storage_->reads = 0;
  }

  state::CardStateCopy copy_;
};

TEST_F(PartitionTaskLookupTest, ACachedCardIsAnsweredAsLookupAnswersIt) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  ASSERT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  const auto card = harness_.hasher.hash("card-0001");
  const std::optional<HeldCard> cached = task_.tryLookupCached(card, copy_);
  ASSERT_TRUE(cached.has_value());
  const HeldCard held = task_.lookup(card);
  EXPECT_EQ(cached->outcome, HeldCard::Outcome::kFound);
  ASSERT_TRUE(cached->state.has_value());
  EXPECT_EQ(cached->state->events.size(), 2u);
  EXPECT_EQ(cached->state, held.state);
  EXPECT_EQ(cached->stream_time_ms, held.stream_time_ms);
  EXPECT_EQ(cached->stream_time_ms, 2'000);
  EXPECT_EQ(storage_->reads, 0u);
}

TEST_F(PartitionTaskLookupTest, WithoutStateInACompleteCacheItIsNotFoundAtOnce) {
  const std::optional<HeldCard> cached =
      task_.tryLookupCached(harness_.hasher.hash("card-none"), copy_);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->outcome, HeldCard::Outcome::kNotFound);
  EXPECT_FALSE(cached->state.has_value());
}

TEST_F(PartitionTaskLookupTest, ARestoringTaskIsAnsweredAtOnce) {
  task_.restart(2);
  const std::optional<HeldCard> cached =
      task_.tryLookupCached(harness_.hasher.hash("card-0001"), copy_);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->outcome, HeldCard::Outcome::kRestoring);
}

TEST_F(PartitionTaskLookupTest, ACardOnlyTheStoreBelowHoldsIsDeclinedAndLookupReadsIt) {
  activateOverAColdCache(200);
  int answered = 0;
  int declined = 0;
  for (int i = 0; i < 200; ++i) {
    const std::optional<HeldCard> cached = task_.tryLookupCached(refOf(i), copy_);
    if (cached) {
      ++answered;
      ASSERT_EQ(cached->outcome, HeldCard::Outcome::kFound) << i;
      EXPECT_EQ(cached->state->events.back().time, 1'000 + i);
      continue;
    }
    ++declined;
    EXPECT_EQ(storage_->reads, 0u) << "declined without reading below";
    const HeldCard held = task_.lookup(refOf(i));
    EXPECT_EQ(held.outcome, HeldCard::Outcome::kFound) << i;
    EXPECT_EQ(storage_->reads, 1u);
    storage_->reads = 0;
  }
  EXPECT_GT(answered, 0);
  EXPECT_GT(declined, 0);
  // A card the cache does not hold may still be below: only lookup() can tell it is absent.
  EXPECT_FALSE(task_.tryLookupCached(harness_.hasher.hash("card-none"), copy_).has_value());
  EXPECT_EQ(task_.lookup(harness_.hasher.hash("card-none")).outcome, HeldCard::Outcome::kNotFound);
}

TEST_F(PartitionTaskLookupTest, ItNeverWaitsForALookupReadingTheStoreBelow) {
  activateOverAColdCache(200);
  std::optional<detectors::CardRef> cold;
  std::optional<detectors::CardRef> warm;
  for (int i = 0; i < 200 && (!cold || !warm); ++i) {
    (task_.tryLookupCached(refOf(i), copy_) ? warm : cold) = refOf(i);
  }
  ASSERT_TRUE(cold && warm);
  std::mutex mutex;
  std::condition_variable changed;
  bool reading = false;
  bool release = false;
  storage_->on_read = [&] {  // a slow disk read, under the task's lock
    std::unique_lock lock(mutex);
    reading = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  };
  std::thread blocking([&] { EXPECT_EQ(task_.lookup(*cold).outcome, HeldCard::Outcome::kFound); });
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return reading; }));
  }
  EXPECT_FALSE(task_.tryLookupCached(*warm, copy_).has_value()) << "waited for the lock";
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  changed.notify_all();
  blocking.join();
  storage_->on_read = nullptr;
  EXPECT_TRUE(task_.tryLookupCached(*warm, copy_).has_value());
}

TEST_F(PartitionTaskLookupTest, ACardLargerThanTheCopyIsDeclinedAndLookupStillAnswersIt) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  ASSERT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  const auto card = harness_.hasher.hash("card-0001");
  state::CardStateCopy small(8);
  EXPECT_FALSE(task_.tryLookupCached(card, small).has_value());
  EXPECT_GT(small.needed(), small.capacity());
  const HeldCard held = task_.lookup(card);
  ASSERT_EQ(held.outcome, HeldCard::Outcome::kFound);
  EXPECT_EQ(held.state->events.size(), 2u);
}

}  // namespace
}  // namespace fraud::service
