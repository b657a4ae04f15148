#include "loadgen/pacing.h"

#include <algorithm>
#include <cmath>

namespace fraud::loadgen {

uint64_t Pacer::dueBy(std::chrono::nanoseconds elapsed) const {
  if (elapsed.count() < 0) return 0;
  const double seconds = std::chrono::duration<double>(elapsed).count();
  return static_cast<uint64_t>(seconds * rate_) + 1;
}

std::chrono::nanoseconds Pacer::dueAt(uint64_t index) const {
  return std::chrono::nanoseconds(
      static_cast<int64_t>(std::ceil(static_cast<double>(index) * 1e9 / rate_)));
}

void RateHistory::add(std::chrono::nanoseconds elapsed, uint64_t count) {
  const auto second = static_cast<size_t>(
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(elapsed).count()));
  if (per_second_.size() <= second) per_second_.resize(second + 1, 0);
  per_second_[second] += count;
}

std::optional<double> RateHistory::maxDeviation(double target, size_t window,
                                                size_t complete) const {
  complete = std::min(complete, per_second_.size());
  if (window == 0 || complete < window || target <= 0) return std::nullopt;
  double worst = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < complete; ++i) {
    sum += per_second_[i];
    if (i >= window) sum -= per_second_[i - window];
    if (i + 1 >= window) {
      const double rate = static_cast<double>(sum) / static_cast<double>(window);
      worst = std::max(worst, std::abs(rate - target) / target);
    }
  }
  return worst;
}

}  // namespace fraud::loadgen
