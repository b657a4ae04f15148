#pragma once

#include <optional>
#include <string>

#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "detectors/outcome_counts.h"

namespace fraud::service {

struct ReplayOptions {
  std::string input = "-";   // a path, or "-" for standard input
  std::string output = "-";  // a path, or "-" for standard output
  detectors::DetectorOptions detector;
  bool progress = false;  // a progress line on stderr every second
};

struct ReplayResult {
  detectors::OutcomeCounts counts;
  std::optional<std::string> error;  // an I/O failure; counts then cover what was read
};

// `fraud-detector replay`: reads JSONL transactions in file order as one partition and writes
// the alerts in emission order (SPEC §6), with the same detector the live service runs.
[[nodiscard]] ReplayResult runReplay(const ReplayOptions& options,
                                     const detectors::CardHasher& hasher);

}  // namespace fraud::service
