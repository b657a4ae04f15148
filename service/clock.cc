#include "service/clock.h"

#include "service/kafka/wall_clock.h"

namespace fraud::service {
namespace {

class RealClock final : public Clock {
 public:
  [[nodiscard]] TimePoint now() const override { return std::chrono::steady_clock::now(); }
  [[nodiscard]] int64_t wallMs() const override { return kafka::coarseWallClockMs(); }
  [[nodiscard]] double wallSeconds() const override { return kafka::wallClockSeconds(); }
};

}  // namespace

const Clock& Clock::real() {
  static const RealClock clock;
  return clock;
}

}  // namespace fraud::service
