#pragma once

#include "service/config.h"

namespace fraud::service {

// `fraud-detector run`: validates the configuration (every problem at once, exit status 2),
// then runs the live service until SIGTERM or SIGINT. Returns the process exit status.
// SIGTERM and SIGINT must be blocked in every thread before this is called.
[[nodiscard]] int runService(ServiceConfig config);

}  // namespace fraud::service
