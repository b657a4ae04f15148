#include "detectors/alert.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::detectors {
namespace {

TEST(AlertJson, CarriesExactlyTheSpecFieldsInOrder) {
  const CardHasher hasher("test-key");
  Alert alert;
  alert.card_ref = hasher.hash("4111111111111111");
  alert.incident = Incident{1700000000000,
                            1700000600000,
                            2,
                            {Country::of('D', 'E'), Country::of('F', 'R'), Country::of('I', 'T')}};
  alert.tx_ids = {"a", "b\"q", "c\\d"};
  alert.trigger_tx_id = "c\\d";
  alert.trigger_event_time = 1700000000042;
  const AlertKey key = AlertKey::of(alert);
  EXPECT_EQ(key.alert_id, "f54a1336b61e275d3431e5d65e8aadaf");
  EXPECT_EQ(key.idempotency_key, "f54a1336b61e275d3431e5d65e8aadaf:2");

  std::string json;
  appendAlertJson(json, alert, key, DetectorOptions{}, 1234);
  EXPECT_EQ(json,
            R"({"alert_id":"f54a1336b61e275d3431e5d65e8aadaf",)"
            R"("idempotency_key":"f54a1336b61e275d3431e5d65e8aadaf:2",)"
            R"("card_ref":"b9a296a413d12fc678c4027233b1926dccb9bc80f18f07061a9f429d8d8a09e7",)"
            R"("rule":"distinct_countries","revision":2,"threshold":3,"window_ms":600000,)"
            R"("grace_ms":120000,"window_start":1700000000000,"window_end":1700000600000,)"
            R"("countries":["DE","FR","IT"],"tx_ids":["a","b\"q","c\\d"],)"
            R"("trigger_tx_id":"c\\d","trigger_event_time":1700000000042,"detected_at":1234})");
}

TEST(AlertJson, EscapesControlCharactersAndKeepsUtf8) {
  std::string out;
  appendJsonString(out, std::string("a\x01\xc3\xa9\x7f", 5));
  EXPECT_EQ(out, "\"a\\u0001\xc3\xa9\x7f\"");
}

}  // namespace
}  // namespace fraud::detectors
