#pragma once

// What an instance's GET /v1/partitions says, for the multi-member integration tests: the
// partitions it holds active and the standby copies it keeps caught up. Empty when it does not
// answer (stopped, paused, or not up yet).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/http_probe.h"

namespace fraud::testing {

struct PartitionsView {
  std::set<int> active;       // partitions in phase "active"
  std::set<int> warm_copies;  // standby copies caught up at least once

  static PartitionsView of(uint16_t port) {
    PartitionsView view;
    const auto answer = httpGet("http://127.0.0.1:" + std::to_string(port) + "/v1/partitions");
    if (answer.status != 200) return view;
    const auto body = nlohmann::json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return view;
    for (const auto& p : body.value("partitions", nlohmann::json::array())) {
      if (p.value("phase", "") == "active") view.active.insert(p.value("partition", -1));
    }
    for (const auto& s : body.value("standbys", nlohmann::json::array())) {
      if (s.contains("seconds_since_caught_up") && s["seconds_since_caught_up"].is_number()) {
        view.warm_copies.insert(s.value("partition", -1));
      }
    }
    return view;
  }
};

}  // namespace fraud::testing
