// A partition task's commit phase as its header draws it (service/partition_task.h): the table
// of legal steps, and the steps a task over a memory store takes on each path of a commit.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/base/broken_invariant.h"
#include "service/partition_task.h"
#include "tests/support/fake_sinks.h"
#include "tests/support/service_fakes.h"
#include "tests/unit/service/partition_task_fixture.h"

namespace fraud::service {
namespace {

using Phase = PartitionTask::Phase;
using testing::RecordingCollector;
using testing::txJson;

const std::vector<Phase> kPhases = {Phase::kRestoring, Phase::kClean, Phase::kDirty,
                                    Phase::kPrepared, Phase::kPreparedDirty};

// Every step the diagram draws, and no other.
const std::set<std::pair<Phase, Phase>> kLegal = {
    // activate()
    {Phase::kRestoring, Phase::kClean},
    // restart(): from every phase
    {Phase::kRestoring, Phase::kRestoring},
    {Phase::kClean, Phase::kRestoring},
    {Phase::kDirty, Phase::kRestoring},
    {Phase::kPrepared, Phase::kRestoring},
    {Phase::kPreparedDirty, Phase::kRestoring},
    // process()
    {Phase::kClean, Phase::kDirty},
    {Phase::kDirty, Phase::kDirty},
    {Phase::kPrepared, Phase::kPreparedDirty},
    {Phase::kPreparedDirty, Phase::kPreparedDirty},
    // prepareCommit()
    {Phase::kDirty, Phase::kPrepared},
    // markCommitted()
    {Phase::kPrepared, Phase::kClean},
    {Phase::kPreparedDirty, Phase::kDirty},
    // rewind(): every active phase
    {Phase::kClean, Phase::kClean},
    {Phase::kDirty, Phase::kClean},
    {Phase::kPrepared, Phase::kClean},
    {Phase::kPreparedDirty, Phase::kClean},
};

TEST(PartitionTaskPhase, EveryStepTheDiagramDrawsIsLegalAndNoOther) {
  for (const Phase from : kPhases) {
    for (const Phase to : kPhases) {
      EXPECT_EQ(PartitionTask::isTransitionValid(from, to), kLegal.count({from, to}) == 1)
          << PartitionTask::phaseName(from) << " to " << PartitionTask::phaseName(to);
    }
  }
}

TEST(PartitionTaskPhase, NoStepLosesACommitOrConsumesWhileRestoring) {
  // A second commit prepared while the first is in flight would lose its checkpoint.
  EXPECT_FALSE(PartitionTask::isTransitionValid(Phase::kPreparedDirty, Phase::kPrepared));
  EXPECT_FALSE(PartitionTask::isTransitionValid(Phase::kPrepared, Phase::kPrepared));
  // Only records make a commit: nothing is prepared from a clean task.
  EXPECT_FALSE(PartitionTask::isTransitionValid(Phase::kClean, Phase::kPrepared));
  // A restoring task neither processes nor prepares.
  for (const Phase to : {Phase::kDirty, Phase::kPrepared, Phase::kPreparedDirty}) {
    EXPECT_FALSE(PartitionTask::isTransitionValid(Phase::kRestoring, to))
        << PartitionTask::phaseName(to);
  }
}

TEST(PartitionTaskPhase, EachPhaseHasItsName) {
  std::set<std::string_view> names;
  for (const Phase phase : kPhases) names.insert(PartitionTask::phaseName(phase));
  EXPECT_EQ(names.size(), kPhases.size());
  EXPECT_EQ(names.count("unknown"), 0u);
}

class PartitionTaskPhaseWalk : public PartitionTaskTest {
 protected:
  void feedOne() {
    ASSERT_EQ(feed(next_, txJson("t" + std::to_string(next_), "card-0001", "FR", 1'000 * next_)),
              PartitionTask::Processed::kDone);
    ++next_;
  }
  bool prepare() { return task_.prepareCommit(changelog_, "changelog").has_value(); }

  int64_t next_ = 0;
  RecordingCollector changelog_;
};

TEST_F(PartitionTaskPhaseWalk, ACommitWithRecordsDuringItGoesCleanDirtyPreparedDirty) {
  const uint64_t illegal = base::brokenInvariantCount(base::Invariant::kTaskCommitPhase);
  EXPECT_EQ(task_.phase(), Phase::kClean);
  EXPECT_FALSE(prepare()) << "nothing processed: nothing to commit";
  feedOne();
  EXPECT_EQ(task_.phase(), Phase::kDirty);
  EXPECT_TRUE(task_.dirty());
  ASSERT_TRUE(prepare());
  EXPECT_EQ(task_.phase(), Phase::kPrepared);
  EXPECT_FALSE(task_.dirty());
  feedOne();
  EXPECT_EQ(task_.phase(), Phase::kPreparedDirty);
  EXPECT_TRUE(task_.dirty());
  ASSERT_TRUE(task_.inFlight().has_value());
  EXPECT_EQ(task_.inFlight()->next_offset, 1);
  const auto applied = task_.markCommitted();
  ASSERT_TRUE(applied.committed.has_value());
  EXPECT_EQ(applied.committed->next_offset, 1);
  EXPECT_EQ(task_.phase(), Phase::kDirty) << "the record during the commit waits for the next";
  ASSERT_TRUE(prepare());
  EXPECT_TRUE(task_.markCommitted().committed.has_value());
  EXPECT_EQ(task_.phase(), Phase::kClean);
  EXPECT_EQ(task_.committed().next_offset, 2);
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kTaskCommitPhase), illegal);
}

TEST_F(PartitionTaskPhaseWalk, AResultReachesOnlyAPreparedTask) {
  feedOne();
  const auto applied = task_.markCommitted(/*checkpoint_record_offset=*/5);
  EXPECT_FALSE(applied.committed.has_value()) << "it prepared nothing";
  EXPECT_TRUE(applied.written.ok());
  EXPECT_EQ(task_.phase(), Phase::kDirty);
  EXPECT_EQ(task_.committed().changelog_next_offset, 0);
}

TEST_F(PartitionTaskPhaseWalk, ARewindFromEachActivePhaseIsClean) {
  const uint64_t illegal = base::brokenInvariantCount(base::Invariant::kTaskCommitPhase);
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone);
  EXPECT_EQ(task_.phase(), Phase::kClean);
  feedOne();
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone);
  EXPECT_EQ(task_.phase(), Phase::kClean);
  feedOne();
  ASSERT_TRUE(prepare());
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone);
  EXPECT_EQ(task_.phase(), Phase::kClean);
  EXPECT_FALSE(task_.inFlight().has_value()) << "the aborted commit is forgotten";
  EXPECT_FALSE(task_.markCommitted().committed.has_value());
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kTaskCommitPhase), illegal);
}

TEST_F(PartitionTaskPhaseWalk, ARestartDuringACommitForgetsIt) {
  feedOne();
  ASSERT_TRUE(prepare());
  task_.restart(2);
  EXPECT_EQ(task_.phase(), Phase::kRestoring);
  EXPECT_FALSE(task_.active());
  EXPECT_FALSE(task_.inFlight().has_value());
  EXPECT_FALSE(task_.markCommitted().committed.has_value());
  EXPECT_EQ(task_.phase(), Phase::kRestoring);
}

// A second prepare while the first commit is in flight is a coordinator bug: fatal in a debug
// build, counted in release (where the step is made all the same, as before the phase existed).
TEST_F(PartitionTaskPhaseWalk, ASecondPrepareBeforeTheResultIsABug) {
  feedOne();
  ASSERT_TRUE(prepare());
  feedOne();
  const uint64_t illegal = base::brokenInvariantCount(base::Invariant::kTaskCommitPhase);
  EXPECT_DEBUG_DEATH((void)prepare(), "illegal commit phase step");
#ifdef NDEBUG
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kTaskCommitPhase), illegal + 1);
  EXPECT_EQ(task_.phase(), Phase::kPrepared);
  EXPECT_EQ(task_.inFlight()->next_offset, 2);
#else
  EXPECT_EQ(base::brokenInvariantCount(base::Invariant::kTaskCommitPhase), illegal)
      << "the step died in its child";
#endif
}

}  // namespace
}  // namespace fraud::service
