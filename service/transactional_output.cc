#include "service/transactional_output.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdlib>
#include <cstring>

#include "detectors/base/broken_invariant.h"
#include "service/kafka/producer.h"
#include "service/transaction_calls.h"

namespace fraud::service {
namespace {

// How long a send waits for room in a full producer queue before it gives the record up (the
// transaction then aborts and the input is read again): the ingest thread never blocks for
// good on an unreachable broker.
constexpr auto kQueueFullPatience = std::chrono::seconds(10);

std::string errorText(const rd_kafka_error_t* error) { return rd_kafka_error_string(error); }

// A broken invariant of the lifecycle: fails fast in debug builds; logged in release, where the
// service goes on (the transaction's outcome is still decided by the broker), and counted.
void bug(std::string_view what) {
  base::countBrokenInvariant(base::Invariant::kOutputLifecycle);
  spdlog::critical("transactional output: bug: {}", what);
  assert(false && "transactional output: illegal lifecycle step");
}

}  // namespace

bool TransactionalOutput::isTransitionValid(State from, State to) {
  using S = State;
  if (from == to) return from != S::kCommitting && from != S::kOpen;
  switch (from) {
    case S::kIdle:
      return to == S::kOpen || to == S::kDoomed || to == S::kRefused || to == S::kCommitting ||
             to == S::kFatal;
    case S::kOpen:
      return to == S::kDoomed || to == S::kCommitting || to == S::kIdle || to == S::kFatal;
    case S::kDoomed:
      return to == S::kCommitting || to == S::kIdle || to == S::kFatal;
    case S::kRefused:
      return to == S::kDoomed || to == S::kCommitting || to == S::kIdle || to == S::kFatal;
    case S::kCommitting:
      return to == S::kIdle || to == S::kFatal;
    case S::kFatal:
      return to == S::kCommitting || to == S::kIdle;
  }
  return false;
}

std::string_view TransactionalOutput::stateName(State state) {
  switch (state) {
    case State::kIdle:
      return "idle";
    case State::kOpen:
      return "open";
    case State::kDoomed:
      return "doomed";
    case State::kRefused:
      return "refused";
    case State::kCommitting:
      return "committing";
    case State::kFatal:
      return "fatal";
  }
  return "unknown";
}

void TransactionalOutput::moveTo(State next) {
  if (!isTransitionValid(state_, next)) {
    bug(fmt::format("no step from {} to {}", stateName(state_), stateName(next)));
  }
  state_ = next;
}

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
      base::MutexLock lock(ledger->mu);
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
  precondition_ = std::move(precondition);
}

TransactionalOutput::~TransactionalOutput() {
  {
    base::MutexLock lock(mu_);
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
  if (state_ == State::kCommitting) bug("detachProducer() with a commit in flight");
  moveTo(State::kFatal);
  if (producer_ != nullptr) {
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_, 0);
  }
  (void)abort(/*outputs_failed=*/true);  // fatal: forgets the transaction, calls nothing
  producer_ = nullptr;
  base::MutexLock lock(mu_);
  result_.reset();
  request_.reset();
}

void TransactionalOutput::attachProducer(rd_kafka_t* producer) {
  producer_ = producer;
  moveTo(State::kIdle);
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
  if (state_ == State::kFatal) return;
  const bool timed = timed_topic_ != nullptr && topic == *timed_topic_;
  if (state_ == State::kCommitting) {
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
  if (const base::Status begun = beginIfClosed(); !begun.ok()) {
    spdlog::error("begin transaction: {}", begun.message());
    return;
  }
  if (timed) open_times_.push_back(std::chrono::steady_clock::now());
  produce(topic.c_str(), partition, key, value, kafka::makeHeaders(headers), checkpoint);
}

base::Status TransactionalOutput::beginIfClosed() {
  if (state_ == State::kOpen || state_ == State::kDoomed) return {};
  if (kafka::KafkaError e(rd_kafka_begin_transaction(producer_)); e) {
    if (rd_kafka_error_is_fatal(e.get())) {
      moveTo(State::kFatal);
    } else if (rd_kafka_error_txn_requires_abort(e.get())) {
      // The previous transaction is still there in librdkafka, in error: the next commit
      // aborts it.
      moveTo(State::kDoomed);
    } else {
      moveTo(State::kRefused);
    }
    return base::Status::failed(errorText(e.get()));
  }
  // Begun after a refusal lost records: this transaction cannot commit either.
  moveTo(state_ == State::kRefused ? State::kDoomed : State::kOpen);
  return {};
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
  if (state_ != State::kDoomed) {
    spdlog::error("cannot produce to {}: {}", topic, rd_kafka_err2str(err));
  }
  blocked_ = true;
  moveTo(State::kDoomed);  // the transaction cannot commit without it
}

void TransactionalOutput::serveDeliveries() {
  if (state_ != State::kCommitting && producer_ != nullptr) rd_kafka_poll(producer_, 0);
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
  const State before = state_;
  moveTo(State::kCommitting);
  commit_started_ = std::chrono::steady_clock::now();
  if (commit_wait_ != nullptr) {
    for (const TimePoint sent : open_times_) {
      commit_wait_->Observe(std::chrono::duration<double>(commit_started_ - sent).count());
    }
  }
  committing_times_ = std::exchange(open_times_, {});
  base::MutexLock lock(mu_);
  switch (before) {
    case State::kFatal:
      result_ = Result::kFatal;
      return;
    case State::kRefused:
      result_ = Result::kAborted;  // nothing of it reached librdkafka: nothing to abort
      return;
    case State::kIdle:
      result_ = Result::kCommitted;  // nothing was sent: an empty transaction commits nothing
      return;
    case State::kCommitting:
      return;  // a bug, reported by moveTo(): the commit in flight goes on
    case State::kDoomed:
      // The transaction cannot commit without the lost record; the committer aborts it (and
      // finishCommit() takes it as aborted there).
      request_ = CommitRequest{producer_, nullptr, nullptr, /*abort_only=*/true, nullptr};
      break;
    case State::kOpen:
      if (offsets.offsets.empty() || !group_) {
        request_ = CommitRequest{producer_, nullptr, nullptr, false, precondition_};
      } else {
        request_ = CommitRequest{producer_, partitionList(offsets), group_(), false, precondition_};
      }
      break;
  }
  wake_.notify_all();
}

void TransactionalOutput::committerLoop() {
  pthread_setname_np(pthread_self(), "fd-committer");
  while (true) {
    CommitRequest request;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && !request_) lock.wait(wake_);
      if (!request_) return;  // stopping with nothing to commit
      request = std::move(*request_);
      request_.reset();
    }
    Result result = Result::kAborted;
    const CommitReadiness ready = request.abort_only     ? CommitReadiness::kRetry
                                  : request.precondition ? request.precondition()
                                                         : CommitReadiness::kReady;
    if (ready == CommitReadiness::kFatal) {
      result = Result::kFatal;
    } else if (ready == CommitReadiness::kReady) {
      result = commitTransaction(request.producer, request.offsets.get(), request.group.get());
    }
    // The abort, too, is retried here rather than on the ingest thread, which goes on polling.
    if (result == Result::kAborted) result = abortTransaction(request.producer);
    publish(result);
  }
}

void TransactionalOutput::publish(Result result) {
  base::MutexLock lock(mu_);
  result_ = result;
  done_.notify_all();
}

std::optional<FinishedCommit> TransactionalOutput::finishCommit(bool wait) {
  if (state_ != State::kCommitting) return std::nullopt;
  FinishedCommit finished;
  {
    base::MutexLock lock(mu_);
    if (wait) {
      while (!result_) lock.wait(done_);
    }
    if (!result_) return std::nullopt;
    finished.result = *std::exchange(result_, std::nullopt);
  }
  if (finished.result == Result::kFatal) {
    moveTo(State::kFatal);
    held_.clear();
    held_bytes_ = 0;
    return finished;
  }
  if (finished.result == Result::kAborted) {
    moveTo(State::kIdle);  // the committer aborted it (or nothing had begun)
    finished.result = abort(/*outputs_failed=*/true);
    return finished;
  }
  {
    // Every report of the committed transaction was served before the commit returned, and the
    // next transaction's records are produced only below.
    base::MutexLock lock(ledger_.mu);
    finished.checkpoint_offsets = std::exchange(ledger_.acknowledged, {});
  }
  finished.duration = std::chrono::steady_clock::now() - commit_started_;
  observeCommitted(finished.duration);
  moveTo(State::kIdle);
  blocked_ = false;
  sendHeld();
  return finished;
}

void TransactionalOutput::sendHeld() {
  for (auto& held : std::exchange(held_, {})) {
    rd_kafka_headers_t* kafka_headers = kafka::makeHeaders(held.headers);
    if (const base::Status begun = beginIfClosed(); !begun.ok()) {
      spdlog::error("begin transaction: {}", begun.message());
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
  if (state_ == State::kCommitting) bug("abort() with a commit in flight: finishCommit() first");
  {
    base::MutexLock lock(ledger_.mu);
    ledger_.acknowledged.clear();
  }
  open_times_.clear();
  committing_times_.clear();
  held_times_.clear();
  blocked_ = blocked_ || outputs_failed;
  held_.clear();
  held_bytes_ = 0;
  switch (state_) {
    case State::kFatal:
      return Result::kFatal;
    case State::kOpen:
    case State::kDoomed: {
      const Result result = abortTransaction(producer_);
      moveTo(result == Result::kFatal ? State::kFatal : State::kIdle);
      return result;
    }
    case State::kIdle:
    case State::kRefused:
    case State::kCommitting:
      moveTo(State::kIdle);
      return Result::kAborted;
  }
  return Result::kAborted;
}

}  // namespace fraud::service
