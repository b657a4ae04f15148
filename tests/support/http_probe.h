#pragma once

#include <cstdint>
#include <string>

namespace fraud::testing {

// A TCP port on 127.0.0.1 that was free a moment ago.
[[nodiscard]] uint16_t freeTcpPort();

struct HttpAnswer {
  int status = 0;  // 0 when nothing answered
  std::string body;
};

// GET with the curl command-line client (a real peer, not our own parser).
[[nodiscard]] HttpAnswer httpGet(const std::string& url);

}  // namespace fraud::testing
