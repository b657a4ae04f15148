#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "api/audit_writer.h"
#include "api/router.h"

namespace prometheus {
class Registry;
}

namespace fraud::api {

// The audit log of card lookups (docs/api.md): one line per lookup with the client, the route
// template, the card_ref (never the clear card), the partition, the outcome and the status.
// Written to the logger named "audit" when the service registered one, else to the default
// logger's sinks under that name, through an AuditWriter: record() never waits for that
// logger's sink (an HTTP I/O thread calls it), and a line the writer's queue cannot take is
// dropped and counted (fraud_audit_dropped_total). Thread-safe.
class LookupAudit {
 public:
  // `registry` must outlive the audit.
  LookupAudit(prometheus::Registry& registry, AuditWriter::Options options);

  void record(const HttpRequest& request, std::string_view card_ref,
              std::optional<int32_t> partition, std::string_view outcome, int status) const;
  // Returns once every line recorded before the call is written (tests, shutdown).
  void flush() const;

 private:
  std::unique_ptr<AuditWriter> writer_;
};

}  // namespace fraud::api
