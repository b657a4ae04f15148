#pragma once

#include <CLI/CLI.hpp>

#include "detectors/options.h"

namespace fraud::cli {

// The rule's flags, --window-ms, --grace-ms, --threshold and --max-events, with their defaults
// and bounds (DetectorOptions::validate() checks them), the same in every command that takes
// them: `fraud-detector run` and `replay`, `fraud-loadgen` and `fraud-loadgen verify`.
void addDetectorFlags(CLI::App& command, detectors::DetectorOptions& options);

}  // namespace fraud::cli
