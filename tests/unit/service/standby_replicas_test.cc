// Standby replicas as pure logic: where copies go (standbyPlacement), when catch-up rounds run
// and what a finished one leaves in the status (StandbyReplicas over a fake restorer), and the
// partition leases that keep the standby and active restores from interleaving.
#include "service/standby_replicas.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "service/partition_leases.h"
#include "tests/support/service_fakes.h"

namespace fraud::service {
namespace {

using namespace std::chrono_literals;
using testing::FakeRestorer;

std::map<int32_t, std::string> ownedBy(std::initializer_list<std::pair<int32_t, std::string>> l) {
  return {l.begin(), l.end()};
}

TEST(StandbyPlacement, TwoMembersAndOneReplicaCopyEveryPartitionOfTheOther) {
  const auto owners = ownedBy({{0, "a"}, {1, "b"}, {2, "a"}, {3, "b"}});
  EXPECT_EQ(standbyPlacement(owners, "a", 1), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(standbyPlacement(owners, "b", 1), (std::set<int32_t>{0, 2}));
  // More replicas than other members: still one copy each.
  EXPECT_EQ(standbyPlacement(owners, "a", 5), (std::set<int32_t>{1, 3}));
  EXPECT_TRUE(standbyPlacement(owners, "a", 0).empty());
}

TEST(StandbyPlacement, EachPartitionGetsExactlyTheReplicasThatFollowItsOwnerInTheRing) {
  const auto owners = ownedBy({{0, "a"}, {1, "b"}, {2, "c"}, {3, "a"}, {4, "b"}, {5, "c"}});
  for (int replicas : {1, 2}) {
    std::map<int32_t, int> copies;
    for (const std::string self : {"a", "b", "c"}) {
      for (const int32_t p : standbyPlacement(owners, self, replicas)) {
        EXPECT_NE(owners.at(p), self) << "an owner never copies its own partition";
        ++copies[p];
      }
    }
    for (const auto& [p, owner] : owners) EXPECT_EQ(copies[p], replicas) << "partition " << p;
  }
  // One replica: the member after the owner (a -> b -> c -> a).
  EXPECT_EQ(standbyPlacement(owners, "b", 1), (std::set<int32_t>{0, 3}));
  EXPECT_EQ(standbyPlacement(owners, "a", 1), (std::set<int32_t>{2, 5}));
}

TEST(StandbyPlacement, AMemberThatOwnsNothingStillTakesItsShare) {
  // "b" has joined but owns nothing yet; it is in the ring all the same.
  const auto owners = ownedBy({{0, "a"}, {1, "c"}});
  EXPECT_EQ(standbyPlacement(owners, "b", 1), (std::set<int32_t>{0}));
  EXPECT_TRUE(standbyPlacement({}, "b", 1).empty());
}

class StandbyReplicasTest : public ::testing::Test {
 protected:
  StandbyReplicas make(int replicas = 1) {
    StandbyReplicas::Options options;
    options.replicas = replicas;
    options.self = "a";
    options.interval = 1s;
    return StandbyReplicas(options, restorer, [this] { return owners; });
  }
  static RestoreResult done(int32_t p, uint64_t ticket, int64_t start, int64_t end) {
    RestoreResult r;
    r.partition = p;
    r.ticket = ticket;
    r.changelog_start = start;
    r.changelog_end = end;
    r.changelog_next = end + 1;
    return r;
  }

  FakeRestorer restorer;
  std::map<int32_t, std::string> owners = ownedBy({{0, "a"}, {1, "b"}, {2, "b"}});
  StandbyReplicas::Clock::time_point t0 = StandbyReplicas::Clock::now();
};

TEST_F(StandbyReplicasTest, ARoundCatchesUpThePlacedPartitionsNotOwnedHereOncePerInterval) {
  auto standbys = make();
  standbys.tick({0, 2}, t0);  // partition 2 moved here before the owner map says so
  ASSERT_EQ(restorer.queued.size(), 1u);
  EXPECT_EQ(restorer.queued[0].first, 1);
  standbys.tick({0, 2}, t0 + 500ms);
  EXPECT_EQ(restorer.queued.size(), 1u) << "no round before the interval";
  standbys.tick({0, 2}, t0 + 1s);
  EXPECT_EQ(restorer.queued.size(), 1u) << "partition 1's catch-up is still running";

  RestoreResult caught_up = done(1, restorer.lastTicket(1), 100, 250);
  caught_up.malformed = 3;
  restorer.completed.push_back(std::move(caught_up));
  standbys.tick({0, 2}, t0 + 1500ms);  // takes the result; the next round is due at 2 s
  EXPECT_EQ(standbys.takeMalformedChangelogRecords(), 3u) << "counted like a restore's";
  EXPECT_EQ(standbys.takeMalformedChangelogRecords(), 0u);
  const auto statuses = standbys.statuses(t0 + 1700ms);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].partition, 1);
  EXPECT_EQ(statuses[0].lag_records, 150);
  EXPECT_EQ(statuses[0].changelog_offset, 251);
  EXPECT_EQ(statuses[0].catchups, 1u);
  ASSERT_TRUE(statuses[0].seconds_since_caught_up.has_value());
  EXPECT_NEAR(*statuses[0].seconds_since_caught_up, 0.2, 1e-6);

  standbys.tick({0, 2}, t0 + 2s);
  ASSERT_EQ(restorer.queued.size(), 2u);
  EXPECT_EQ(restorer.queued[1].first, 1);
  EXPECT_NE(restorer.queued[1].second, restorer.queued[0].second) << "a fresh ticket a round";
}

TEST_F(StandbyReplicasTest, APartitionAssignedHereIsReleasedAndItsLateResultIgnored) {
  auto standbys = make();
  standbys.tick({0}, t0);
  ASSERT_EQ(restorer.queued.size(), 2u);  // partitions 1 and 2
  const uint64_t ticket = restorer.lastTicket(1);
  standbys.release({1});
  EXPECT_EQ(restorer.cancelled, std::vector<int32_t>{1});
  EXPECT_EQ(standbys.takeDropped(), std::vector<int32_t>{1});
  restorer.completed.push_back(done(1, ticket, 0, 10));  // finished before the cancel landed
  standbys.tick({0, 1}, t0 + 1s);
  const auto statuses = standbys.statuses(t0 + 1s);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].partition, 2);
  for (const auto& [p, t] : restorer.queued) {
    EXPECT_FALSE(p == 1 && t != ticket) << "an owned partition is never caught up";
  }
}

TEST_F(StandbyReplicasTest, ACopyNoLongerPlacedIsCancelledAndDropped) {
  auto standbys = make();
  standbys.tick({0}, t0);
  owners = ownedBy({{0, "a"}, {1, "b"}, {2, "a"}});  // partition 2 came here... to "a"
  standbys.tick({0}, t0 + 1s);                       // ...but not yet to this task manager
  EXPECT_EQ(restorer.cancelled, std::vector<int32_t>{2});
  EXPECT_EQ(standbys.takeDropped(), std::vector<int32_t>{2});
  EXPECT_TRUE(standbys.takeDropped().empty());
  const auto statuses = standbys.statuses(t0 + 1s);
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].partition, 1);
}

TEST_F(StandbyReplicasTest, BusyRoundsAreNotCountedAndFailedOnesAreCountedAndRetried) {
  auto standbys = make();
  standbys.tick({0}, t0);
  RestoreResult busy = done(1, restorer.lastTicket(1), 0, 0);
  busy.busy = true;
  RestoreResult failed = done(2, restorer.lastTicket(2), 0, 0);
  failed.error = base::Status::failed("changelog offsets: timed out");
  RestoreResult stale = done(1, 999, 0, 0);  // a ticket this copy never had
  stale.malformed = 5;
  restorer.completed.push_back(std::move(busy));
  restorer.completed.push_back(std::move(failed));
  restorer.completed.push_back(std::move(stale));
  standbys.tick({0}, t0 + 1s);
  EXPECT_EQ(standbys.takeMalformedChangelogRecords(), 0u) << "a stale result counts nothing";
  for (const auto& s : standbys.statuses(t0 + 1s)) {
    EXPECT_EQ(s.catchups, 0u);
    EXPECT_EQ(s.failures, s.partition == 2 ? 1u : 0u);
    EXPECT_FALSE(s.seconds_since_caught_up.has_value());
    EXPECT_EQ(s.lag_records, -1);
  }
  EXPECT_EQ(restorer.queued.size(), 4u) << "both are caught up again in the next round";
}

TEST(PartitionLeases, TheStandbySideNeverWaitsAndTheActiveSideWaitsForTheRelease) {
  PartitionLeases leases;
  auto standby = leases.tryAcquire(3);
  ASSERT_TRUE(standby);
  EXPECT_FALSE(leases.tryAcquire(3)) << "one writer a partition";
  EXPECT_TRUE(leases.tryAcquire(4)) << "other partitions are free";
  std::atomic<bool> acquired{false};
  std::thread active([&] {
    auto lease = leases.acquire(3);
    acquired = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(acquired.load()) << "the active restore waits while the standby writes";
  standby.release();
  active.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_FALSE(leases.held(3)) << "released when the active lease went out of scope";
}

}  // namespace
}  // namespace fraud::service
