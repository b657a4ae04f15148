#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace fraud::loadgen {

// The production schedule: record i is due at i / rate seconds after the start. The schedule is
// absolute, so a producer that fell behind (a full queue, a descheduled thread) catches up at
// once, and the rate over any span longer than such a hiccup stays on target.
class Pacer {
 public:
  explicit Pacer(double records_per_second) : rate_(records_per_second) {}

  // How many records are due `elapsed` after the start: record 0 is due at once.
  [[nodiscard]] uint64_t dueBy(std::chrono::nanoseconds elapsed) const;
  // When record `index` is due, after the start.
  [[nodiscard]] std::chrono::nanoseconds dueAt(uint64_t index) const;

 private:
  double rate_;
};

// Records sent in each whole second after the start.
class RateHistory {
 public:
  void add(std::chrono::nanoseconds elapsed, uint64_t count = 1);
  [[nodiscard]] const std::vector<uint64_t>& perSecond() const { return per_second_; }

  // The largest relative deviation from `target` of the mean rate over `window` consecutive
  // seconds, over the first `complete` seconds (those that ran in full); nothing when fewer.
  [[nodiscard]] std::optional<double> maxDeviation(double target, size_t window,
                                                   size_t complete) const;

 private:
  std::vector<uint64_t> per_second_;
};

}  // namespace fraud::loadgen
