// The audit log of card lookups: every lookup writes one line with its card_ref and outcome,
// never the card; and when it falls behind (issue #25), an audit sink that blocks (a full stderr
// pipe) never holds a lookup answered on the I/O thread, what overflows is counted in
// fraud_audit_dropped_total, and the lines that are written keep their format.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/router.h"
#include "tests/unit/api/gated_sink.h"
#include "tests/unit/api/router_fixture.h"

namespace fraud::api {
namespace {

using std::chrono::seconds;

using fraud::testing::GatedSink;

TEST_F(RouterTest, AuditLogsEveryLookupWithRefAndOutcomeNeverTheCard) {
  options_.peer_url_template = "http://{member}:8080";
  const std::string ref = view_.cardRef(kCard).hex();
  EXPECT_EQ(lookupCard(kCard).status, 404);
  view_.putCard(kCard, sampleState());
  EXPECT_EQ(lookupCard(kCard).status, 200);
  EXPECT_EQ(get("/v1/cards/" + ref).status, 200);
  view_.revokePartition(partitionOfCard());
  view_.setOwner(partitionOfCard(), "peer-1");
  EXPECT_EQ(lookupCard(kCard).status, 307);
  EXPECT_EQ(lookup(R"({"card":"41 1"})").status, 400);

  const std::string log = auditLog();
  EXPECT_EQ(log.find(kCard), std::string::npos) << log;
  EXPECT_EQ(log.find("41 1"), std::string::npos) << log;
  const std::string prefix =
      "card_lookup client=127.0.0.1:50000 route=/v1/cards/lookup card_ref=" + ref +
      " partition=" + std::to_string(partitionOfCard());
  EXPECT_NE(log.find(prefix + " outcome=not_found status=404"), std::string::npos) << log;
  EXPECT_NE(log.find(prefix + " outcome=found status=200"), std::string::npos) << log;
  EXPECT_NE(log.find(prefix + " outcome=redirected status=307"), std::string::npos) << log;
  EXPECT_NE(log.find("route=/v1/cards/{card_ref} card_ref=" + ref), std::string::npos) << log;
  EXPECT_NE(log.find("card_ref=- partition=- outcome=invalid status=400"), std::string::npos);
}

class RouterAuditTest : public RouterTest {
 protected:
  RouterAuditTest() : gate_(std::make_shared<GatedSink>()) {
    spdlog::drop("audit");
    auto logger = std::make_shared<spdlog::logger>("audit", gate_);
    logger->set_pattern("%v");
    spdlog::register_logger(logger);
  }
  ~RouterAuditTest() override { gate_->open(); }  // never leave a writer waiting on it

  static HttpRequest lookupRequest(std::string_view card) {
    return HttpRequest{"POST",
                       "/v1/cards/lookup",
                       {{"Content-Type", "application/json"}},
                       nlohmann::json{{"card", card}}.dump(),
                       "127.0.0.1:50000"};
  }

  // The value of the series `name` (with its labels, as the text format writes them).
  std::optional<double> metric(const std::string& name) {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    std::istringstream lines(out.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
    }
    return std::nullopt;
  }

  std::shared_ptr<GatedSink> gate_;
};

TEST_F(RouterAuditTest, ABlockedAuditLogHoldsNoInlineLookupAndItsOverflowIsCounted) {
  // More lookups than the audit queue holds.
  options_.audit_queue_lines = 64;
  constexpr int kLookups = 200;
  view_.putCard(kCard, sampleState());
  const Router& answering = router();
  EXPECT_EQ(metric("fraud_audit_dropped_total"), 0) << "exposed at zero from the start";

  auto answered = std::async(std::launch::async, [&] {
    int found = 0;
    for (int i = 0; i < kLookups; ++i) {
      const std::optional<HttpResponse> response = answering.tryHandleInline(lookupRequest(kCard));
      if (response && response->status == 200) ++found;
    }
    return found;
  });
  EXPECT_TRUE(gate_->waitEntered(std::chrono::milliseconds(10'000))) << "no audit line written";
  // The sink stays closed: the lookups must finish anyway, in far less than this.
  const bool finished = answered.wait_for(seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(finished) << "the inline lookups waited for the blocked audit log";
  gate_->open();
  EXPECT_EQ(answered.get(), kLookups);
  const std::optional<double> dropped = metric("fraud_audit_dropped_total");
  ASSERT_TRUE(dropped.has_value()) << "no fraud_audit_dropped_total";
  // The queue held 64 lines, the one at the sink among them; every other line was dropped.
  EXPECT_EQ(*dropped, kLookups - 64);

  router_.reset();  // writes what was queued, then stops
  const std::vector<std::string> lines = gate_->lines();
  EXPECT_EQ(static_cast<double>(lines.size()) + *dropped, kLookups)
      << "every line is either written or counted as dropped";
  const std::string expected =
      "card_lookup client=127.0.0.1:50000 route=/v1/cards/lookup card_ref=" +
      view_.cardRef(kCard).hex() + " partition=" + std::to_string(partitionOfCard()) +
      " outcome=found status=200";
  for (const std::string& line : lines) {
    ASSERT_EQ(line, expected + "\n");
  }
}

}  // namespace
}  // namespace fraud::api
