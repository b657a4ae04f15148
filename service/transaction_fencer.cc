#include "service/transaction_fencer.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace fraud::service {

std::string transactionalIdOf(const std::string& group_id, const std::string& instance_id) {
  return group_id + "-" + instance_id;
}

std::vector<std::string> departedOwners(const std::set<std::string>& candidates,
                                        const std::vector<kafka::GroupMember>& members,
                                        const std::string& self) {
  std::set<std::string> live;
  for (const auto& m : members) {
    live.insert(m.group_instance_id.empty() ? m.client_id : m.group_instance_id);
  }
  std::vector<std::string> departed;
  for (const auto& candidate : candidates) {
    if (candidate.empty() || candidate == self || live.count(candidate) > 0) continue;
    departed.push_back(candidate);
  }
  return departed;
}

TransactionFencer::TransactionFencer(
    Options options, rd_kafka_t* admin, kafka::KafkaProperties producer_properties,
    std::function<std::optional<std::string>(int32_t)> previous_owner, Observer observer)
    : options_(std::move(options)),
      admin_(admin),
      producer_properties_(std::move(producer_properties)),
      previous_owner_(std::move(previous_owner)),
      observer_(std::move(observer)),
      thread_([this] {
        pthread_setname_np(pthread_self(), "fd-fencer");
        loop();
      }) {}

TransactionFencer::~TransactionFencer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TransactionFencer::fenceOwnersOf(const std::vector<int32_t>& partitions) {
  if (partitions.empty()) return;
  {
    std::lock_guard lock(mu_);
    queue_.insert(queue_.end(), partitions.begin(), partitions.end());
  }
  wake_.notify_all();
}

void TransactionFencer::waitIdle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return stopping_ || (queue_.empty() && !busy_); });
}

void TransactionFencer::loop() {
  while (true) {
    std::vector<int32_t> partitions;
    {
      std::unique_lock lock(mu_);
      busy_ = false;
      idle_.notify_all();
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      partitions.assign(queue_.begin(), queue_.end());
      queue_.clear();
      busy_ = true;
    }
    std::sort(partitions.begin(), partitions.end());
    partitions.erase(std::unique(partitions.begin(), partitions.end()), partitions.end());
    fenceRound(partitions);
  }
}

void TransactionFencer::fenceRound(const std::vector<int32_t>& partitions) {
  std::set<std::string> candidates;
  for (const int32_t p : partitions) {
    if (auto owner = previous_owner_ ? previous_owner_(p) : std::nullopt) candidates.insert(*owner);
  }
  std::string error;
  if (const auto committers =
          kafka::committedOffsetMetadata(admin_, options_.group_id, options_.input_topic,
                                         partitions, options_.timeout_ms, error)) {
    for (const auto& [p, instance] : *committers) candidates.insert(instance);
  } else {
    spdlog::warn("fencing: cannot read who committed partitions last: {}", error);
  }
  candidates.erase(options_.self);
  if (candidates.empty()) return;
  const auto members = kafka::groupMembers(admin_, options_.group_id, options_.timeout_ms, error);
  if (!members) {
    // Fencing a member that is still alive would end it: without the membership, fence nobody
    // (an open transaction then ends at the broker's transaction.timeout.ms).
    spdlog::warn("fencing: cannot read the group's members ({}); no previous owner fenced", error);
    return;
  }
  for (const auto& departed : departedOwners(candidates, *members, options_.self)) {
    const bool fenced = fence(departed);
    if (observer_) observer_(departed, fenced);
  }
}

bool TransactionFencer::fence(const std::string& instance_id) {
  const std::string transactional_id = transactionalIdOf(options_.group_id, instance_id);
  const auto started = std::chrono::steady_clock::now();
  kafka::KafkaProperties props = producer_properties_;
  props["transactional.id"] = transactional_id;
  props["client.id"] = "fraud-detector-fencer";
  std::string error;
  auto conf = kafka::makeKafkaConf(props, error);
  kafka::KafkaHandle producer;
  if (conf) producer = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(conf), error);
  if (!producer) {
    spdlog::error("fencing {}: {}", transactional_id, error);
    return false;
  }
  // init_transactions bumps the id's epoch; the coordinator first aborts the transaction the
  // departed owner left open, so its records and pending offsets never become visible.
  if (kafka::KafkaError e(rd_kafka_init_transactions(producer.get(), options_.timeout_ms)); e) {
    spdlog::error("fencing {}: {}", transactional_id, rd_kafka_error_string(e.get()));
    return false;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  spdlog::info("fenced departed owner {} (transactional id {}) in {} ms", instance_id,
               transactional_id, ms);
  return true;
}

}  // namespace fraud::service
