#pragma once

#include <chrono>
#include <cstdint>

namespace fraud::service {

// The time the ingest thread's units read (Envoy `envoy/common/time.h`'s TimeSource): the steady
// clock for intervals and deadlines, the wall clock for what is compared with record timestamps.
// The service passes real(); tests a manual clock (tests/support/manual_clock.h), so the stream
// loop's schedule (commit interval, held-input wait, stop deadline) runs without real time.
//
// Thread-safety: every implementation may be read from any thread.
class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic now.
  [[nodiscard]] virtual TimePoint now() const = 0;
  // Milliseconds since the Unix epoch, to a few milliseconds (cheap enough for every record).
  [[nodiscard]] virtual int64_t wallMs() const = 0;
  // Seconds since the Unix epoch, with fractions (gauges of "when").
  [[nodiscard]] virtual double wallSeconds() const = 0;

  // std::chrono::steady_clock and kafka::coarseWallClockMs() / wallClockSeconds().
  [[nodiscard]] static const Clock& real();
};

}  // namespace fraud::service
