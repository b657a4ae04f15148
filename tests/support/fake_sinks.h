// Fakes of the commit's sinks (service/transaction_sink.h), in memory: a transaction sink whose
// commits finish as the test scripts them, and an alert sink that records what it is sent.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "service/transaction_sink.h"
#include "tests/support/service_fakes.h"

namespace fraud::service::testing {

class FakeTransactionSink final : public TransactionSink {
 public:
  void send(const std::string& topic, int32_t partition, std::string_view key,
            std::optional<std::string_view> value, std::initializer_list<Header> headers) override {
    (committing_ ? held : open).send(topic, partition, key, value, headers);
  }
  void sendCheckpoint(const std::string& topic, int32_t partition, std::string_view key,
                      std::string_view value) override {
    (committing_ ? held : open).sendCheckpoint(topic, partition, key, value);
  }

  [[nodiscard]] bool hasOpenWork() const override {
    return !open.sent.empty() || !held.sent.empty();
  }
  [[nodiscard]] bool committing() const override { return committing_; }
  [[nodiscard]] size_t heldBytes() const override {
    size_t bytes = 0;
    for (const auto& r : held.sent) bytes += r.key.size() + (r.value ? r.value->size() : 0);
    return bytes;
  }
  [[nodiscard]] bool blocked() const override { return blocked_; }

  void startCommit(InputOffsets offsets) override {
    committing_ = true;
    commits.push_back(std::move(offsets));
    in_flight_ = std::exchange(open, {});
  }
  // The next scripted result (kCommitted when none is scripted); while `hold_commits`, nothing
  // unless the caller waits.
  [[nodiscard]] std::optional<FinishedCommit> finishCommit(bool wait) override {
    if (!committing_ || (hold_commits && !wait)) return std::nullopt;
    committing_ = false;
    FinishedCommit finished;
    if (!results.empty())
      finished.result = results.front(), results.pop_front();
    else
      finished.result = TransactionResult::kCommitted;
    if (finished.result == TransactionResult::kCommitted) {
      // The checkpoint records land after what the topic already held.
      for (const auto& [p, offset] : in_flight_.checkpoint_offsets) {
        finished.checkpoint_offsets[p] = changelog_base + offset;
      }
      changelog_base += in_flight_.next_offset;
      committed.insert(committed.end(), in_flight_.sent.begin(), in_flight_.sent.end());
      blocked_ = false;
      open = std::exchange(held, {});
    } else {
      blocked_ = finished.result == TransactionResult::kAborted;
      held = {};
    }
    in_flight_ = {};
    return finished;
  }
  [[nodiscard]] TransactionResult abort(bool outputs_failed) override {
    ++aborts;
    blocked_ = blocked_ || outputs_failed;
    open = {};
    held = {};
    return abort_result;
  }
  void serveDeliveries() override { ++served; }
  void drain(int timeout_ms) override {
    ++drained;
    drain_timeout_ms = timeout_ms;
  }
  void discardQueued() override { ++discarded; }

  // What the test sets.
  std::deque<TransactionResult> results;  // of the next commits, in order
  bool hold_commits = false;              // a commit finishes only when waited for
  TransactionResult abort_result = TransactionResult::kAborted;
  // What the test reads.
  RecordingCollector open;            // the open transaction's records
  RecordingCollector held;            // sent while a commit was in flight
  std::vector<SentRecord> committed;  // every committed record, in order
  std::vector<InputOffsets> commits;  // each startCommit()'s offsets
  int64_t changelog_base = 0;         // offsets the committed records took
  int aborts = 0;
  int served = 0;
  int drained = 0;
  int drain_timeout_ms = -1;  // the last drain's
  int discarded = 0;

 private:
  bool committing_ = false;
  bool blocked_ = false;
  RecordingCollector in_flight_;
};

class RecordingAlertSink final : public AlertSink {
 public:
  struct Alert {
    std::string key;
    std::string value;
    std::map<std::string, std::string> headers;
  };
  void sendAlert(std::string_view key, std::string_view value,
                 std::initializer_list<RecordCollector::Header> headers) override {
    Alert& a = alerts.emplace_back();
    a.key = key;
    a.value = value;
    for (const auto& h : headers) a.headers[std::string(h.name)] = std::string(h.value);
  }
  void serveDeliveries() override { ++served; }

  std::vector<Alert> alerts;
  int served = 0;
};

}  // namespace fraud::service::testing
