#include "api/lookup_audit.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <string>
#include <utility>

namespace fraud::api {
namespace {

std::shared_ptr<spdlog::logger> auditLogger() {
  std::shared_ptr<spdlog::logger> log = spdlog::get("audit");
  if (!log) log = spdlog::default_logger()->clone("audit");
  return log;
}

}  // namespace

LookupAudit::LookupAudit(prometheus::Registry& registry, AuditWriter::Options options)
    : writer_(std::make_unique<AuditWriter>(auditLogger(), registry, std::move(options))) {}

void LookupAudit::record(const HttpRequest& request, std::string_view card_ref,
                         std::optional<int32_t> partition, std::string_view outcome,
                         int status) const {
  (void)writer_->write(
      fmt::format("card_lookup client={} route={} card_ref={} partition={} outcome={} status={}",
                  request.client, Router::routeOf(request.target), card_ref,
                  partition ? std::to_string(*partition) : "-", outcome, status));
}

void LookupAudit::flush() const { writer_->flush(); }

}  // namespace fraud::api
