#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "loadgen/kafka_clients.h"

namespace fraud::loadgen {

// The progress line of a production run on stderr, at most once a second: records written (files
// only), or sent, acknowledged, failed, queued and the sampled lag. Producing thread only.
class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressLine(bool enabled, Clock::time_point start)
      : enabled_(enabled), start_(start), last_(start) {}

  // `producer` null: a files-only run.
  void maybePrint(Clock::time_point now, uint64_t sent, const Deliveries& deliveries,
                  rd_kafka_t* producer, std::optional<int64_t> lag);

 private:
  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_;
  uint64_t last_sent_ = 0;
};

}  // namespace fraud::loadgen
