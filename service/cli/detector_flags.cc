#include "service/cli/detector_flags.h"

#include <array>

#include "service/cli/flag_names.h"

namespace fraud::cli {

void addDetectorFlags(CLI::App& command, detectors::DetectorOptions& options) {
  command.add_option("--window-ms", options.window_ms, "Window W in milliseconds (>= 1)")
      ->capture_default_str();
  command.add_option("--grace-ms", options.grace_ms, "Grace G in milliseconds (>= 0)")
      ->capture_default_str();
  command.add_option("--threshold", options.threshold, "Distinct countries N that alert (>= 1)")
      ->capture_default_str();
  command
      .add_option("--max-events", options.max_events,
                  "Live events M one card may hold (>= threshold)")
      ->capture_default_str();
}

std::string withDetectorFlagNames(std::string problem) {
  static constexpr std::array kNames = {
      FlagName{"window_ms", "--window-ms"}, FlagName{"grace_ms", "--grace-ms"},
      FlagName{"threshold", "--threshold"}, FlagName{"max_events", "--max-events"}};
  return withFlagNames(std::move(problem), kNames);
}

std::vector<std::string> detectorProblems(const detectors::DetectorOptions& options) {
  std::vector<std::string> problems = options.validate();
  for (auto& problem : problems) problem = withDetectorFlagNames(std::move(problem));
  return problems;
}

}  // namespace fraud::cli
