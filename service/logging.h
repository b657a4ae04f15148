#pragma once

#include <string>

namespace fraud::service {

// Sets the default spdlog logger: text or one JSON object a line, on stderr, at `level`; and
// routes librdkafka's log (fraud::kafka's sink) through it, syslog levels mapped to spdlog's.
// Nothing logged anywhere may carry a clear card number (SPEC §5).
void configureLogging(const std::string& format, const std::string& level);

}  // namespace fraud::service
