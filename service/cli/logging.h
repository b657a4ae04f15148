#pragma once

#include <string>

namespace fraud::cli {

// The one log format of both programs. Sets the default spdlog logger, named `program`: text
// ("2026-12-01T21:40:33.123Z info  fraud-detector: message") or one JSON object a line
// (`format` "json"), on stderr, at `level` (spdlog's names: trace, debug, info, warn, error,
// critical, off); and routes librdkafka's log (fraud::kafka's sink) through it, syslog levels
// mapped to spdlog's. Call once, before any other thread logs. Nothing logged anywhere may
// carry a clear card number (docs/rule.md §5).
void configureLogging(const std::string& program, const std::string& format,
                      const std::string& level);

}  // namespace fraud::cli
