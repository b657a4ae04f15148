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

KafkaFencingCluster::KafkaFencingCluster(rd_kafka_t* admin,
                                         kafka::KafkaProperties producer_properties,
                                         std::string group_id, std::string input_topic,
                                         int timeout_ms, FencePatience patience)
    : admin_(admin),
      producer_properties_(std::move(producer_properties)),
      group_id_(std::move(group_id)),
      input_topic_(std::move(input_topic)),
      timeout_ms_(timeout_ms),
      patience_(patience) {}

base::Result<std::map<int32_t, std::string>> KafkaFencingCluster::committers(
    const std::vector<int32_t>& partitions) {
  return kafka::committedOffsetMetadata(admin_, group_id_, input_topic_, partitions, timeout_ms_,
                                        stop_.get_token());
}

base::Result<std::vector<kafka::GroupMember>> KafkaFencingCluster::members() {
  return kafka::groupMembers(admin_, group_id_, timeout_ms_, stop_.get_token());
}

namespace {

// init_transactions within `wait_ms`, asked again (librdkafka resumes a call that timed out)
// every kInitStepMs, so that `stop` ends the wait soon.
kafka::KafkaError initTransactions(rd_kafka_t* producer, int wait_ms, const std::stop_token& stop) {
  constexpr int64_t kInitStepMs = 250;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    kafka::KafkaError e(rd_kafka_init_transactions(
        producer, static_cast<int>(std::clamp<int64_t>(left, 1, kInitStepMs))));
    if (!e || rd_kafka_error_code(e.get()) != RD_KAFKA_RESP_ERR__TIMED_OUT ||
        stop.stop_requested() || std::chrono::steady_clock::now() >= deadline) {
      return e;
    }
  }
}

}  // namespace

base::Status KafkaFencingCluster::fence(const std::string& transactional_id) {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::milliseconds(timeout_ms_);
  kafka::KafkaProperties props = producer_properties_;
  props["transactional.id"] = transactional_id;
  props["client.id"] = "fraud-detector-fencer";
  // init_transactions bumps the id's epoch; the coordinator first aborts the transaction the
  // departed owner left open, so its records and pending offsets never become visible. A
  // producer not confirmed within the first wait is dropped and a new one asks (the header).
  for (int attempt = 1;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    const bool last = attempt >= patience_.producers || left <= patience_.first_wait_ms;
    auto conf = kafka::makeKafkaConf(props);
    auto made = conf ? kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf))
                     : base::Result<kafka::KafkaHandle>(conf.status());
    if (!made) return made.status();
    const kafka::KafkaHandle producer = std::move(*made);
    const kafka::KafkaError e = initTransactions(
        producer.get(),
        last ? static_cast<int>(std::max<int64_t>(left, 1)) : patience_.first_wait_ms,
        stop_.get_token());
    if (stop_.stop_requested()) return base::Status::unavailable("fencing: stopping");
    if (!e) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
      spdlog::info("fenced transactional id {} in {} ms ({} producer{})", transactional_id, ms,
                   attempt, attempt == 1 ? "" : "s");
      return {};
    }
    // Not confirmed in time: the error is the coordinator's last answer (or a time-out).
    if (last || !rd_kafka_error_is_retriable(e.get())) {
      return base::Status::failed(rd_kafka_error_string(e.get()));
    }
  }
}

TransactionFencer::TransactionFencer(
    Options options, std::unique_ptr<FencingCluster> cluster,
    std::function<std::optional<std::string>(int32_t)> previous_owner, Observer observer)
    : options_(std::move(options)),
      cluster_(std::move(cluster)),
      previous_owner_(std::move(previous_owner)),
      observer_(std::move(observer)),
      thread_([this] {
        pthread_setname_np(pthread_self(), "fd-fencer");
        loop();
      }) {}

TransactionFencer::~TransactionFencer() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  cluster_->cancel();
  wake_.notify_all();
  thread_.join();
}

void TransactionFencer::fenceOwnersOf(const std::vector<int32_t>& partitions) {
  if (partitions.empty()) return;
  {
    base::MutexLock lock(mu_);
    queue_.insert(queue_.end(), partitions.begin(), partitions.end());
  }
  wake_.notify_all();
}

void TransactionFencer::waitIdle() {
  base::MutexLock lock(mu_);
  while (!stopping_ && (!queue_.empty() || busy_)) lock.wait(idle_);
}

void TransactionFencer::loop() {
  while (true) {
    std::vector<int32_t> partitions;
    {
      base::MutexLock lock(mu_);
      busy_ = false;
      idle_.notify_all();
      while (!stopping_ && queue_.empty()) lock.wait(wake_);
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
  if (const auto committers = cluster_->committers(partitions)) {
    for (const auto& [p, instance] : *committers) candidates.insert(instance);
  } else {
    spdlog::warn("fencing: cannot read who committed partitions last: {}", committers.message());
  }
  candidates.erase(options_.self);
  if (candidates.empty()) return;
  const auto members = cluster_->members();
  if (!members) {
    // Fencing a member that is still alive would end it: without the membership, fence nobody
    // (an open transaction then ends at the broker's transaction.timeout.ms).
    spdlog::warn("fencing: cannot read the group's members ({}); no previous owner fenced",
                 members.message());
    return;
  }
  for (const auto& departed : departedOwners(candidates, *members, options_.self)) {
    const Result result = fenceIfStillAbsent(departed);
    if (observer_) observer_(departed, result);
  }
}

TransactionFencer::Result TransactionFencer::fenceIfStillAbsent(const std::string& instance_id) {
  const auto members = cluster_->members();
  if (!members) {
    spdlog::warn("fencing {}: cannot read the group's members again ({}); not fenced", instance_id,
                 members.message());
    return Result::kFailed;
  }
  if (departedOwners({instance_id}, *members, options_.self).empty()) {
    spdlog::info("not fencing {}: it has joined the group again (restarted)", instance_id);
    return Result::kRejoined;
  }
  const std::string transactional_id = transactionalIdOf(options_.group_id, instance_id);
  if (const base::Status fenced = cluster_->fence(transactional_id); !fenced.ok()) {
    spdlog::error("fencing {}: {}", transactional_id, fenced.message());
    return Result::kFailed;
  }
  spdlog::info("fenced departed owner {}", instance_id);
  return Result::kFenced;
}

}  // namespace fraud::service
