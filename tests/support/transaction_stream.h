#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fraud::testing {

struct TestRecord {
  std::string key;    // the card, as producers key records
  std::string value;  // the JSON transaction (or a malformed record)
};

// A deterministic stream for integration tests: few cards (so windows fill up), few countries,
// out-of-order event times within the grace, some records beyond it, exact duplicates and
// malformed records.
struct StreamOptions {
  uint64_t seed = 1;
  int records = 20'000;
  int cards = 500;
  int64_t start_ms = 1'700'000'000'000;
  int64_t step_ms = 20;          // event time advances this much per record
  double late_fraction = 0.005;  // stamped beyond the default grace
  double duplicate_fraction = 0.01;
  double malformed_fraction = 0.005;
};

[[nodiscard]] std::vector<TestRecord> generateStream(const StreamOptions& options);

}  // namespace fraud::testing
