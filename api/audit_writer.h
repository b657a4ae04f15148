#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "detectors/base/mutex.h"

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus
namespace spdlog {
class logger;
}

namespace fraud::api {

// Takes audit lines to their logger off the HTTP I/O threads (docs/api-internals.md). A line is
// handed over without waiting for the logger's sink and written, at level info and with the
// time it was handed over, by a thread of its own. The audit's sink may block (a full stderr
// pipe, a stalled disk): then lines queue, up to `max_queued_lines` handed over and not yet
// written, and each line beyond that is dropped and counted: fraud_audit_dropped_total (at 0
// from the start), and a warning on the service's log naming how many were dropped, at most
// once per `warn_every` (the writer thread writes it, so it never waits on an I/O thread
// either). A line is never lost without being counted.
//
// Thread-safety: write() and dropped() from any thread; write() never waits for the sink (it
// takes the queue's mutex, which the writer thread holds only to take or finish a line, never
// while writing one). flush() from any thread but the writer's. The destructor writes what is
// queued (waiting for the sink as long as it blocks), then stops the thread.
class AuditWriter {
 public:
  struct Options {
    // Lines handed over and not yet written, at most: 1..1'000'000. About 200 bytes each.
    size_t max_queued_lines = 10'000;
    // The drops warning, at most once per this (the first drop is warned about at once).
    std::chrono::milliseconds warn_every{10'000};
    // Where the warning goes; nullptr: spdlog's default logger (the service's log).
    std::shared_ptr<spdlog::logger> warnings;
  };

  // `logger` receives the lines; `registry` gets fraud_audit_dropped_total and must outlive
  // the writer.
  AuditWriter(std::shared_ptr<spdlog::logger> logger, prometheus::Registry& registry,
              Options options);
  ~AuditWriter();
  AuditWriter(const AuditWriter&) = delete;
  AuditWriter& operator=(const AuditWriter&) = delete;

  // Queues `line`; false when max_queued_lines are already waiting: the line is dropped and
  // counted.
  [[nodiscard]] bool write(std::string line) FRAUD_EXCLUDES(mu_);
  // Returns once every line queued before the call is written and the logger flushed.
  void flush() FRAUD_EXCLUDES(mu_);
  [[nodiscard]] uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Line {
    std::chrono::system_clock::time_point time;
    std::string text;
  };

  void run() FRAUD_EXCLUDES(mu_);
  // On the writer thread: the warning, when drops are unwarned and it is due (or `now_anyway`).
  // Otherwise the time it is due at (time_point::max(): nothing to warn).
  std::chrono::steady_clock::time_point warnIfDue(bool now_anyway = false) FRAUD_EXCLUDES(mu_);

  const std::shared_ptr<spdlog::logger> logger_;
  const Options options_;
  prometheus::Counter& dropped_total_;
  // Atomic: dropped() and warnIfDue() read it without the lock (write() adds to it under it).
  std::atomic<uint64_t> dropped_{0};

  base::Mutex mu_;
  std::condition_variable wake_;     // the writer thread: a line, a stop
  std::condition_variable written_;  // flush(): lines written
  std::deque<Line> queue_ FRAUD_GUARDED_BY(mu_);
  // Handed over and not yet written: the queue and the line at the sink.
  size_t outstanding_ FRAUD_GUARDED_BY(mu_) = 0;
  uint64_t accepted_ FRAUD_GUARDED_BY(mu_) = 0;  // lines ever queued
  uint64_t done_ FRAUD_GUARDED_BY(mu_) = 0;      // of those, written
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;

  // The writer thread's own: no lock.
  uint64_t warned_dropped_ = 0;
  std::chrono::steady_clock::time_point last_warning_{};
  bool warned_once_ = false;

  std::thread thread_;  // last: starts once everything above is built
};

}  // namespace fraud::api
