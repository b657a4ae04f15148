#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "loadgen/latency_tracker.h"
#include "service/kafka/client.h"

namespace fraud::loadgen {

// Watches the alerts topic from its current end (read_committed) on a thread of its own and
// reports each alert's arrival to a LatencyTracker by idempotency key (the `idempotency-key`
// header, else the value's `idempotency_key` field).
class AlertWatcher {
 public:
  explicit AlertWatcher(LatencyTracker& tracker) : tracker_(tracker) {}
  ~AlertWatcher();
  AlertWatcher(const AlertWatcher&) = delete;
  AlertWatcher& operator=(const AlertWatcher&) = delete;

  // Positions a consumer at the end of every partition of `topic`, then starts the thread.
  // Returns once the positions are fixed, so no alert produced after this call is missed; an
  // error when the consumer cannot be made or positioned.
  [[nodiscard]] base::Status start(const kafka::KafkaProperties& properties,
                                   const std::string& topic);
  // Stops the thread; idempotent.
  void stop();

  [[nodiscard]] uint64_t consumeErrors() const { return consume_errors_.load(); }

 private:
  void run();

  LatencyTracker& tracker_;
  kafka::KafkaHandle consumer_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> consume_errors_{0};
};

}  // namespace fraud::loadgen
