#include "service/producer_recovery.h"

#include <spdlog/spdlog.h>

namespace fraud::service {

ProducerRecovery::ProducerRecovery(std::function<base::Status()> replace,
                                   prometheus::Counter* recoveries, const service::Clock& clock)
    : replace_(std::move(replace)), recoveries_(recoveries), clock_(clock) {}

bool ProducerRecovery::curable(rd_kafka_resp_err_t code) {
  switch (code) {
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
      return false;
    default:
      return true;
  }
}

bool ProducerRecovery::fenced(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH || code == RD_KAFKA_RESP_ERR__FENCED;
}

bool ProducerRecovery::recover(std::string_view reason, Clock::time_point now) {
  while (!recent_.empty() && now - recent_.front() >= kWindow) recent_.pop_front();
  if (recent_.size() >= kMaxRecoveries) {
    spdlog::critical("producer failed for good ({}) after {} recoveries within {} min: giving up",
                     reason, recent_.size(), kWindow.count());
    return false;
  }
  recent_.push_back(now);
  spdlog::warn(
      "producer failed for good ({}): uncommitted work dropped, replacing the producer "
      "(recovery {} of at most {} within {} min)",
      reason, recent_.size(), kMaxRecoveries, kWindow.count());
  if (const base::Status error = replace_(); !error.ok()) {
    spdlog::critical("cannot replace the failed producer: {}", error.message());
    return false;
  }
  if (recoveries_ != nullptr) recoveries_->Increment();
  return true;
}

}  // namespace fraud::service
