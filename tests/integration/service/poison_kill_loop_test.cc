// Poison records and a SIGKILL after every slice of input (issue 9), on a real broker.
//
// Two `fraud-detector run` instances share one group. The input is produced in slices of valid
// transactions mixed with records the contract rejects (docs/rule.md §1: a rejected record "never
// stops processing"): a value as large as the broker takes, whose dead-letter copy does not fit the
// service producer's message.max.bytes; a null value (tombstone); an empty value; bytes that are
// not UTF-8; a JSON object with a string that is not UTF-8. Each slice goes in two halves: once
// the first is being committed, the second is produced and one instance is killed with SIGKILL
// at once, mid-processing, and started again (they take turns). At the end:
// - every input partition is committed to its end (committed offsets == end offsets);
// - the alerts topic, read_committed, equals `replay` of each input partition per idempotency
//   key: none missing, none twice, each the same JSON value apart from detected_at;
// - every rejected record is on the dead-letter topic exactly once (read_committed), as it came,
//   with its source topic, partition and offset; an oversized one is cut to fit and says so in
//   the headers `truncated: true` and `original-size: <bytes>`;
// - both instances are still running and answer /readyz with 200.
// Every wait has a deadline and the whole run a budget: a stall fails with the committed and end
// offsets and each instance's /readyz and /v1/partitions answers, never a hang.
//
// The short run (6 slices, 6 kills) is labelled `integration` (the test command); the soak (20
// slices and kills, the broker killed with SIGKILL and restarted once mid-slice) is labelled
// `soak` and needs FRAUD_TEST_KAFKA_DIR, the broker's `scripts/kafka --dir`: run it alone, as it
// restarts that broker under every other test.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/integration/service/poison_kill_loop_fixture.h"

namespace fraud::testing {
namespace {

TEST_F(PoisonKillLoopTest, PoisonRecordsAndAKillAfterEverySliceStallNothingLoseNothing) {
  runKillLoop(KillLoopPlan{});
}

TEST_F(PoisonKillLoopTest, SoakTwentyKillsOfBothInstancesAndABrokerRestart) {
  const char* dir = std::getenv("FRAUD_TEST_KAFKA_DIR");
  ASSERT_TRUE(dir != nullptr && *dir != '\0')
      << "the soak restarts the broker: set FRAUD_TEST_KAFKA_DIR to its scripts/kafka --dir";
  kafka_dir_ = dir;
  KillLoopPlan plan;
  plan.slices = 20;
  plan.records_per_slice = 3'000;
  plan.broker_restart_after_slice = 9;
  plan.budget = seconds(1'200);
  runKillLoop(plan);
}

}  // namespace
}  // namespace fraud::testing
