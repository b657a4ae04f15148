// A clock that moves only when the test moves it (RocksDB test_util/mock_time_env.h), for the
// units that take a service::Clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "service/clock.h"

namespace fraud::service::testing {

class ManualClock final : public Clock {
 public:
  // Wall-clock milliseconds at the start.
  static constexpr int64_t kWallStartMs = 1'700'000'000'000;

  [[nodiscard]] TimePoint now() const override { return TimePoint(elapsed()); }
  [[nodiscard]] int64_t wallMs() const override {
    return kWallStartMs + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed()).count();
  }
  [[nodiscard]] double wallSeconds() const override {
    return static_cast<double>(kWallStartMs) / 1000.0 +
           std::chrono::duration<double>(elapsed()).count();
  }

  void advance(std::chrono::nanoseconds by) { elapsed_ns_.fetch_add(by.count()); }

 private:
  [[nodiscard]] std::chrono::nanoseconds elapsed() const {
    return std::chrono::nanoseconds(elapsed_ns_.load());
  }

  std::atomic<int64_t> elapsed_ns_{0};
};

}  // namespace fraud::service::testing
