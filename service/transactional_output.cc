#include "service/transactional_output.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "service/kafka/producer.h"
#include "service/transaction_calls.h"

namespace fraud::service {
namespace {

// How long a send waits for room in a full producer queue before it gives the record up (the
// transaction then aborts and the input is read again): the ingest thread never blocks for
// good on an unreachable broker.
constexpr auto kQueueFullPatience = std::chrono::seconds(10);

std::string errorText(const rd_kafka_error_t* error) { return rd_kafka_error_string(error); }

}  // namespace

void TransactionalOutput::installDeliveryReports(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* message, void*) {
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Purged records (a stop or a recovery after a fatal error) were given up on purpose.
      if (message->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE &&
          message->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        spdlog::warn("delivery to {} failed: {}", rd_kafka_topic_name(message->rkt),
                     rd_kafka_err2str(message->err));
      }
      return;
    }
    if (message->_private != nullptr) {
      auto* ledger = static_cast<CheckpointLedger*>(message->_private);
      std::lock_guard lock(ledger->mu);
      ledger->acknowledged[message->partition] = message->offset;
    }
  });
}

kafka::PartitionList TransactionalOutput::partitionList(const InputOffsets& offsets) {
  auto list = kafka::makePartitionList(static_cast<int>(offsets.offsets.size()));
  for (const InputOffset& o : offsets.offsets) {
    auto* entry = rd_kafka_topic_partition_list_add(list.get(), offsets.topic.c_str(), o.partition);
    entry->offset = o.next_offset;
    if (offsets.metadata.empty()) continue;
    // librdkafka frees the metadata with the list.
    entry->metadata = malloc(offsets.metadata.size());
    std::memcpy(entry->metadata, offsets.metadata.data(), offsets.metadata.size());
    entry->metadata_size = offsets.metadata.size();
  }
  return list;
}

TransactionalOutput::TransactionalOutput(rd_kafka_t* producer, GroupSource group)
    : producer_(producer), group_(std::move(group)), committer_([this] { committerLoop(); }) {}

void TransactionalOutput::timeRecordsOf(const std::string& topic,
                                        prometheus::Histogram& commit_wait,
                                        prometheus::Histogram& commit) {
  timed_topic_ = &topic;
  commit_wait_ = &commit_wait;
  commit_histogram_ = &commit;
}

void TransactionalOutput::setCommitPrecondition(std::function<CommitReadiness()> precondition) {
  std::lock_guard lock(mu_);
  precondition_ = std::move(precondition);
}

TransactionalOutput::~TransactionalOutput() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  committer_.join();
  // Reports of records still queued would point into this object: drop them first.
  if (producer_ != nullptr) {
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_, 0);
  }
}

void TransactionalOutput::detachProducer() {
  fatal_ = true;
  if (producer_ != nullptr) {
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_, 0);
  }
  (void)abort(/*outputs_failed=*/true);  // fatal: forgets the transaction, calls nothing
  open_ = false;
  std::lock_guard lock(mu_);
  producer_ = nullptr;
  result_.reset();
  request_.reset();
}

void TransactionalOutput::attachProducer(rd_kafka_t* producer) {
  {
    std::lock_guard lock(mu_);
    producer_ = producer;
  }
  fatal_ = false;
}

void TransactionalOutput::send(const std::string& topic, int32_t partition, std::string_view key,
                               std::optional<std::string_view> value,
                               std::initializer_list<Header> headers) {
  enqueue(topic, partition, key, value, headers, /*checkpoint=*/false);
}

void TransactionalOutput::sendCheckpoint(const std::string& topic, int32_t partition,
                                         std::string_view key, std::string_view value) {
  enqueue(topic, partition, key, value, {}, /*checkpoint=*/true);
}

void TransactionalOutput::enqueue(const std::string& topic, int32_t partition, std::string_view key,
                                  std::optional<std::string_view> value,
                                  std::initializer_list<Header> headers, bool checkpoint) {
  if (fatal_) return;
  const bool timed = timed_topic_ != nullptr && topic == *timed_topic_;
  if (committing_) {
    if (timed) held_times_.push_back(std::chrono::steady_clock::now());
    HeldRecord& held = held_.emplace_back();
    held.topic = topic;
    held.partition = partition;
    held.key = key;
    held.checkpoint = checkpoint;
    held_bytes_ += key.size() + (value ? value->size() : 0);
    if (value) held.value = std::string(*value);
    for (const auto& h : headers) {
      held.headers.emplace_back(h.name, h.value);
      held_bytes_ += h.name.size() + h.value.size();
    }
    return;
  }
  if (!beginIfClosed()) return;
  if (timed) open_times_.push_back(std::chrono::steady_clock::now());
  produce(topic.c_str(), partition, key, value, kafka::makeHeaders(headers), checkpoint);
}

bool TransactionalOutput::beginIfClosed() {
  if (open_) return true;
  if (kafka::KafkaError e(rd_kafka_begin_transaction(producer_)); e) {
    spdlog::error("begin transaction: {}", errorText(e.get()));
    if (rd_kafka_error_is_fatal(e.get())) fatal_ = true;
    // The previous transaction is still there in librdkafka, in error: the next commit aborts
    // it (open_ makes it go to the committer).
    if (rd_kafka_error_txn_requires_abort(e.get())) open_ = true;
    lost_record_ = true;
    return false;
  }
  open_ = true;
  return true;
}

void TransactionalOutput::produce(const char* topic, int32_t partition, std::string_view key,
                                  std::optional<std::string_view> value,
                                  rd_kafka_headers_t* headers, bool checkpoint) {
  // A full queue: the broker is slower than we are, or unreachable; wait for deliveries.
  void* report_to = checkpoint ? &ledger_ : nullptr;
  const auto err =
      kafka::produceWaiting(producer_, {topic, partition, key, value, headers, report_to},
                            kQueueFullPatience, [this] { blocked_ = true; });
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  if (!lost_record_) spdlog::error("cannot produce to {}: {}", topic, rd_kafka_err2str(err));
  blocked_ = true;
  lost_record_ = true;  // the transaction cannot commit without it
}

void TransactionalOutput::serveDeliveries() {
  if (!committing_ && producer_ != nullptr) rd_kafka_poll(producer_, 0);
}

void TransactionalOutput::drain(int timeout_ms) {
  if (producer_ != nullptr) rd_kafka_flush(producer_, timeout_ms);
}

void TransactionalOutput::discardQueued() {
  if (producer_ == nullptr) return;
  rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_poll(producer_, 0);
}

void TransactionalOutput::startCommit(InputOffsets offsets) {
  committing_ = true;
  commit_started_ = std::chrono::steady_clock::now();
  if (commit_wait_ != nullptr) {
    for (const TimePoint sent : open_times_) {
      commit_wait_->Observe(std::chrono::duration<double>(commit_started_ - sent).count());
    }
  }
  committing_times_ = std::exchange(open_times_, {});
  std::lock_guard lock(mu_);
  if (fatal_) {
    result_ = Result::kFatal;
  } else if (lost_record_ && !open_) {
    result_ = Result::kAborted;  // nothing of it reached librdkafka: nothing to abort
  } else if (lost_record_) {
    // The transaction cannot commit without the lost record; the committer aborts it (and
    // finishCommit() takes it as aborted there).
    request_ = CommitRequest{nullptr, nullptr, /*abort_only=*/true};
    wake_.notify_all();
  } else if (!open_) {
    result_ = Result::kCommitted;  // nothing was sent: an empty transaction commits nothing
  } else if (offsets.offsets.empty() || !group_) {
    request_ = CommitRequest{nullptr, nullptr};
    wake_.notify_all();
  } else {
    request_ = CommitRequest{partitionList(offsets), group_()};
    wake_.notify_all();
  }
}

void TransactionalOutput::committerLoop() {
  pthread_setname_np(pthread_self(), "fd-committer");
  while (true) {
    CommitRequest request;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || request_.has_value(); });
      if (!request_) return;  // stopping with nothing to commit
      request = std::move(*request_);
      request_.reset();
    }
    Result result = Result::kAborted;
    const CommitReadiness ready = request.abort_only ? CommitReadiness::kRetry
                                  : precondition_    ? precondition_()
                                                     : CommitReadiness::kReady;
    if (ready == CommitReadiness::kFatal) {
      result = Result::kFatal;
    } else if (ready == CommitReadiness::kReady) {
      result = commitTransaction(producer_, request.offsets.get(), request.group.get(),
                                 [this] { holdForTesting(); });
    }
    // The abort, too, is retried here rather than on the ingest thread, which goes on polling.
    if (result == Result::kAborted) result = abortTransaction(producer_);
    publish(result);
  }
}

void TransactionalOutput::holdCommitsForTesting(std::string path) {
  std::lock_guard lock(mu_);
  hold_path_ = std::move(path);
}

void TransactionalOutput::holdForTesting() {
  std::string path;
  {
    std::lock_guard lock(mu_);
    path = hold_path_;
  }
  if (path.empty() || !std::filesystem::exists(path)) return;
  spdlog::warn("test hook: commit held after its records, before its offsets, while {} exists",
               path);
  std::ofstream(path + ".held") << "held\n";
  while (std::filesystem::exists(path)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void TransactionalOutput::publish(Result result) {
  std::lock_guard lock(mu_);
  result_ = result;
  done_.notify_all();
}

std::optional<FinishedCommit> TransactionalOutput::finishCommit(bool wait) {
  if (!committing_) return std::nullopt;
  FinishedCommit finished;
  {
    std::unique_lock lock(mu_);
    if (wait) done_.wait(lock, [this] { return result_.has_value(); });
    if (!result_) return std::nullopt;
    finished.result = *std::exchange(result_, std::nullopt);
  }
  committing_ = false;
  if (finished.result == Result::kFatal) {
    fatal_ = true;
    held_.clear();
    held_bytes_ = 0;
    return finished;
  }
  if (finished.result == Result::kAborted) {
    open_ = false;  // the committer aborted it
    finished.result = abort(/*outputs_failed=*/true);
    return finished;
  }
  {
    // Every report of the committed transaction was served before the commit returned, and the
    // next transaction's records are produced only below.
    std::lock_guard lock(ledger_.mu);
    finished.checkpoint_offsets = std::exchange(ledger_.acknowledged, {});
  }
  finished.duration = std::chrono::steady_clock::now() - commit_started_;
  observeCommitted(finished.duration);
  open_ = false;
  blocked_ = false;
  sendHeld();
  return finished;
}

void TransactionalOutput::sendHeld() {
  for (auto& held : std::exchange(held_, {})) {
    rd_kafka_headers_t* kafka_headers = kafka::makeHeaders(held.headers);
    if (!beginIfClosed()) {
      if (kafka_headers != nullptr) rd_kafka_headers_destroy(kafka_headers);
      continue;
    }
    produce(held.topic.c_str(), held.partition, held.key,
            held.value ? std::optional<std::string_view>(*held.value) : std::nullopt, kafka_headers,
            held.checkpoint);
  }
  held_bytes_ = 0;
}

void TransactionalOutput::observeCommitted(std::chrono::duration<double> duration) {
  if (commit_histogram_ != nullptr) {
    for (size_t i = 0; i < committing_times_.size(); ++i)
      commit_histogram_->Observe(duration.count());
  }
  committing_times_.clear();
  // The held records go out now, in the next transaction.
  open_times_ = std::exchange(held_times_, {});
}

TransactionalOutput::Result TransactionalOutput::abort(bool outputs_failed) {
  {
    std::lock_guard lock(ledger_.mu);
    ledger_.acknowledged.clear();
  }
  open_times_.clear();
  committing_times_.clear();
  held_times_.clear();
  blocked_ = blocked_ || outputs_failed;
  held_.clear();
  held_bytes_ = 0;
  lost_record_ = false;
  committing_ = false;
  if (fatal_) return Result::kFatal;
  if (!open_) return Result::kAborted;
  open_ = false;
  const Result result = abortTransaction(producer_);
  if (result == Result::kFatal) fatal_ = true;
  return result;
}

}  // namespace fraud::service
