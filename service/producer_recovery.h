#pragma once

#include <librdkafka/rdkafka.h>
#include <prometheus/counter.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "detectors/base/status.h"
#include "service/clock.h"

namespace fraud::service {

// The bound on recovering from fatal producer errors (Kafka Streams' TaskMigratedException and
// StreamsProducer.resetProducer() under exactly-once): the stream thread closes its tasks dirty,
// and `replace` makes the failed producers anew (the transactional one with the same
// transactional.id, which aborts whatever the failed one left open). A failure that keeps coming
// back is not a broker's failover but a fault recovery cannot cure (another live instance with
// our transactional id, an ACL): past kMaxRecoveries within kWindow, or when `replace` itself
// fails, recover() says no and the service stops with exit status 1 as before, for its
// supervisor to restart it.
//
// Thread-safety: the ingest thread only.
class ProducerRecovery {
 public:
  using Clock = std::chrono::steady_clock;
  // At most this many recoveries within kWindow: the next fatal error within it stops the
  // service. A broker failover costs one; five leave room for a rolling restart of a cluster.
  static constexpr size_t kMaxRecoveries = 5;
  static constexpr std::chrono::minutes kWindow{5};

  // `replace` makes the failed producers anew: ok, else why it could not.
  // `recoveries` (fraud_producer_recoveries_total) may be null (tests). `clock` dates each
  // recovery (the window).
  ProducerRecovery(std::function<base::Status()> replace, prometheus::Counter* recoveries,
                   const service::Clock& clock = service::Clock::real());

  // Whether a new producer can cure fatal error `code`: not a refusal by the cluster's ACLs
  // (authorization of the transactional id, the cluster, a topic or the group), which a new
  // producer under the same id and principal meets again.
  [[nodiscard]] static bool curable(rd_kafka_resp_err_t code);
  // Whether fatal error `code` says another producer took our transactional id (a newer epoch):
  // a survivor fenced us after taking our partitions, so what we held may be another member's
  // now. The stream thread then rejoins the group rather than reopening what it held.
  [[nodiscard]] static bool fenced(rd_kafka_resp_err_t code);

  // After a fatal producer error (`reason`), with the tasks already closed: replaces the
  // producers unless the bound is spent. True when the stream thread may go on.
  [[nodiscard]] bool recover(std::string_view reason) { return recover(reason, clock_.now()); }
  [[nodiscard]] bool recover(std::string_view reason, Clock::time_point now);

 private:
  std::function<base::Status()> replace_;
  prometheus::Counter* recoveries_;
  const service::Clock& clock_;
  std::deque<Clock::time_point> recent_;  // recoveries within the last kWindow
};

}  // namespace fraud::service
