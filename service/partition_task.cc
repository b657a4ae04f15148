#include "service/partition_task.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <string>

#include "detectors/alert.h"
#include "detectors/base/broken_invariant.h"
#include "detectors/record_headers.h"
#include "service/changelog_format.h"
#include "service/dead_letter.h"

namespace fraud::service {
namespace headers = detectors::headers;
namespace {

// At most one log line per partition per minute about misrouted records (the metric counts
// every one of them).
constexpr int64_t kMisroutedLogEveryMs = 60'000;

// A broken invariant of the commit phase (as the transactional output's lifecycle reports its
// own): fails fast in debug builds; logged and counted in release, where the step is made all
// the same (what commits is still decided by the broker, and an abort rewinds every task).
void bug(std::string_view what) {
  base::countBrokenInvariant(base::Invariant::kTaskCommitPhase);
  spdlog::critical("partition task: bug: {}", what);
  assert(false && "partition task: illegal commit phase step");
}

}  // namespace

bool PartitionTask::isTransitionValid(Phase from, Phase to) {
  using P = Phase;
  // From every phase: a restart (a rebuild, a restore asked for again).
  if (to == P::kRestoring) return true;
  switch (from) {
    case P::kRestoring:
      return to == P::kClean;
    case P::kClean:
      return to == P::kDirty || to == P::kClean;  // kClean: a rewind with nothing to undo
    case P::kDirty:
      return to == P::kDirty || to == P::kPrepared || to == P::kClean;
    case P::kPrepared:
      return to == P::kPreparedDirty || to == P::kClean;
    case P::kPreparedDirty:
      return to == P::kPreparedDirty || to == P::kDirty || to == P::kClean;
  }
  return false;
}

std::string_view PartitionTask::phaseName(Phase phase) {
  switch (phase) {
    case Phase::kRestoring:
      return "restoring";
    case Phase::kClean:
      return "clean";
    case Phase::kDirty:
      return "dirty";
    case Phase::kPrepared:
      return "prepared";
    case Phase::kPreparedDirty:
      return "prepared-dirty";
  }
  return "unknown";
}

void PartitionTask::moveTo(Phase next) {
  const Phase from = phase_.load();
  if (!isTransitionValid(from, next)) {
    bug(fmt::format("partition {}: no step from {} to {}", partition_, phaseName(from),
                    phaseName(next)));
  }
  phase_.store(next);
}

void PartitionTask::closeStore() {
  if (!store_) return;
  if (const base::Status closed = store_->close(); !closed.ok()) {
    // The changelog holds the committed state: the partition's next restore brings it back.
    spdlog::error("partition {}: cannot write the last committed state to local disk: {}",
                  partition_, closed.message());
  }
  store_.reset();
}

PartitionTask::PartitionTask(int32_t partition, const TaskContext& context, uint64_t restore_ticket)
    : partition_(partition),
      context_(context),
      source_partition_(std::to_string(partition)),
      restore_ticket_(restore_ticket) {}

PartitionTask::~PartitionTask() {
  base::MutexLock lock(mu_);
  detector_.reset();  // it reads the store
  closeStore();
}

bool PartitionTask::activate(std::unique_ptr<state::LiveCardStore> store,
                             const state::PartitionCheckpoint& checkpoint,
                             uint64_t restored_records) {
  // The detector's start-up scan reads every card of the partition (from disk when the cache
  // does not hold them all): the first place an unreadable card shows.
  std::unique_ptr<detectors::PartitionDetector> detector;
  try {
    detector = std::make_unique<detectors::PartitionDetector>(context_.config.detector, *store,
                                                              checkpoint.stream_time);
  } catch (const detectors::CardStoreError&) {
    return false;
  }
  base::MutexLock lock(mu_);
  store_ = std::move(store);
  detector_ = std::move(detector);
  committed_.checkpoint = checkpoint;
  next_offset_ = checkpoint.next_offset;
  misrouted_ = committed_.misrouted;
  restored_records_.store(restored_records);
  restore_progress_.store(1);
  moveTo(Phase::kClean);
  return true;
}

void PartitionTask::restart(uint64_t restore_ticket) {
  base::MutexLock lock(mu_);
  moveTo(Phase::kRestoring);
  detector_.reset();
  closeStore();
  restore_ticket_ = restore_ticket;
  restore_progress_.store(0);
}

PartitionTask::Processed PartitionTask::process(const InputRecord& record) {
  if (!active()) return Processed::kSkipped;
  // Whatever the value holds: a misrouted record is processed here all the same (docs/rule.md §9).
  const detectors::KeyRouting routing = routeOf(record);
  const bool misrouted = routing.routing == detectors::Routing::kMisrouted;
  alert_json_.clear();
  detectors::RecordOutcome outcome;
  std::optional<int64_t> stream_time_before;
  {
    // One lock per record: the position it is at, the detector's step and the position it
    // reaches.
    base::MutexLock lock(mu_);
    if (record.offset < next_offset_) return Processed::kSkipped;
    if (record.value) {
      stream_time_before = detector_->streamTime();
      try {
        outcome =
            context_.pipeline.process(*record.value, record.timestamp_ms, *detector_, alert_json_);
      } catch (const detectors::CardStoreError&) {
        // The card store could not read the local state (detectors/card_store.h): what this
        // record did is unknown, so nothing since the last commit may commit. Only the store's
        // failure is caught: a failed send or allocation below is not a store failure.
        return Processed::kStoreFailed;
      }
    }
    next_offset_ = record.offset + 1;
    misrouted_ += misrouted ? 1 : 0;
    if (const Phase now = phase_.load(); now == Phase::kClean) {
      moveTo(Phase::kDirty);
    } else if (now == Phase::kPrepared) {
      moveTo(Phase::kPreparedDirty);
    }
  }
  if (!record.value) {
    // A tombstone is no JSON value at all (docs/rule.md §1: invalid_json).
    context_.interval.tally.outcomes.countRejected(detectors::RejectReason::kInvalidJson);
    reject(record, detectors::RejectReason::kInvalidJson);
    if (misrouted) countMisrouted(record, routing.key_partition);
    return Processed::kDone;
  }
  if (misrouted) countMisrouted(record, routing.key_partition);
  context_.interval.tally.outcomes.count(outcome);
  if (outcome.rejected) {
    reject(record, *outcome.rejected);
    return Processed::kDone;
  }
  if (record.key != outcome.card) ++context_.interval.tally.key_mismatch;
  const int64_t now_ms = context_.wall_clock_ms();
  context_.interval.lateness.observe(
      static_cast<double>(std::max<int64_t>(0, now_ms - outcome.event_time)) / 1000.0);
  if (context_.lateness != nullptr) {
    context_.lateness->observe(
        partition_, stream_time_before, outcome.event_time, record.timestamp_ms,
        outcome.detected.outcome == detectors::Outcome::kLateDropped, now_ms);
  }
  if (outcome.alert_key) {
    const std::string key = outcome.detected.alert->card_ref.hex();
    if (context_.alerts != nullptr) {
      context_.alerts->sendAlert(key, alert_json_,
                                 {{headers::kIdempotencyKey, outcome.alert_key->idempotency_key}});
    } else {
      context_.output.send(context_.config.alerts_topic, kAnyPartition, key, alert_json_,
                           {{headers::kIdempotencyKey, outcome.alert_key->idempotency_key}});
    }
    if (context_.recent_alerts != nullptr) {
      context_.recent_alerts->add(partition_, *outcome.detected.alert, *outcome.alert_key, now_ms);
    }
  }
  return Processed::kDone;
}

detectors::KeyRouting PartitionTask::routeOf(const InputRecord& record) const {
  if (!context_.input_partitioning) return {};
  return detectors::routeKey(*context_.input_partitioning, record.key, partition_);
}

void PartitionTask::countMisrouted(const InputRecord& record, int32_t key_partition) {
  const std::string& topic = context_.config.input_topic;
  context_.interval.tally.countMisrouted(topic, partition_);
  const int64_t now_ms = context_.wall_clock_ms();
  if (misrouted_logged_ms_ && now_ms - *misrouted_logged_ms_ < kMisroutedLogEveryMs) {
    ++misrouted_unlogged_;
    return;
  }
  // Never the key: it is the card.
  spdlog::warn(
      "input {} partition {}: the record at offset {} is misrouted: the {} partitioner "
      "(--partitioner) maps its key to partition {} of {}; processed here, but its card's records "
      "are split between partitions and its rule sees only those of this one (docs/rule.md §9){}",
      topic, partition_, record.offset,
      detectors::partitionerName(context_.input_partitioning->partitioner), key_partition,
      context_.input_partitioning->partition_count,
      misrouted_logged_ms_ ? "; " + std::to_string(misrouted_unlogged_) +
                                 " more misrouted here since the last such line"
                           : std::string());
  misrouted_logged_ms_ = now_ms;
  misrouted_unlogged_ = 0;
}

void PartitionTask::reject(const InputRecord& record, detectors::RejectReason reason) {
  const std::string offset = std::to_string(record.offset);
  const std::string_view reason_name = detectors::rejectReasonName(reason);
  const std::string& topic = context_.config.input_topic;
  const size_t header_bytes = headers::kRejectReason.size() + reason_name.size() +
                              headers::kSourceTopic.size() + topic.size() +
                              headers::kSourcePartition.size() + source_partition_.size() +
                              headers::kSourceOffset.size() + offset.size();
  const DeadLetter letter =
      fitDeadLetter(record.key, record.value, header_bytes, context_.max_dead_letter_bytes);
  if (!letter.truncated) {
    context_.output.send(context_.config.dlq_topic, kAnyPartition, letter.key, letter.value,
                         {{headers::kRejectReason, reason_name},
                          {headers::kSourceTopic, topic},
                          {headers::kSourcePartition, source_partition_},
                          {headers::kSourceOffset, offset}});
    return;
  }
  ++context_.interval.tally.dead_letters_truncated;
  const std::string value_size = std::to_string(letter.original_value_size);
  const std::string key_size = std::to_string(letter.original_key_size);
  context_.output.send(context_.config.dlq_topic, kAnyPartition, letter.key, letter.value,
                       {{headers::kRejectReason, reason_name},
                        {headers::kSourceTopic, topic},
                        {headers::kSourcePartition, source_partition_},
                        {headers::kSourceOffset, offset},
                        {headers::kTruncated, "true"},
                        {headers::kOriginalSize, value_size},
                        {headers::kOriginalKeySize, key_size}});
}

std::optional<InputOffset> PartitionTask::prepareCommit(RecordCollector& output,
                                                        const std::string& changelog_topic) {
  if (!active()) return std::nullopt;
  base::MutexLock lock(mu_);
  // kPreparedDirty is dirty too, but its commit is still in flight: moveTo() reports it.
  if (!dirty()) return std::nullopt;
  for (const auto& change : store_->takeCommitChanges()) {
    output.send(changelog_topic, partition_, change.card_ref.raw(),
                change.encoded ? std::optional<std::string_view>(*change.encoded) : std::nullopt,
                {});
  }
  const state::PartitionCheckpoint checkpoint{next_offset_, detector_->streamTime(), 0};
  output.sendCheckpoint(changelog_topic, partition_, kChangelogCheckpointKey, checkpoint.encode());
  moveTo(Phase::kPrepared);
  prepared_ = Mark{checkpoint, misrouted_};
  return InputOffset{partition_, checkpoint.next_offset};
}

PartitionTask::CommitApplied PartitionTask::markCommitted(
    std::optional<int64_t> checkpoint_record_offset, bool hand_off) {
  CommitApplied applied;
  if (!active()) return applied;
  base::MutexLock lock(mu_);
  const Phase now = phase_.load();
  if (now == Phase::kPrepared || now == Phase::kPreparedDirty) {
    // Without the record's offset, a restore starts where the last known one did.
    const int64_t changelog_next_offset = checkpoint_record_offset
                                              ? *checkpoint_record_offset + 1
                                              : committed_.checkpoint.changelog_next_offset;
    committed_ = prepared_;
    committed_.checkpoint.changelog_next_offset = changelog_next_offset;
    moveTo(now == Phase::kPrepared ? Phase::kClean : Phase::kDirty);
    // The transaction's card changes may go to disk now, with this checkpoint.
    store_->commitSucceeded(committed_.checkpoint);
    applied.committed = InputOffset{partition_, committed_.checkpoint.next_offset};
  }
  if (hand_off) applied.written = store_->handOff();
  return applied;
}

PartitionTask::Rewound PartitionTask::rewind() {
  // A restoring task is on its way to the committed state anyway.
  if (!active()) return Rewound::kDone;
  base::MutexLock lock(mu_);
  moveTo(Phase::kClean);
  misrouted_ = committed_.misrouted;  // the records since are processed (and counted) again
  // Waits for the committed batches to reach disk; false when one could not.
  if (!store_->discardChanges()) return Rewound::kRestore;
  try {
    detector_ = std::make_unique<detectors::PartitionDetector>(context_.config.detector, *store_,
                                                               committed_.checkpoint.stream_time);
  } catch (const detectors::CardStoreError&) {
    return Rewound::kRebuild;
  }
  next_offset_ = committed_.checkpoint.next_offset;
  return Rewound::kDone;
}

base::Status PartitionTask::persist() {
  if (!active()) return {};
  base::MutexLock lock(mu_);
  return store_->writeCommitted();
}

uint64_t PartitionTask::restoreTicket() const {
  base::MutexLock lock(mu_);
  return restore_ticket_;
}

int64_t PartitionTask::nextOffset() const {
  base::MutexLock lock(mu_);
  return next_offset_;
}

bool PartitionTask::dirty() const {
  const Phase now = phase_.load();
  return now == Phase::kDirty || now == Phase::kPreparedDirty;
}

state::PartitionCheckpoint PartitionTask::committed() const {
  base::MutexLock lock(mu_);
  return committed_.checkpoint;
}

std::optional<state::PartitionCheckpoint> PartitionTask::inFlight() const {
  base::MutexLock lock(mu_);
  const Phase now = phase_.load();
  if (now != Phase::kPrepared && now != Phase::kPreparedDirty) return std::nullopt;
  return prepared_.checkpoint;
}

TaskStatus PartitionTask::status(double now_s) const {
  TaskStatus ts;
  ts.partition = partition_;
  base::MutexLock lock(mu_);  // one activation's figures, all of them
  ts.restored_records = restored_records_.load();
  if (!active()) {
    ts.restore_progress = restore_progress_.load();
    return ts;
  }
  ts.active = true;
  ts.restore_progress = 1.0;
  ts.stream_time_ms = detector_->streamTime();
  if (ts.stream_time_ms) {
    ts.event_time_lag_seconds = now_s - static_cast<double>(*ts.stream_time_ms) / 1000.0;
  }
  ts.next_offset = next_offset_;
  ts.cards = store_->cardCount();
  ts.misrouted_records = misrouted_;
  if (const int64_t hw = high_watermark_.load(); hw >= 0) {
    ts.high_watermark = hw;
    ts.offset_lag = std::max<int64_t>(0, hw - next_offset_);
  }
  return ts;
}

HeldCard PartitionTask::lookup(const detectors::CardRef& card_ref) const {
  state::CardStateCopy copy;  // allocated here, not under the lock
  for (;;) {
    Peek peek;
    {
      base::MutexLock lock(mu_);
      peek = peekLocked(card_ref, copy, /*read_through=*/true);
    }
    if (peek.kind != Peek::Kind::kTooLarge) return heldCard(peek, copy);
    copy.reserve(copy.needed());  // and again: the card may have changed meanwhile
  }
}

std::optional<HeldCard> PartitionTask::tryLookupCached(const detectors::CardRef& card_ref,
                                                       state::CardStateCopy& copy) const {
  // try_lock on the Mutex itself: a MutexLock always waits.
  if (!mu_.try_lock()) return std::nullopt;
  Peek peek;
  try {
    peek = peekLocked(card_ref, copy, /*read_through=*/false);
  } catch (...) {
    mu_.unlock();
    throw;
  }
  mu_.unlock();
  if (peek.kind == Peek::Kind::kNotCached || peek.kind == Peek::Kind::kTooLarge) {
    return std::nullopt;
  }
  return heldCard(peek, copy);
}

PartitionTask::Peek PartitionTask::peekLocked(const detectors::CardRef& card_ref,
                                              state::CardStateCopy& copy, bool read_through) const {
  if (!active()) return {Peek::Kind::kRestoring, std::nullopt};
  const detectors::CardState* state = nullptr;
  if (read_through) {
    try {
      state = store_->find(card_ref);
    } catch (const detectors::CardStoreError&) {
      // Unreadable local state: the ingest thread rebuilds the partition when it meets it.
      return {Peek::Kind::kRestoring, std::nullopt};
    }
  } else {
    const state::CardCache::Cached cached = store_->findCached(card_ref);  // never reads disk
    if (cached.kind == state::CardCache::Cached::Kind::kUnknown) {
      return {Peek::Kind::kNotCached, std::nullopt};
    }
    state = cached.state;
  }
  if (state == nullptr) return {Peek::Kind::kNotFound, std::nullopt};
  if (!copy.capture(*state)) return {Peek::Kind::kTooLarge, std::nullopt};
  return {Peek::Kind::kFound, detector_->streamTime()};
}

HeldCard PartitionTask::heldCard(const Peek& peek, const state::CardStateCopy& copy) {
  if (peek.kind == Peek::Kind::kNotFound) {
    return {HeldCard::Outcome::kNotFound, std::nullopt, std::nullopt};
  }
  if (peek.kind == Peek::Kind::kFound) {
    if (auto state = copy.state()) {
      return {HeldCard::Outcome::kFound, std::move(*state), peek.stream_time_ms};
    }
  }
  // Restoring, or a state the codec cannot read back (the store could not hold it either).
  return {HeldCard::Outcome::kRestoring, std::nullopt, std::nullopt};
}

uint64_t PartitionTask::cardCount() const {
  base::MutexLock lock(mu_);
  return active() ? store_->cardCount() : 0;
}

}  // namespace fraud::service
