// docs/rule.md §2–§4, one test per clause and edge, on the in-memory store.
#include "detectors/partition_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>

#include "detectors/outcome_counts.h"
#include "state/memory_card_store.h"

namespace fraud::detectors {
namespace {

using ::testing::ElementsAre;

constexpr EventTime kT0 = 1'700'000'000'000;
constexpr int64_t kW = 600'000;
constexpr int64_t kG = 120'000;

Country C(const char* code) { return Country::of(code[0], code[1]); }

class PartitionDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }

  void reset() {
    store_ = std::make_unique<state::MemoryCardStore>();
    detector_ = std::make_unique<PartitionDetector>(options_, *store_);
  }

  PartitionDetector::Result feed(const std::string& card, const std::string& tx_id,
                                 const char* country, EventTime t) {
    const Transaction tx{tx_id, card, C(country), t};
    auto result = detector_->process(hasher_.hash(card), tx);
    counts_.count(result);
    return result;
  }

  const CardState* stateOf(const std::string& card) { return store_->find(hasher_.hash(card)); }

  DetectorOptions options_;
  CardHasher hasher_{"unit-test-key"};
  std::unique_ptr<state::MemoryCardStore> store_;
  std::unique_ptr<PartitionDetector> detector_;
  OutcomeCounts counts_;
};

TEST_F(PartitionDetectorTest, ThreeDistinctCountriesWithinWindowRaiseOneAlert) {
  EXPECT_FALSE(feed("card-a", "t1", "DE", kT0).alert);
  EXPECT_FALSE(feed("card-a", "t2", "FR", kT0 + 1000).alert);
  const auto result = feed("card-a", "t3", "IT", kT0 + 2000);
  ASSERT_TRUE(result.alert);
  const Alert& alert = *result.alert;
  EXPECT_EQ(alert.card_ref, hasher_.hash("card-a"));
  EXPECT_EQ(alert.incident.start, kT0);
  EXPECT_EQ(alert.incident.end, kT0 + kW);
  EXPECT_EQ(alert.incident.revision, 1u);
  EXPECT_THAT(alert.incident.countries, ElementsAre(C("DE"), C("FR"), C("IT")));
  EXPECT_THAT(alert.tx_ids, ElementsAre("t1", "t2", "t3"));
  EXPECT_EQ(alert.trigger_tx_id, "t3");
  EXPECT_EQ(alert.trigger_event_time, kT0 + 2000);
}

TEST_F(PartitionDetectorTest, RepeatedCountriesDoNotCount) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "DE", kT0 + 1);
  EXPECT_FALSE(feed("card-a", "t3", "FR", kT0 + 2).alert);
  EXPECT_FALSE(feed("card-a", "t4", "FR", kT0 + 3).alert);
}

TEST_F(PartitionDetectorTest, ThirdCountryAtExactlyWindowEdgeAlerts) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 10);
  const auto result = feed("card-a", "t3", "IT", kT0 + kW);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, kT0);
}

TEST_F(PartitionDetectorTest, ThirdCountryOneMillisecondPastWindowDoesNotAlert) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 10);
  EXPECT_FALSE(feed("card-a", "t3", "IT", kT0 + kW + 1).alert);
}

TEST_F(PartitionDetectorTest, WindowMayEndAfterTheTriggerWhenEventsArriveOutOfOrder) {
  // t3 arrives last but is the earliest: S(s) for s = its time reaches forward to the others.
  feed("card-a", "t1", "FR", kT0 + 50'000);
  feed("card-a", "t2", "IT", kT0 + 100'000);
  const auto result = feed("card-a", "t3", "DE", kT0);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, kT0);
  EXPECT_THAT(result.alert->tx_ids, ElementsAre("t3", "t1", "t2"));
  EXPECT_EQ(result.alert->trigger_tx_id, "t3");
}

TEST_F(PartitionDetectorTest, SmallestQualifyingStartIsChosen) {
  // Windows starting at kT0 and at kT0 + 1000 both qualify once t4 lands; s* is the smaller.
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1000);
  feed("card-a", "t3", "FR", kT0 + 2000);
  const auto result = feed("card-a", "t4", "IT", kT0 + 3000);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, kT0);
  EXPECT_THAT(result.alert->tx_ids, ElementsAre("t1", "t2", "t3", "t4"));
}

TEST_F(PartitionDetectorTest, CandidateStartsAreOnlyTimesWithinWindowBeforeTrigger) {
  // An old event more than W before t cannot be s, even if it would complete a window.
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + kW + 50);
  const auto result = feed("card-a", "t3", "IT", kT0 + kW + 100);
  EXPECT_FALSE(result.alert);
}

TEST_F(PartitionDetectorTest, EqualTimesKeepTheirOrderOfAcceptanceInTxIds) {
  feed("card-a", "b", "DE", kT0);
  feed("card-a", "a", "FR", kT0);
  const auto result = feed("card-a", "c", "IT", kT0);
  ASSERT_TRUE(result.alert);
  EXPECT_THAT(result.alert->tx_ids, ElementsAre("b", "a", "c"));
}

TEST_F(PartitionDetectorTest, EscalatesToFourthAndFifthCountry) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1000);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2000).alert);

  const auto fourth = feed("card-a", "t4", "ES", kT0 + 3000);
  ASSERT_TRUE(fourth.alert);
  EXPECT_EQ(fourth.alert->incident.revision, 2u);
  EXPECT_EQ(fourth.alert->incident.start, kT0);
  EXPECT_THAT(fourth.alert->incident.countries, ElementsAre(C("DE"), C("ES"), C("FR"), C("IT")));

  EXPECT_FALSE(feed("card-a", "t5", "FR", kT0 + 4000).alert);  // nothing new: no alert

  const auto fifth = feed("card-a", "t6", "AT", kT0 + 5000);
  ASSERT_TRUE(fifth.alert);
  EXPECT_EQ(fifth.alert->incident.revision, 3u);
  EXPECT_THAT(fifth.alert->incident.countries,
              ElementsAre(C("AT"), C("DE"), C("ES"), C("FR"), C("IT")));
  EXPECT_EQ(counts_.alerts, 3u);
  EXPECT_EQ(counts_.incidents, 1u);
}

TEST_F(PartitionDetectorTest, EscalationReportsTheUnionButOnlyTheNewWindowsTxIds) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2).alert);
  // Past t1's window: the smallest qualifying s is now t2's time, S(s*) = {t2, t3, t4}.
  const auto result = feed("card-a", "t4", "ES", kT0 + kW + 1);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, kT0);
  EXPECT_EQ(result.alert->incident.end, kT0 + 1 + kW);
  EXPECT_EQ(result.alert->incident.revision, 2u);
  EXPECT_THAT(result.alert->incident.countries, ElementsAre(C("DE"), C("ES"), C("FR"), C("IT")));
  EXPECT_THAT(result.alert->tx_ids, ElementsAre("t2", "t3", "t4"));
}

TEST_F(PartitionDetectorTest, QualifyingWindowWithinIncidentEndExtendsItSilently) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2).alert);
  // s* = kT0 + 1 <= end: same incident, end moves to s* + W, no new country, no alert.
  EXPECT_FALSE(feed("card-a", "t4", "DE", kT0 + kW + 1).alert);
  EXPECT_EQ(stateOf("card-a")->incident->end, kT0 + 1 + kW);
  EXPECT_EQ(stateOf("card-a")->incident->revision, 1u);
}

TEST_F(PartitionDetectorTest, QualifyingWindowAfterIncidentEndOpensFreshIncident) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2).alert);  // incident [kT0, kT0 + W]
  const EventTime later = kT0 + kW + 10;
  EXPECT_FALSE(feed("card-a", "u1", "DE", later).alert);
  EXPECT_FALSE(feed("card-a", "u2", "FR", later + 1).alert);
  const auto result = feed("card-a", "u3", "IT", later + 2);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, later);
  EXPECT_EQ(result.alert->incident.end, later + kW);
  EXPECT_EQ(result.alert->incident.revision, 1u);
  EXPECT_EQ(counts_.incidents, 2u);
  EXPECT_NE(AlertKey::of(*result.alert).alert_id, alertId(hasher_.hash("card-a"), kT0));
}

TEST_F(PartitionDetectorTest, RecordExactlyGraceBehindStreamTimeIsAccepted) {
  feed("card-a", "t1", "DE", kT0);
  EXPECT_EQ(feed("card-b", "t2", "DE", kT0 - kG).outcome, Outcome::kAccepted);
}

TEST_F(PartitionDetectorTest, RecordOneMillisecondBeyondGraceIsLateDropped) {
  feed("card-a", "t1", "DE", kT0);
  EXPECT_EQ(feed("card-b", "t2", "DE", kT0 - kG - 1).outcome, Outcome::kLateDropped);
  EXPECT_EQ(stateOf("card-b"), nullptr);
  EXPECT_EQ(counts_.late_dropped, 1u);
}

TEST_F(PartitionDetectorTest, LateRecordsDoNotMoveStreamTimeButAcceptedOnesDo) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "DE", kT0 - 1000);
  EXPECT_EQ(detector_->streamTime(), kT0);
  feed("card-a", "t3", "DE", kT0 + 5);
  EXPECT_EQ(detector_->streamTime(), kT0 + 5);
}

TEST_F(PartitionDetectorTest, LateCheckComesBeforeDuplicateCheck) {
  feed("card-a", "t1", "DE", kT0 - kG - 1);
  feed("card-a", "t2", "DE", kT0);
  EXPECT_EQ(feed("card-a", "t1", "DE", kT0 - kG - 1).outcome, Outcome::kLateDropped);
}

TEST_F(PartitionDetectorTest, SameTxIdOnSameCardIsDuplicate) {
  feed("card-a", "t1", "DE", kT0);
  const auto result = feed("card-a", "t1", "FR", kT0 + 1);
  EXPECT_EQ(result.outcome, Outcome::kDuplicate);
  EXPECT_EQ(stateOf("card-a")->events.size(), 1u);
  EXPECT_EQ(detector_->streamTime(), kT0);  // a duplicate does not move stream time
}

TEST_F(PartitionDetectorTest, SameTxIdOnAnotherCardIsNotDuplicate) {
  feed("card-a", "t1", "DE", kT0);
  EXPECT_EQ(feed("card-b", "t1", "DE", kT0).outcome, Outcome::kAccepted);
}

TEST_F(PartitionDetectorTest, TxIdOfAnEventNoLongerLiveIsNotDuplicate) {
  feed("card-a", "t1", "DE", kT0);
  // Stream time moves so that t1 (at kT0) falls just behind ST - G - W.
  feed("card-b", "x", "DE", kT0 + kG + kW + 1);
  EXPECT_EQ(feed("card-a", "t1", "DE", kT0 + kW + 1).outcome, Outcome::kAccepted);
}

TEST_F(PartitionDetectorTest, TxIdOfEventExactlyAtLiveHorizonIsStillDuplicate) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-b", "x", "DE", kT0 + kG + kW);
  EXPECT_EQ(feed("card-a", "t1", "DE", kT0 + kW).outcome, Outcome::kDuplicate);
}

TEST_F(PartitionDetectorTest, DuplicateIsJudgedAgainstStreamTimeBeforeTheRecord) {
  // The record itself would move ST so far that t1 dies, but liveness uses ST before it.
  feed("card-a", "t1", "DE", kT0);
  EXPECT_EQ(feed("card-a", "t1", "DE", kT0 + kG + kW + 100).outcome, Outcome::kDuplicate);
}

TEST_F(PartitionDetectorTest, OverflowEvictsEarliestEventBeyondMaxEvents) {
  options_.max_events = 3;
  reset();
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "DE", kT0 + 1);
  feed("card-a", "t3", "DE", kT0 + 2);
  const auto result = feed("card-a", "t4", "FR", kT0 + 3);
  EXPECT_EQ(result.overflow_evicted, 1u);
  std::vector<std::string> held;
  for (const auto& e : stateOf("card-a")->events) held.emplace_back(e.tx_id.view());
  EXPECT_THAT(held, ElementsAre("t2", "t3", "t4"));
  EXPECT_EQ(counts_.overflow_evicted, 1u);
  // The evicted t1 can come back: it is no longer held, so it is not a duplicate.
  EXPECT_EQ(feed("card-a", "t1", "DE", kT0 + 4).outcome, Outcome::kAccepted);
}

TEST_F(PartitionDetectorTest, OverflowRunsBeforeDetection) {
  options_.max_events = 3;
  reset();
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  feed("card-a", "t3", "FR", kT0 + 2);
  // Four events with DE, FR, IT would alert, but DE (the earliest) is evicted first.
  const auto result = feed("card-a", "t4", "IT", kT0 + 3);
  EXPECT_EQ(result.overflow_evicted, 1u);
  EXPECT_FALSE(result.alert);
}

TEST_F(PartitionDetectorTest, OverflowMayEvictTheTriggerItself) {
  // Reading pinned: an accepted record earlier than every held event is the earliest, so the
  // cap evicts it at once. It still counts as accepted and still triggers detection at its t.
  options_.max_events = 3;
  reset();
  feed("card-a", "t1", "DE", kT0 + 10);
  feed("card-a", "t2", "FR", kT0 + 11);
  feed("card-a", "t3", "IT", kT0 + 12);  // alerts: incident 1
  const auto result = feed("card-a", "t0", "ES", kT0);
  EXPECT_EQ(result.outcome, Outcome::kAccepted);
  EXPECT_EQ(result.overflow_evicted, 1u);
  std::vector<std::string> held;
  for (const auto& e : stateOf("card-a")->events) held.emplace_back(e.tx_id.view());
  EXPECT_THAT(held, ElementsAre("t1", "t2", "t3"));
  EXPECT_FALSE(result.alert);  // ES never joined a window
}

TEST_F(PartitionDetectorTest, OnlyLiveEventsCountTowardsMaxEvents) {
  options_.threshold = 2;
  options_.max_events = 2;
  reset();
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "DE", kT0 + 1);
  // t1 and t2 are dead once ST passes them by more than G + W.
  const auto result = feed("card-a", "t3", "DE", kT0 + kG + kW + 2);
  EXPECT_EQ(result.overflow_evicted, 0u);
}

TEST_F(PartitionDetectorTest, ThresholdOneAlertsOnEveryFreshIncident) {
  options_.threshold = 1;
  options_.max_events = 1;
  reset();
  const auto first = feed("card-a", "t1", "DE", kT0);
  ASSERT_TRUE(first.alert);
  EXPECT_THAT(first.alert->incident.countries, ElementsAre(C("DE")));
  EXPECT_FALSE(feed("card-a", "t2", "DE", kT0 + 1).alert);
  const auto escalation = feed("card-a", "t3", "FR", kT0 + 2);
  ASSERT_TRUE(escalation.alert);
  EXPECT_EQ(escalation.alert->incident.revision, 2u);
}

TEST_F(PartitionDetectorTest, CardNeverSeenAgainIsDroppedOncePastTheHorizon) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2).alert);  // incident ends at kT0 + W
  EXPECT_EQ(store_->cardCount(), 1u);
  // Another card moves stream time; card-a's incident end is its last relevant time.
  feed("card-b", "x1", "DE", kT0 + kW + kG + kW);
  EXPECT_NE(stateOf("card-a"), nullptr);  // end == ST - G - W: still held
  feed("card-b", "x2", "DE", kT0 + kW + kG + kW + 1);
  EXPECT_EQ(stateOf("card-a"), nullptr);
  EXPECT_EQ(store_->cardCount(), 1u);
}

TEST_F(PartitionDetectorTest, IncidentPastHorizonGivesWayToAFreshOne) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  ASSERT_TRUE(feed("card-a", "t3", "IT", kT0 + 2).alert);
  const EventTime later = kT0 + 2 * kW + kG + 10;
  feed("card-a", "u1", "DE", later);
  feed("card-a", "u2", "FR", later + 1);
  const auto result = feed("card-a", "u3", "IT", later + 2);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, later);
  EXPECT_EQ(result.alert->incident.revision, 1u);
}

TEST_F(PartitionDetectorTest, ResumedDetectorDecidesLikeTheOriginal) {
  feed("card-a", "t1", "DE", kT0);
  feed("card-a", "t2", "FR", kT0 + 1);
  // A new detector over the same store and stream time, as after a restart.
  PartitionDetector resumed(options_, *store_, detector_->streamTime());
  const Transaction late{"t0", "card-b", C("DE"), kT0 - kG - 1};
  EXPECT_EQ(resumed.process(hasher_.hash("card-b"), late).outcome, Outcome::kLateDropped);
  const Transaction third{"t3", "card-a", C("IT"), kT0 + 2};
  const auto result = resumed.process(hasher_.hash("card-a"), third);
  ASSERT_TRUE(result.alert);
  EXPECT_EQ(result.alert->incident.start, kT0);
}

TEST_F(PartitionDetectorTest, ResumedDetectorStillExpiresRestoredCards) {
  feed("card-a", "t1", "DE", kT0);
  PartitionDetector resumed(options_, *store_, detector_->streamTime());
  const Transaction far{"x", "card-b", C("DE"), kT0 + kG + kW + 1};
  (void)resumed.process(hasher_.hash("card-b"), far);
  EXPECT_EQ(stateOf("card-a"), nullptr);
}

// A stream time from outside 0..kMaxEventTime breaks an invariant (checkpoints are bounded when
// decoded), but the arithmetic on it must not overflow: ST(p) - G and ST(p) - G - W saturate.
// (With ST(p) = INT64_MIN, a wrapped ST(p) - G lies far in the future and late-drops
// everything.)
TEST_F(PartitionDetectorTest, AStreamTimeFarBelowTheRangeNeitherOverflowsNorDropsRecords) {
  for (const EventTime resumed_at :
       {std::numeric_limits<EventTime>::min(), std::numeric_limits<EventTime>::min() + kG}) {
    reset();
    PartitionDetector resumed(options_, *store_, resumed_at);
    const Transaction tx{"t1", "card-a", C("DE"), kT0};
    EXPECT_EQ(resumed.process(hasher_.hash("card-a"), tx).outcome, Outcome::kAccepted)
        << "resumed at " << resumed_at;
    EXPECT_EQ(resumed.streamTime(), kT0);
  }
}

// The other end: a stream time past every event time late-drops what is behind it, without
// overflowing either.
TEST_F(PartitionDetectorTest, AStreamTimeFarAboveTheRangeLateDropsWithoutOverflowing) {
  PartitionDetector resumed(options_, *store_, std::numeric_limits<EventTime>::max());
  const Transaction tx{"t1", "card-a", C("DE"), kMaxEventTime};
  EXPECT_EQ(resumed.process(hasher_.hash("card-a"), tx).outcome, Outcome::kLateDropped);
  EXPECT_EQ(resumed.streamTime(), std::numeric_limits<EventTime>::max());
}

TEST(OutcomeCounts, SummaryListsOnlyReasonsSeen) {
  OutcomeCounts counts;
  counts.countRejected(RejectReason::kInvalidJson);
  counts.countRejected(RejectReason::kInvalidJson);
  counts.countRejected(RejectReason::kInvalidField);
  PartitionDetector::Result accepted;
  counts.count(accepted);
  EXPECT_EQ(counts.summaryJson(),
            R"({"records":4,"accepted":1,"late_dropped":0,"duplicate":0,"overflow_evicted":0,)"
            R"("alerts":0,"incidents":0,"rejected":{"invalid_json":2,"invalid_field":1}})");
}

}  // namespace
}  // namespace fraud::detectors
