#include "detectors/options.h"

namespace fraud::detectors {

std::vector<std::string> DetectorOptions::validate() const {
  std::vector<std::string> problems;
  if (window_ms < 1 || window_ms > kMaxEventTime) {
    problems.push_back("window_ms must be in 1.." + std::to_string(kMaxEventTime) + ", got " +
                       std::to_string(window_ms));
  }
  if (grace_ms < 0 || grace_ms > kMaxEventTime) {
    problems.push_back("grace_ms must be in 0.." + std::to_string(kMaxEventTime) + ", got " +
                       std::to_string(grace_ms));
  }
  if (threshold < 1) {
    problems.push_back("threshold must be at least 1, got " + std::to_string(threshold));
  }
  if (max_events < threshold || max_events > 1'000'000) {
    problems.push_back("max_events must be in threshold (" + std::to_string(threshold) +
                       ")..1000000, got " + std::to_string(max_events));
  }
  return problems;
}

}  // namespace fraud::detectors
