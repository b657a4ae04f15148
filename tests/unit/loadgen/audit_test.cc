// The verify comparison: alerts by idempotency key, every field but detected_at; the DLQ by
// source offset and reason; the truth file's recall.
#include "loadgen/audit.h"

#include <gtest/gtest.h>

#include <string>

#include "detectors/alert.h"
#include "detectors/card_ref.h"

namespace fraud::loadgen {
namespace {

using detectors::Alert;
using detectors::AlertKey;
using detectors::Country;
using detectors::DetectorOptions;
using detectors::RejectReason;

const detectors::CardHasher& hasher() {
  static const detectors::CardHasher h("audit-test-key");
  return h;
}

Alert makeAlert(const std::string& card, int64_t start, uint32_t revision) {
  Alert alert;
  alert.card_ref = hasher().hash(card);
  alert.incident.start = start;
  alert.incident.end = start + 600'000;
  alert.incident.revision = revision;
  alert.incident.countries = {Country::of('D', 'E'), Country::of('F', 'R'), Country::of('I', 'T')};
  alert.tx_ids = {"a", "b", "c"};
  alert.trigger_tx_id = "c";
  alert.trigger_event_time = start + 10;
  return alert;
}

ObservedAlert observed(const Alert& alert, int64_t detected_at, int64_t offset = 0) {
  std::string value;
  const auto key = AlertKey::of(alert);
  detectors::appendAlertJson(value, alert, key, DetectorOptions{}, detected_at);
  return ObservedAlert{0, offset, alert.card_ref.hex(), key.idempotency_key, value};
}

TEST(Audit, IdenticalAlertsWithOtherDetectedAtPass) {
  Audit audit;
  const Alert a = makeAlert("card-1", 1000, 1);
  audit.expectAlert(a, DetectorOptions{});
  audit.observeAlert(observed(a, 1'700'000'000'000));
  EXPECT_TRUE(audit.passed());
  const auto report = audit.report(10);
  EXPECT_EQ(report["verdict"], "pass");
  EXPECT_EQ(report["alerts"]["expected"], 1);
}

TEST(Audit, KeyOrderAndSpacingDoNotMatter) {
  Audit audit;
  const Alert a = makeAlert("card-1", 1000, 1);
  audit.expectAlert(a, DetectorOptions{});
  auto record = observed(a, 5);
  auto value = nlohmann::json::parse(record.value);
  record.value = value.dump(4);  // reordered (sorted) keys, other spacing
  audit.observeAlert(record);
  EXPECT_TRUE(audit.passed()) << audit.report(10).dump(2);
}

TEST(Audit, ReportsMissingUnexpectedAndDuplicatedAlerts) {
  Audit audit;
  const Alert kept = makeAlert("card-1", 1000, 1);
  const Alert lost = makeAlert("card-2", 1000, 1);
  const Alert extra = makeAlert("card-3", 1000, 1);
  audit.expectAlert(kept, DetectorOptions{});
  audit.expectAlert(lost, DetectorOptions{});
  audit.observeAlert(observed(kept, 1, 0));
  audit.observeAlert(observed(kept, 2, 1));
  audit.observeAlert(observed(extra, 1, 2));
  EXPECT_FALSE(audit.passed());
  const auto report = audit.report(10);
  EXPECT_EQ(report["verdict"], "fail");
  EXPECT_EQ(report["alerts"]["missing"]["keys"][0], AlertKey::of(lost).idempotency_key);
  EXPECT_EQ(report["alerts"]["unexpected"]["keys"][0], AlertKey::of(extra).idempotency_key);
  EXPECT_EQ(report["alerts"]["duplicates"]["items"][0]["key"], AlertKey::of(kept).idempotency_key);
  EXPECT_EQ(report["alerts"]["duplicates"]["items"][0]["times"], 2);
}

// verify --alert-delivery immediate: a key may come again, but only as an exact repeat.
TEST(Audit, ImmediateDeliveryAcceptsAndCountsExactRepeatsOnly) {
  const Alert a = makeAlert("card-1", 1000, 1);
  Audit exact;
  exact.allowExactAlertRepeats(true);
  exact.expectAlert(a, DetectorOptions{});
  exact.observeAlert(observed(a, 1, 0));
  exact.observeAlert(observed(a, 2, 1));  // another detected_at: still exact
  exact.observeAlert(observed(a, 3, 2));
  EXPECT_TRUE(exact.passed()) << exact.report(10).dump(2);
  const auto report = exact.report(10);
  EXPECT_EQ(report["alerts"]["repeats"]["keys"], 1);
  EXPECT_EQ(report["alerts"]["repeats"]["extra_records"], 2);

  Alert changed = a;
  changed.trigger_event_time += 1;
  Audit differing;
  differing.allowExactAlertRepeats(true);
  differing.expectAlert(a, DetectorOptions{});
  differing.observeAlert(observed(a, 1, 0));
  differing.observeAlert(observed(changed, 2, 1));  // same key, other content
  EXPECT_FALSE(differing.passed());
  EXPECT_EQ(differing.report(10)["alerts"]["differing"]["count"], 1);

  Audit transactional;  // the default: any repeat fails
  transactional.expectAlert(a, DetectorOptions{});
  transactional.observeAlert(observed(a, 1, 0));
  transactional.observeAlert(observed(a, 1, 1));
  EXPECT_FALSE(transactional.passed());
  EXPECT_FALSE(transactional.report(10)["alerts"].contains("repeats"));
}

TEST(Audit, NamesTheFirstDifferingField) {
  Audit audit;
  const Alert expected = makeAlert("card-1", 1000, 1);
  Alert actual = expected;
  actual.trigger_event_time += 1;
  actual.tx_ids.push_back("d");
  audit.expectAlert(expected, DetectorOptions{});
  audit.observeAlert(observed(actual, 1));
  const auto report = audit.report(10);
  ASSERT_EQ(report["alerts"]["differing"]["count"], 1);
  const auto& item = report["alerts"]["differing"]["items"][0];
  EXPECT_EQ(item["field"], "trigger_event_time");  // before tx_ids in name order
  EXPECT_EQ(item["expected"], 1010);
  EXPECT_EQ(item["actual"], 1011);
}

TEST(Audit, AHeaderOrKeyThatDisagreesWithTheAlertIsMalformed) {
  Audit audit;
  const Alert a = makeAlert("card-1", 1000, 1);
  audit.expectAlert(a, DetectorOptions{});
  auto record = observed(a, 1);
  record.idempotency_header.reset();
  record.record_key = "not-the-card-ref";
  audit.observeAlert(record);
  audit.observeAlert(ObservedAlert{0, 9, "k", "h", "not json"});
  const auto report = audit.report(10);
  EXPECT_EQ(report["alerts"]["malformed"]["count"], 3);
  EXPECT_EQ(report["alerts"]["missing"]["count"], 0);
  EXPECT_FALSE(audit.passed());
}

ObservedRejection rejection(int32_t partition, int64_t offset, const char* reason,
                            const char* topic = "transactions") {
  return ObservedRejection{0, 0, reason, topic, std::to_string(partition), std::to_string(offset)};
}

TEST(Audit, ComparesTheDeadLetterTopicBySourceOffsetAndReason) {
  Audit audit;
  audit.expectRejection(0, 10, RejectReason::kInvalidJson);
  audit.expectRejection(1, 20, RejectReason::kMissingField);
  audit.expectRejection(2, 30, RejectReason::kFutureEventTime);
  audit.observeRejection(rejection(0, 10, "invalid_json"), "transactions");
  audit.observeRejection(rejection(0, 10, "invalid_json"), "transactions");   // twice
  audit.observeRejection(rejection(1, 20, "invalid_field"), "transactions");  // wrong reason
  audit.observeRejection(rejection(3, 40, "invalid_json"), "transactions");   // unexpected
  audit.observeRejection(rejection(9, 99, "invalid_json", "elsewhere"), "transactions");
  audit.observeRejection(ObservedRejection{0, 7, "invalid_json", "transactions", "x", "1"},
                         "transactions");
  const auto report = audit.report(10);
  const auto& dlq = report["dlq"];
  EXPECT_EQ(dlq["missing"]["count"], 1);
  EXPECT_EQ(dlq["missing"]["items"][0]["partition"], 2);
  EXPECT_EQ(dlq["unexpected"]["count"], 1);
  EXPECT_EQ(dlq["differing"]["items"][0]["actual_reason"], "invalid_field");
  EXPECT_EQ(dlq["duplicates"]["count"], 1);
  EXPECT_EQ(dlq["other_source_topics"], 1);
  EXPECT_EQ(dlq["malformed"]["count"], 1);
  EXPECT_FALSE(audit.passed());
}

TEST(Audit, TruthScenarioIsRecalledOnlyByAnAlertOfItsCardCoveringItsTimes) {
  const Alert a = makeAlert("card-1", 1000, 1);  // window [1000, 601000]
  TruthScenario covered{1, a.card_ref.hex(), 0, {"DE", "FR", "IT"}, {900, 1200}, {"x", "y"}};
  TruthScenario outside{2, a.card_ref.hex(), 0, {"DE", "FR", "IT"}, {700'000}, {"z"}};
  TruthScenario other_card{3, hasher().hash("card-2").hex(), 0, {"DE"}, {1200}, {"w"}};
  Audit audit;
  audit.setTruth({covered, outside, other_card});
  audit.expectAlert(a, DetectorOptions{});
  audit.observeAlert(observed(a, 1));
  const auto report = audit.report(10);
  EXPECT_EQ(report["truth"]["scenarios"], 3);
  EXPECT_EQ(report["truth"]["recalled"], 1);
  EXPECT_EQ(report["truth"]["missed"], nlohmann::json::array({2, 3}));
  EXPECT_FALSE(audit.passed());
}

TEST(Audit, ListsAreCutAtTheLimitButCountsAreNot) {
  Audit audit;
  for (int i = 0; i < 5; ++i) {
    // Appended rather than `"c" + std::to_string(i)`: GCC 12 -O3 reports a false -Wrestrict
    // on that operator+ (GCC bug 105329).
    std::string card = "c";
    card += std::to_string(i);
    audit.expectAlert(makeAlert(card, 1, 1), {});
  }
  const auto report = audit.report(2);
  EXPECT_EQ(report["alerts"]["missing"]["count"], 5);
  EXPECT_EQ(report["alerts"]["missing"]["keys"].size(), 2u);
}

}  // namespace
}  // namespace fraud::loadgen
