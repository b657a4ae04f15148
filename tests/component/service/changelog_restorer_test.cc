// ChangelogRestorer against librdkafka's mock cluster and real RocksDB: a hostile changelog
// (records that are no card state, an unknown key, an unreadable checkpoint) is counted and
// survived, never the end of the process.
#include "service/changelog_restorer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "service/kafka/producer.h"
#include "state/card_state_codec.h"
#include "tests/support/mock_cluster.h"
#include "tests/support/service_fakes.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::MockCluster;
using testing::TempStateDb;

detectors::CardRef refOf(uint8_t n) {
  detectors::CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

std::vector<RestoreResult> waitForResults(ChangelogRestorer& restorer, size_t count) {
  std::vector<RestoreResult> results;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (results.size() < count && std::chrono::steady_clock::now() < deadline) {
    for (auto& r : restorer.takeCompleted()) results.push_back(std::move(r));
    if (results.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return results;
}

TEST(ChangelogRestorer, MalformedChangelogRecordsAreCountedAndSurvived) {
  MockCluster cluster;
  cluster.createTopic("changelog", 2);
  kafka::SyncProducer producer({{"bootstrap.servers", cluster.bootstrap()}, {"log_level", "2"}});
  ASSERT_TRUE(producer.ok()) << producer.error();

  detectors::CardState good;
  good.events.push_back(detectors::Event{1'000, detectors::Country::of('F', 'R'), "t1"});
  const auto good_ref = refOf(1);
  const auto bad_ref = refOf(2);
  ASSERT_TRUE(producer.send("changelog", 0, good_ref.raw(), state::encodeCardState(good)));
  ASSERT_TRUE(producer.send("changelog", 0, bad_ref.raw(), "\x07 no card state"));
  ASSERT_TRUE(producer.send("changelog", 0, "who-wrote-this", "{}"));
  ASSERT_TRUE(producer.send("changelog", 0, kChangelogCheckpointKey, "garbage"));
  const state::PartitionCheckpoint checkpoint{42, 1'000, 0};
  ASSERT_TRUE(producer.send("changelog", 0, kChangelogCheckpointKey, checkpoint.encode()));

  TempStateDb db;
  ChangelogRestorer restorer({{"bootstrap.servers", cluster.bootstrap()}, {"log_level", "2"}},
                             "changelog", *db);
  ASSERT_EQ(restorer.start(), std::nullopt);
  restorer.enqueue({{0, 7}, {1, 8}});  // partition 1's changelog is empty
  const auto results = waitForResults(restorer, 2);
  ASSERT_EQ(results.size(), 2u) << "restores did not complete within 30 s";
  const auto& p0 = results[0].partition == 0 ? results[0] : results[1];
  const auto& p1 = results[0].partition == 0 ? results[1] : results[0];

  EXPECT_FALSE(p0.error.has_value()) << *p0.error;
  EXPECT_EQ(p0.ticket, 7u);
  EXPECT_EQ(p0.records, 5u);
  EXPECT_EQ(p0.malformed, 3u) << "the bad card, the unknown key, the bad checkpoint";
  ASSERT_TRUE(p0.checkpoint.has_value());
  EXPECT_EQ(p0.checkpoint->next_offset, 42);
  EXPECT_EQ(p0.checkpoint->changelog_next_offset, 5);
  auto store = (*db).cardStore(0);  // reading every card back must not throw
  ASSERT_NE(store->find(good_ref), nullptr);
  EXPECT_EQ(*store->find(good_ref), good);
  EXPECT_EQ(store->find(bad_ref), nullptr) << "the malformed card was dropped";

  EXPECT_FALSE(p1.error.has_value());
  EXPECT_EQ(p1.ticket, 8u);
  EXPECT_FALSE(p1.checkpoint.has_value()) << "an empty changelog partition: a new partition";
  restorer.stop();
}

}  // namespace
}  // namespace fraud::service
