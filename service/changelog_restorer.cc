#include "service/changelog_restorer.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace fraud::service {
namespace {

constexpr int kWatermarkTimeoutMs = 10'000;
// Messages taken from the consumer at once; the call returns early only when its wait ends.
constexpr size_t kConsumeBatch = 8'192;
constexpr int kConsumeWaitMs = 20;

}  // namespace

ChangelogRestorer::ChangelogRestorer(const kafka::KafkaProperties& kafka,
                                     std::string changelog_topic, state::StateDb& db,
                                     Options options)
    : kafka_(kafka),
      topic_(std::move(changelog_topic)),
      db_(db),
      role_(options.role),
      own_leases_(options.leases != nullptr ? nullptr : std::make_unique<PartitionLeases>()),
      leases_(options.leases != nullptr ? *options.leases : *own_leases_) {
  kafka_["isolation.level"] = "read_committed";
  kafka_["enable.partition.eof"] = "true";
  kafka_["enable.auto.commit"] = "false";
  kafka_.erase("group.instance.id");
  kafka_["group.id"] = "fraud-detector-restore";  // assign() only: never joins or commits
  // librdkafka's defaults (1 MiB a partition a fetch, 100k queued messages) keep a restore
  // waiting on fetches; the prefetch queue stays bounded by queued.max.messages.kbytes.
  kafka_.try_emplace("max.partition.fetch.bytes", "10485760");
  kafka_.try_emplace("queued.min.messages", "1000000");
}

ChangelogRestorer::~ChangelogRestorer() { stop(); }

base::Status ChangelogRestorer::start() {
  auto conf = kafka::makeKafkaConf(kafka_);
  if (!conf) return conf.status().withPrefix("restore consumer configuration: ");
  auto consumer = kafka::makeKafkaClient(RD_KAFKA_CONSUMER, std::move(*conf));
  if (!consumer) return consumer.status().withPrefix("restore consumer: ");
  consumer_ = std::move(*consumer);
  // The end of a restore is the changelog's high watermark, which only a read_uncommitted
  // client is told (a read_committed one gets the last stable offset).
  kafka::KafkaProperties uncommitted = kafka_;
  uncommitted["isolation.level"] = "read_uncommitted";
  auto end_conf = kafka::makeKafkaConf(uncommitted);
  if (!end_conf) return end_conf.status().withPrefix("restore end-offset client configuration: ");
  auto end_offsets = kafka::makeKafkaClient(RD_KAFKA_CONSUMER, std::move(*end_conf));
  if (!end_offsets) return end_offsets.status().withPrefix("restore end-offset client: ");
  end_offsets_ = std::move(*end_offsets);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), role_ == Role::kActive ? "fd-restorer" : "fd-standby");
    loop();
  });
  if (role_ == Role::kActive) {
    warmer_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "fd-warmer");
      warmLoop();
    });
  }
  return {};
}

void ChangelogRestorer::stop() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  warm_wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (warmer_.joinable()) warmer_.join();
  std::deque<RestoreResult> unwarmed;  // its stores go outside the lock
  {
    base::MutexLock lock(mu_);
    unwarmed.swap(to_warm_);
  }
  unwarmed.clear();
  if (consumer_) rd_kafka_consumer_close(consumer_.get());
  consumer_.reset();
  end_offsets_.reset();
}

void ChangelogRestorer::enqueue(
    const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) {
  {
    base::MutexLock lock(mu_);
    for (const auto& [partition, ticket] : partition_tickets) {
      // A restore of the partition that runs under an older ticket is stale from here on: it
      // is abandoned within a batch and never reported (RestoreQueue).
      wanted_[partition] = ticket;
      queue_.emplace_back(partition, ticket);
      progress_[partition] = 0;
    }
  }
  wake_.notify_all();
}

void ChangelogRestorer::cancel(int32_t partition) {
  base::MutexLock lock(mu_);
  queue_.erase(
      std::remove_if(queue_.begin(), queue_.end(),
                     [partition](const auto& queued) { return queued.first == partition; }),
      queue_.end());
  wanted_.erase(partition);
  progress_.erase(partition);
}

bool ChangelogRestorer::wanted(int32_t partition, uint64_t ticket) const {
  const auto it = wanted_.find(partition);
  return it != wanted_.end() && it->second == ticket;
}

std::vector<RestoreResult> ChangelogRestorer::takeCompleted() {
  base::MutexLock lock(mu_);
  return std::exchange(completed_, {});
}

std::optional<double> ChangelogRestorer::progress(int32_t partition) const {
  base::MutexLock lock(mu_);
  const auto it = progress_.find(partition);
  if (it == progress_.end()) return std::nullopt;
  return it->second;
}

void ChangelogRestorer::loop() {
  while (true) {
    std::vector<std::pair<int32_t, uint64_t>> partitions;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && queue_.empty()) lock.wait(wake_);
      if (stopping_) return;
      partitions.assign(queue_.begin(), queue_.end());
      queue_.clear();
    }
    try {
      restore(partitions);
    } catch (const std::exception& e) {
      // The local database failed under us: report every partition of the round as failed, so
      // the task manager retries it, instead of ending the process.
      spdlog::error("restore: {}", e.what());
      for (const auto& [partition, ticket] : partitions) {
        RestoreResult failed;
        failed.partition = partition;
        failed.ticket = ticket;
        failed.error = base::Status::ioError(std::string("restore of partition ") +
                                             std::to_string(partition) + ": " + e.what());
        report(std::move(failed));
      }
    }
  }
}

void ChangelogRestorer::report(RestoreResult result) {
  base::MutexLock lock(mu_);
  if (!wanted(result.partition, result.ticket)) return;  // cancelled, or queued again since
  if (role_ == Role::kActive && result.error.ok() && !result.busy) {
    to_warm_.push_back(std::move(result));
    warm_wake_.notify_one();
    return;
  }
  publish(std::move(result));
}

void ChangelogRestorer::publish(RestoreResult result) {
  progress_.erase(result.partition);
  wanted_.erase(result.partition);
  completed_.push_back(std::move(result));
}

void ChangelogRestorer::warmLoop() {
  while (true) {
    RestoreResult result;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && to_warm_.empty()) lock.wait(warm_wake_);
      if (stopping_) return;
      result = std::move(to_warm_.front());
      to_warm_.pop_front();
    }
    // The partition's store, its card cache warmed from what was just written, is built here:
    // not on the ingest thread, which goes on with its other partitions, nor on the restorer's,
    // which goes on reading. A store that cannot be built (an unreadable card) is left to the
    // task manager, which tries again and rebuilds the partition.
    try {
      result.store = db_.cardStore(result.partition);
    } catch (const std::exception& e) {
      spdlog::warn("partition {}: local state after the restore: {}", result.partition, e.what());
    }
    base::MutexLock lock(mu_);
    if (wanted(result.partition, result.ticket)) {
      publish(std::move(result));
      continue;
    }
    lock.unlock();  // cancelled meanwhile: the store goes, outside the lock
  }
}

void ChangelogRestorer::restore(const std::vector<std::pair<int32_t, uint64_t>>& queued) {
  std::map<int32_t, uint64_t> tickets;
  {
    // Queued twice, only the newer ticket is wanted; cancelled since, neither is.
    base::MutexLock lock(mu_);
    for (const auto& [p, ticket] : queued) {
      if (wanted(p, ticket)) tickets[p] = ticket;
    }
  }
  if (tickets.empty()) return;
  std::map<int32_t, RestoreJob> jobs;
  for (const auto& [p, ticket] : tickets) {
    jobs.try_emplace(p, db_, p, ticket, /*log_open_transaction_waits=*/role_ == Role::kActive);
  }
  const size_t assigned = assign(jobs);
  if (assigned == 0) return;
  consume(jobs, assigned);
  rd_kafka_assign(consumer_.get(), nullptr);
}

size_t ChangelogRestorer::assign(std::map<int32_t, RestoreJob>& jobs) {
  // The changelog's start and end offsets of every partition, in two requests.
  auto earliest = kafka::makePartitionList(static_cast<int>(jobs.size()));
  auto latest = kafka::makePartitionList(static_cast<int>(jobs.size()));
  for (const auto& [p, job] : jobs) {
    rd_kafka_topic_partition_list_add(earliest.get(), topic_.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_topic_partition_list_add(latest.get(), topic_.c_str(), p)->offset =
        RD_KAFKA_OFFSET_END;
  }
  // The end is the high watermark, not the last stable offset: a transaction a departed owner
  // left open ends soon (fenced, or timed out), and the committed changes after it, perhaps a
  // later owner's, belong to the state. The restore reads read_committed and waits for it.
  for (auto [client, list] :
       {std::pair{consumer_.get(), earliest.get()}, std::pair{end_offsets_.get(), latest.get()}}) {
    if (const auto listed = kafka::listOffsets(client, list, kWatermarkTimeoutMs); !listed.ok()) {
      for (auto& [p, job] : jobs) report(job.fail(listed.withPrefix("changelog offsets: ")));
      return 0;
    }
  }
  auto assignment = kafka::makePartitionList();
  for (int i = 0; i < latest->cnt; ++i) {
    RestoreJob& job = jobs.at(latest->elems[i].partition);
    if (!prepare(job, std::max<int64_t>(0, earliest->elems[i].offset),
                 std::max<int64_t>(0, latest->elems[i].offset))) {
      continue;
    }
    rd_kafka_topic_partition_list_add(assignment.get(), topic_.c_str(), job.partition())->offset =
        job.start();
  }
  if (assignment->cnt == 0) return 0;
  if (const auto err = rd_kafka_assign(consumer_.get(), assignment.get())) {
    for (auto& [p, job] : jobs) {
      if (!job.done()) {
        report(job.fail(base::Status::failed(std::string("assign: ") + rd_kafka_err2str(err))));
      }
    }
    return 0;
  }
  return static_cast<size_t>(assignment->cnt);
}

void ChangelogRestorer::consume(std::map<int32_t, RestoreJob>& jobs, size_t remaining) {
  std::unique_ptr<rd_kafka_queue_t, decltype(&rd_kafka_queue_destroy)> queue(
      rd_kafka_queue_get_consumer(consumer_.get()), &rd_kafka_queue_destroy);
  std::vector<rd_kafka_message_t*> messages(kConsumeBatch);
  while (remaining > 0) {
    {
      base::MutexLock lock(mu_);
      if (stopping_) break;
      for (auto& [p, job] : jobs) {
        if (job.done() || wanted(p, job.ticket())) continue;
        job.abandon();  // revoked, or assigned again: a restore under the new ticket is queued
        --remaining;
      }
    }
    if (remaining == 0) break;
    const ssize_t count =
        rd_kafka_consume_batch_queue(queue.get(), kConsumeWaitMs, messages.data(), messages.size());
    for (ssize_t i = 0; i < count; ++i) {
      const kafka::KafkaMessage message(messages[static_cast<size_t>(i)]);
      const auto it = jobs.find(message->partition);
      if (it == jobs.end() || it->second.done()) continue;
      if (auto ended = it->second.apply(*message)) {
        report(std::move(*ended));
        --remaining;
      }
    }
    if (count <= 0) continue;
    base::MutexLock lock(mu_);
    for (const auto& [p, job] : jobs) {
      const auto progress = job.progress();
      if (progress && wanted(p, job.ticket())) progress_[p] = *progress;
    }
  }
}

bool ChangelogRestorer::prepare(RestoreJob& job, int64_t low, int64_t high) {
  const int32_t p = job.partition();
  PartitionLeases::Lease lease;
  if (role_ == Role::kActive) {
    lease = leases_.acquire(p);  // a standby catch-up of it gives way within a batch
  } else {
    // Under mu_: a cancel() (the partition was assigned here) that came first is seen, and one
    // that comes later makes the active restore wait for this lease.
    base::MutexLock lock(mu_);
    if (stopping_ || !wanted(p, job.ticket())) {
      job.abandon();
      return false;
    }
    lease = leases_.tryAcquire(p);
  }
  if (!lease) {
    job.abandon();
    RestoreResult busy;
    busy.partition = p;
    busy.ticket = job.ticket();
    busy.busy = true;
    report(std::move(busy));
    return false;
  }
  if (auto ended = job.begin(std::move(lease), low, high)) {
    report(std::move(*ended));
    return false;
  }
  return true;
}

}  // namespace fraud::service
