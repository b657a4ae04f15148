#include "api/lookup_audit.h"

#include <spdlog/spdlog.h>

namespace fraud::api {

LookupAudit::LookupAudit() {
  log_ = spdlog::get("audit");
  if (!log_) log_ = spdlog::default_logger()->clone("audit");
}

void LookupAudit::record(const HttpRequest& request, std::string_view card_ref,
                         std::optional<int32_t> partition, std::string_view outcome,
                         int status) const {
  log_->info("card_lookup client={} route={} card_ref={} partition={} outcome={} status={}",
             request.client, Router::routeOf(request.target), card_ref,
             partition ? std::to_string(*partition) : "-", outcome, status);
}

}  // namespace fraud::api
