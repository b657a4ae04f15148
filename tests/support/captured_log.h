// The default spdlog logger captured for a test's scope: what the code under test logs, read back
// as text, one "level message" line each. A test using it links spdlog::spdlog, the library the
// code under test logs through (header-only spdlog would have a default logger of its own).
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

namespace fraud::testing {

// Thread-safety: the sink is locked, so any thread may log; read text() once they are done.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(std::move(logger));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  [[nodiscard]] std::string text() const { return text_.str(); }
  // How many times `line` appears in what was logged.
  [[nodiscard]] size_t count(std::string_view line) const {
    const std::string all = text();
    size_t n = 0;
    for (size_t at = all.find(line); at != std::string::npos; at = all.find(line, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace fraud::testing
