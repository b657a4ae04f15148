#include "api/audit_writer.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace fraud::api {
namespace {

using Clock = std::chrono::steady_clock;

prometheus::Counter& droppedCounter(prometheus::Registry& registry) {
  return prometheus::BuildCounter()
      .Name("fraud_audit_dropped_total")
      .Help(
          "Card-lookup audit lines dropped because the audit log's sink fell behind (more lines "
          "waiting for it than the audit queue holds); each is also warned about on the log")
      .Register(registry)
      .Add({});
}

}  // namespace

AuditWriter::AuditWriter(std::shared_ptr<spdlog::logger> logger, prometheus::Registry& registry,
                         Options options)
    : logger_(std::move(logger)),
      options_(std::move(options)),
      dropped_total_(droppedCounter(registry)),
      thread_([this] { run(); }) {}

AuditWriter::~AuditWriter() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

bool AuditWriter::write(std::string line) {
  const auto now = std::chrono::system_clock::now();  // spdlog's clock: the line's time
  bool was_empty = false;
  {
    base::MutexLock lock(mu_);
    if (outstanding_ < options_.max_queued_lines) {
      was_empty = queue_.empty();
      queue_.push_back(Line{now, std::move(line)});
      ++outstanding_;
      ++accepted_;
    } else {
      // Counted under the lock, so a flush() that sees the queue empty sees the count too.
      dropped_.fetch_add(1, std::memory_order_relaxed);
      dropped_total_.Increment();
      return false;
    }
  }
  // The writer thread waits only on an empty queue (else it is writing and looks again).
  if (was_empty) wake_.notify_one();
  return true;
}

void AuditWriter::flush() {
  {
    base::MutexLock lock(mu_);
    const uint64_t target = accepted_;
    while (done_ < target) lock.wait(written_);
  }
  logger_->flush();
}

void AuditWriter::run() {
  base::MutexLock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) break;
      lock.unlock();
      const Clock::time_point due = warnIfDue();
      lock.lock();
      if (!queue_.empty() || stopping_) continue;
      if (due == Clock::time_point::max()) {
        lock.wait(wake_);
      } else {
        (void)lock.waitUntil(wake_, due);
      }
      continue;
    }
    std::deque<Line> batch;
    batch.swap(queue_);
    lock.unlock();
    for (Line& line : batch) {
      // Not a format string: the line is written as it is.
      logger_->log(line.time, spdlog::source_loc{}, spdlog::level::info, line.text);
      lock.lock();
      ++done_;
      --outstanding_;
      lock.unlock();
      written_.notify_all();
    }
    (void)warnIfDue();
    lock.lock();
  }
  lock.unlock();
  // The drops not warned about yet, whatever the interval: the last word before stopping.
  (void)warnIfDue(/*now_anyway=*/true);
}

Clock::time_point AuditWriter::warnIfDue(bool now_anyway) {
  const uint64_t dropped = dropped_.load(std::memory_order_relaxed);
  if (dropped == warned_dropped_) return Clock::time_point::max();
  const Clock::time_point now = Clock::now();
  if (!now_anyway && warned_once_ && now - last_warning_ < options_.warn_every) {
    return last_warning_ + options_.warn_every;
  }
  const std::shared_ptr<spdlog::logger> log =
      options_.warnings ? options_.warnings : spdlog::default_logger();
  log->warn(
      "audit log behind: {} card-lookup audit line(s) dropped since the last warning ({} in all): "
      "more than {} lines waited for the audit log's sink; fraud_audit_dropped_total counts them",
      dropped - warned_dropped_, dropped, options_.max_queued_lines);
  warned_dropped_ = dropped;
  last_warning_ = now;
  warned_once_ = true;
  return Clock::time_point::max();
}

}  // namespace fraud::api
