// The transactional output's lifecycle as its header draws it (service/transactional_output.h):
// the steps every path takes are legal, and the ones that would lose or repeat a transaction
// are not. The output itself runs these steps against librdkafka's mock cluster in
// tests/component/service/transactional_output_test.cc, where a Debug build (ASan+UBSan) fails
// fast on an illegal one.
#include <gtest/gtest.h>

#include <vector>

#include "service/transactional_output.h"

namespace fraud::service {
namespace {

using State = TransactionalOutput::State;

bool walk(const std::vector<State>& states) {
  for (size_t i = 1; i < states.size(); ++i) {
    if (!TransactionalOutput::isTransitionValid(states[i - 1], states[i])) return false;
  }
  return true;
}

TEST(TransactionalOutputLifecycle, EveryPathTheDiagramDrawsIsLegal) {
  // Records, a commit, the held records in the next transaction.
  EXPECT_TRUE(walk({State::kIdle, State::kOpen, State::kCommitting, State::kIdle, State::kOpen}));
  // A record lost: the committer only aborts.
  EXPECT_TRUE(walk({State::kIdle, State::kOpen, State::kDoomed, State::kDoomed, State::kCommitting,
                    State::kIdle}));
  // A begin refused, a later one accepted: what it sends cannot commit either.
  EXPECT_TRUE(walk({State::kIdle, State::kRefused, State::kDoomed, State::kCommitting}));
  // Nothing sent: a commit ends at once.
  EXPECT_TRUE(walk({State::kIdle, State::kCommitting, State::kIdle}));
  // An abort, from each state that has something to abort.
  for (const State s : {State::kOpen, State::kDoomed, State::kRefused}) {
    EXPECT_TRUE(walk({State::kIdle, s, State::kIdle})) << TransactionalOutput::stateName(s);
  }
  // Fatal, recovery with a new producer; a commit asked of a failed producer ends as fatal.
  EXPECT_TRUE(walk({State::kOpen, State::kCommitting, State::kFatal, State::kCommitting,
                    State::kFatal, State::kFatal, State::kIdle}));
}

TEST(TransactionalOutputLifecycle, EveryStateButACommitInFlightCanFailFatally) {
  for (const State s :
       {State::kIdle, State::kOpen, State::kDoomed, State::kRefused, State::kCommitting}) {
    EXPECT_TRUE(TransactionalOutput::isTransitionValid(s, State::kFatal))
        << TransactionalOutput::stateName(s);
  }
}

TEST(TransactionalOutputLifecycle, NoStepLosesOrRepeatsATransaction) {
  // A second commit while one is in flight, or records sent into it: both would be lost.
  for (const State s : {State::kCommitting, State::kOpen, State::kDoomed, State::kRefused}) {
    EXPECT_FALSE(TransactionalOutput::isTransitionValid(State::kCommitting, s))
        << "committing to " << TransactionalOutput::stateName(s);
  }
  // A transaction with a lost record can only abort: never back to a committable one.
  EXPECT_FALSE(TransactionalOutput::isTransitionValid(State::kDoomed, State::kOpen));
  EXPECT_FALSE(TransactionalOutput::isTransitionValid(State::kRefused, State::kOpen));
  // A failed producer sends nothing: only a new producer (kIdle) or a commit ending as fatal.
  for (const State s : {State::kOpen, State::kDoomed, State::kRefused}) {
    EXPECT_FALSE(TransactionalOutput::isTransitionValid(State::kFatal, s))
        << "fatal to " << TransactionalOutput::stateName(s);
  }
  EXPECT_TRUE(TransactionalOutput::isTransitionValid(State::kIdle, State::kIdle))
      << "an abort with nothing open stays idle";
}

}  // namespace
}  // namespace fraud::service
