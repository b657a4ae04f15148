#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "detectors/options.h"

namespace fraud::cli {

// The rule's flags, --window-ms, --grace-ms, --threshold and --max-events, with their defaults
// and bounds (DetectorOptions::validate() checks them), the same in every command that takes
// them: `fraud-detector run` and `replay`, `fraud-loadgen` and `fraud-loadgen verify`.
void addDetectorFlags(CLI::App& command, detectors::DetectorOptions& options);

// A problem worded with these flags' names: DetectorOptions::validate() names the fields
// ("window_ms must be in ..."), a command line reports the flags ("--window-ms must be in ...").
[[nodiscard]] std::string withDetectorFlagNames(std::string problem);

// options.validate(), each problem through withDetectorFlagNames.
[[nodiscard]] std::vector<std::string> detectorProblems(const detectors::DetectorOptions& options);

}  // namespace fraud::cli
