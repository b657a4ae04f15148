#include "service/changelog_restorer.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "state/card_state_codec.h"

namespace fraud::service {
namespace {

constexpr int kWatermarkTimeoutMs = 10'000;
// Messages taken from the consumer at once; the call returns early only when its wait ends.
constexpr size_t kConsumeBatch = 8'192;
constexpr int kConsumeWaitMs = 20;
// A restore still held by an open transaction this long says so in the log.
constexpr auto kOpenTransactionNotice = std::chrono::seconds(2);

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

std::optional<std::string> ChangelogRestorer::start() {
  std::string error;
  auto conf = kafka::makeKafkaConf(kafka_, error);
  if (!conf) return "restore consumer configuration: " + error;
  consumer_ = kafka::makeKafkaClient(RD_KAFKA_CONSUMER, std::move(conf), error);
  if (!consumer_) return "restore consumer: " + error;
  // The end of a restore is the changelog's high watermark, which only a read_uncommitted
  // client is told (a read_committed one gets the last stable offset).
  kafka::KafkaProperties uncommitted = kafka_;
  uncommitted["isolation.level"] = "read_uncommitted";
  auto end_conf = kafka::makeKafkaConf(uncommitted, error);
  if (!end_conf) return "restore end-offset client configuration: " + error;
  end_offsets_ = kafka::makeKafkaClient(RD_KAFKA_CONSUMER, std::move(end_conf), error);
  if (!end_offsets_) return "restore end-offset client: " + error;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), role_ == Role::kActive ? "fd-restorer" : "fd-standby");
    loop();
  });
  return std::nullopt;
}

void ChangelogRestorer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (consumer_) rd_kafka_consumer_close(consumer_.get());
  consumer_.reset();
  end_offsets_.reset();
}

void ChangelogRestorer::enqueue(
    const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) {
  {
    std::lock_guard lock(mu_);
    for (const auto& [partition, ticket] : partition_tickets) {
      cancelled_.erase(partition);
      queue_.emplace_back(partition, ticket);
      progress_[partition] = 0;
    }
  }
  wake_.notify_all();
}

void ChangelogRestorer::cancel(int32_t partition) {
  std::lock_guard lock(mu_);
  queue_.erase(
      std::remove_if(queue_.begin(), queue_.end(),
                     [partition](const auto& queued) { return queued.first == partition; }),
      queue_.end());
  cancelled_[partition] = true;
  progress_.erase(partition);
}

std::vector<RestoreResult> ChangelogRestorer::takeCompleted() {
  std::lock_guard lock(mu_);
  return std::exchange(completed_, {});
}

std::optional<double> ChangelogRestorer::progress(int32_t partition) const {
  std::lock_guard lock(mu_);
  const auto it = progress_.find(partition);
  if (it == progress_.end()) return std::nullopt;
  return it->second;
}

// One partition being restored.
struct ChangelogRestorer::Job {
  int32_t partition = 0;
  uint64_t ticket = 0;
  std::chrono::steady_clock::time_point started;
  std::optional<state::PartitionCheckpoint> local;   // the checkpoint on disk before the restore
  std::optional<state::PartitionCheckpoint> latest;  // the last checkpoint record read
  int64_t start = 0;
  int64_t end = 0;   // the changelog's high watermark when the restore began
  int64_t next = 0;  // the next changelog offset to apply
  uint64_t records = 0;
  uint64_t malformed = 0;
  std::unique_ptr<state::PartitionRestore> writer;  // from the offsets on; made by finish() else
  PartitionLeases::Lease lease;  // held from the checkpoint read until the job ends
  bool done = false;
  bool waiting_noticed = false;  // logged that an open transaction holds it
};

void ChangelogRestorer::loop() {
  while (true) {
    std::vector<std::pair<int32_t, uint64_t>> partitions;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
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
      std::lock_guard lock(mu_);
      for (const auto& [partition, ticket] : partitions) {
        progress_.erase(partition);
        if (cancelled_[partition]) continue;
        RestoreResult failed;
        failed.partition = partition;
        failed.ticket = ticket;
        failed.error =
            std::string("restore of partition ") + std::to_string(partition) + ": " + e.what();
        completed_.push_back(std::move(failed));
      }
    }
  }
}

void ChangelogRestorer::finish(Job& job, std::optional<std::string> error) {
  job.done = true;
  RestoreResult result;
  result.partition = job.partition;
  result.ticket = job.ticket;
  result.records = job.records;
  result.malformed = job.malformed;
  result.changelog_start = job.start;
  result.changelog_end = job.end;
  result.changelog_next = job.next;
  if (!error) {
    result.checkpoint = job.latest ? job.latest : job.local;
    if (result.checkpoint) result.checkpoint->changelog_next_offset = job.next;
    if (!job.writer) job.writer = db_.beginRestore(job.partition, !job.local);
    error = job.writer->finish(result.checkpoint);
  }
  if (error) {
    result.error = "restore of partition " + std::to_string(job.partition) + ": " + *error;
    result.checkpoint.reset();
  }
  job.writer.reset();
  job.lease.release();
  result.duration = std::chrono::steady_clock::now() - job.started;
  std::lock_guard lock(mu_);
  progress_.erase(job.partition);
  if (!cancelled_[job.partition]) completed_.push_back(std::move(result));
}

void ChangelogRestorer::restore(const std::vector<std::pair<int32_t, uint64_t>>& queued) {
  std::map<int32_t, Job> jobs;
  for (const auto& [p, ticket] : queued) {
    Job& job = jobs[p];  // queued twice: the newer ticket wins
    job.partition = p;
    job.ticket = ticket;
    job.started = std::chrono::steady_clock::now();
  }
  const size_t assigned = assign(jobs);
  if (assigned == 0) return;
  consume(jobs, assigned);
  rd_kafka_assign(consumer_.get(), nullptr);
}

size_t ChangelogRestorer::assign(std::map<int32_t, Job>& jobs) {
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
    if (const auto err = rd_kafka_offsets_for_times(client, list, kWatermarkTimeoutMs)) {
      for (auto& [p, job] : jobs) {
        finish(job, std::string("changelog offsets: ") + rd_kafka_err2str(err));
      }
      return 0;
    }
  }
  auto assignment = kafka::makePartitionList();
  for (int i = 0; i < latest->cnt; ++i) {
    Job& job = jobs.at(latest->elems[i].partition);
    if (!prepare(job, std::max<int64_t>(0, earliest->elems[i].offset),
                 std::max<int64_t>(0, latest->elems[i].offset))) {
      continue;
    }
    rd_kafka_topic_partition_list_add(assignment.get(), topic_.c_str(), job.partition)->offset =
        job.start;
  }
  if (assignment->cnt == 0) return 0;
  if (const auto err = rd_kafka_assign(consumer_.get(), assignment.get())) {
    for (auto& [p, job] : jobs) {
      if (!job.done) finish(job, std::string("assign: ") + rd_kafka_err2str(err));
    }
    return 0;
  }
  return static_cast<size_t>(assignment->cnt);
}

void ChangelogRestorer::consume(std::map<int32_t, Job>& jobs, size_t remaining) {
  std::unique_ptr<rd_kafka_queue_t, decltype(&rd_kafka_queue_destroy)> queue(
      rd_kafka_queue_get_consumer(consumer_.get()), &rd_kafka_queue_destroy);
  std::vector<rd_kafka_message_t*> messages(kConsumeBatch);
  while (remaining > 0) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
      for (auto& [p, job] : jobs) {
        if (job.done || !cancelled_[p]) continue;
        job.done = true;
        job.writer.reset();
        job.lease.release();
        --remaining;
      }
    }
    if (remaining == 0) break;
    const ssize_t count =
        rd_kafka_consume_batch_queue(queue.get(), kConsumeWaitMs, messages.data(), messages.size());
    for (ssize_t i = 0; i < count; ++i) {
      const kafka::KafkaMessage message(messages[static_cast<size_t>(i)]);
      const auto it = jobs.find(message->partition);
      if (it == jobs.end() || it->second.done) continue;
      if (apply(it->second, message.get())) --remaining;
    }
    if (count <= 0) continue;
    std::lock_guard lock(mu_);
    for (const auto& [p, job] : jobs) {
      if (job.done || job.end <= job.start || cancelled_[p]) continue;
      progress_[p] = std::min(1.0, static_cast<double>(job.next - job.start) /
                                       static_cast<double>(job.end - job.start));
    }
  }
}

bool ChangelogRestorer::prepare(Job& job, int64_t low, int64_t high) {
  const int32_t p = job.partition;
  if (role_ == Role::kActive) {
    job.lease = leases_.acquire(p);  // a standby catch-up of it gives way within a batch
  } else {
    // Under mu_: a cancel() (the partition was assigned here) that came first is seen, and one
    // that comes later makes the active restore wait for this lease.
    std::lock_guard lock(mu_);
    if (stopping_ || cancelled_[p]) {
      job.done = true;
      return false;
    }
    job.lease = leases_.tryAcquire(p);
  }
  if (!job.lease) {
    job.done = true;
    RestoreResult busy;
    busy.partition = p;
    busy.ticket = job.ticket;
    busy.busy = true;
    std::lock_guard lock(mu_);
    progress_.erase(p);
    if (!cancelled_[p]) completed_.push_back(std::move(busy));
    return false;
  }
  try {
    job.local = db_.checkpoint(p);
  } catch (const std::exception& e) {
    spdlog::warn("partition {}: {}; rebuilding it from the changelog", p, e.what());
    if (auto error = db_.clearPartition(p)) {
      finish(job, error);
      return false;
    }
    job.local.reset();
  }
  job.end = high;
  job.start = job.local ? job.local->changelog_next_offset : low;
  if (job.local && (job.start > job.end || job.start < low)) {
    // The changelog no longer matches this disk (topic recreated, or our offset compacted
    // away): forget the local state and take everything from the changelog. (A checkpoint
    // past the last stable offset but within the high watermark is no mismatch: the restore
    // waits for the open transaction instead.)
    spdlog::warn(
        "partition {}: local checkpoint at changelog offset {} is outside [{}, {}]; "
        "rebuilding from the changelog",
        p, job.start, low, job.end);
    if (auto error = db_.clearPartition(p)) {
      finish(job, error);
      return false;
    }
    job.local.reset();
    job.start = low;
  }
  job.next = job.start;
  job.writer = db_.beginRestore(p, !job.local);
  if (job.start >= job.end) {
    finish(job, std::nullopt);
    return false;
  }
  return true;
}

bool ChangelogRestorer::apply(Job& job, const rd_kafka_message_t* message) {
  if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    // The end of the committed data. A transaction left open by a departed owner holds the
    // stable offset back until it is fenced or times out: wait for the end seen at the start.
    job.next = std::max(job.next, message->offset);
    if (message->offset < job.end) {
      const auto now = std::chrono::steady_clock::now();
      // (A standby catch-up waits for the live owner's transaction every round: no news.)
      if (role_ == Role::kActive && now - job.started > kOpenTransactionNotice &&
          !job.waiting_noticed) {
        job.waiting_noticed = true;
        spdlog::warn(
            "partition {}: the changelog is stable up to offset {} of {}; waiting for an open "
            "transaction (a departed owner's) to be aborted",
            job.partition, message->offset, job.end);
      }
      return false;
    }
    finish(job, std::nullopt);
    return true;
  }
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    finish(job, rd_kafka_message_errstr(message));
    return true;
  }
  job.next = message->offset + 1;
  ++job.records;
  const auto key = kafka::keyOf(message);
  if (key == kChangelogCheckpointKey) {
    if (auto checkpoint = state::PartitionCheckpoint::decode(kafka::payloadOf(message))) {
      job.latest = checkpoint;
    } else {
      ++job.malformed;
      spdlog::warn("partition {}: unreadable checkpoint record at changelog offset {}; skipped",
                   job.partition, message->offset);
    }
    return false;
  }
  if (key.size() != detectors::CardRef{}.bytes.size()) {
    ++job.malformed;
    spdlog::warn("partition {}: changelog record at offset {} has an unknown key; skipped",
                 job.partition, message->offset);
    return false;
  }
  detectors::CardRef card_ref;
  std::memcpy(card_ref.bytes.data(), key.data(), key.size());
  std::optional<std::string> error;
  if (message->payload == nullptr) {
    error = job.writer->erase(card_ref);
  } else if (const std::string_view value = kafka::payloadOf(message);
             state::decodeCardState(value)) {
    error = job.writer->put(card_ref, value);
  } else {
    // Restored as it is, it would end the ingest thread when read: drop the card.
    ++job.malformed;
    spdlog::warn("partition {}: changelog record at offset {} is no card state; card dropped",
                 job.partition, message->offset);
    error = job.writer->erase(card_ref);
  }
  if (!error) return false;
  finish(job, error);
  return true;
}

}  // namespace fraud::service
