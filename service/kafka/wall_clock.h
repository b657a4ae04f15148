#pragma once

#include <cstdint>

// The wall clock, read in one place for both programs. It lives in fraud::kafka because every
// wall-clock reading in the project is a Kafka record timestamp or is compared with one
// (CreateTime, epoch milliseconds: records produced, future_event_time, detected_at, lag) and
// this is the one library below both `service/` and `loadgen/`; `detectors/` stays clock-free
// (its callers pass the time in). Thread-safe.

namespace fraud::kafka {

// Milliseconds since the Unix epoch, to the millisecond.
[[nodiscard]] int64_t wallClockMs();

// The same to a few milliseconds (CLOCK_REALTIME_COARSE: no system call), for per-record use
// on the hot path.
[[nodiscard]] int64_t coarseWallClockMs();

// Seconds since the Unix epoch, with fractions (gauges of "when").
[[nodiscard]] double wallClockSeconds();

}  // namespace fraud::kafka
