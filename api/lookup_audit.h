#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/router.h"

namespace spdlog {
class logger;
}

namespace fraud::api {

// The audit log of card lookups (docs/api.md): one line per lookup with the client, the route
// template, the card_ref (never the clear card), the partition, the outcome and the status.
// Written to the logger named "audit" when the service registered one, else to the default
// logger's sinks under that name. Thread-safe.
class LookupAudit {
 public:
  LookupAudit();

  void record(const HttpRequest& request, std::string_view card_ref,
              std::optional<int32_t> partition, std::string_view outcome, int status) const;

 private:
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace fraud::api
