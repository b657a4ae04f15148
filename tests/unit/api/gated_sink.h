// An spdlog sink for the audit log's tests: a log on a pipe nobody reads. While closed, every
// write waits at the sink until open(); it keeps what it wrote and each line's time.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace fraud::testing {

class GatedSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit GatedSink(bool open = false) : open_(open) {}

  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  // Whether a write has reached the sink (and waits there while closed), within `limit`.
  bool waitEntered(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return entered_; });
  }
  // Whether `count` lines are written, within `limit`.
  bool waitLines(size_t count, std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return lines_.size() >= count; });
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::vector<spdlog::log_clock::time_point> times() {
    std::lock_guard lock(mu_);
    return times_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    std::unique_lock lock(mu_);
    entered_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    lines_.emplace_back(text.data(), text.size());
    times_.push_back(msg.time);
    changed_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool open_;
  bool entered_ = false;
  std::vector<std::string> lines_;
  std::vector<spdlog::log_clock::time_point> times_;
};

}  // namespace fraud::testing
