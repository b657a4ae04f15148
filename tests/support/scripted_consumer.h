// An InputConsumer over an in-memory input topic whose events the test scripts (Kafka's
// MockConsumer): records are fetched from each assigned, unpaused partition's position, round
// robin, one per poll; seeks, pauses and assignments act on those positions as librdkafka's do.
// What would run inside a poll (a rebalance callback) is scripted as actions: one-shot before a
// given record is fetched, or on a poll that finds nothing to fetch (each such poll runs the next
// idle step; with none left, it sets the stop flag). Everything the stream loop asked is recorded.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "service/input_consumer.h"

namespace fraud::service::testing {

class ScriptedConsumer final : public InputConsumer {
 public:
  using Action = std::function<void()>;

  explicit ScriptedConsumer(std::atomic<bool>& stop) : stop_(stop) {}
  ~ScriptedConsumer() override {
    EXPECT_EQ(outstanding_, 0) << "records polled and never released";
  }

  // The input topic: appends a record to partition p (at the next offset).
  void append(int32_t p, std::string value, std::string key = "card") {
    log_[p].push_back(Record{std::move(key), std::move(value)});
  }
  // Runs `action` inside the poll that is about to fetch (p, offset), the first time only.
  void beforeFetch(int32_t p, int64_t offset, Action action) {
    before_fetch_[{p, offset}] = std::move(action);
  }
  // The next poll that finds nothing to fetch runs this (and returns nothing).
  void whenIdle(Action action) { idle_.push_back(std::move(action)); }

  // InputConsumer
  bool poll(int /*timeout_ms*/, PolledInput& polled) override {
    ++polls;
    while (const std::optional<int32_t> p = nextFetchable()) {
      const auto hook = before_fetch_.find({*p, position_[*p]});
      if (hook != before_fetch_.end()) {
        // A callback inside the poll may move positions, pause or unassign: look again.
        const Action action = std::move(hook->second);
        before_fetch_.erase(hook);
        action();
        continue;
      }
      const int64_t offset = position_[*p]++;
      const Record& r = log_[*p][static_cast<size_t>(offset)];
      polled = PolledInput{};
      polled.kind = PolledInput::Kind::kRecord;
      polled.partition = *p;
      polled.record.offset = offset;
      polled.record.key = r.key;
      polled.record.value = r.value;
      polled.record.timestamp_ms = 1'000 * offset;
      polled.create_time = true;
      polled.handle = this;
      ++outstanding_;
      last_partition_ = *p;
      fetched.emplace_back(*p, offset);
      return true;
    }
    if (!nextFetchable()) {
      if (idle_.empty()) {
        stop_.store(true);
      } else {
        const Action action = std::move(idle_.front());
        idle_.pop_front();
        action();
      }
    }
    return false;
  }
  void release(std::span<PolledInput> polled) override {
    for (PolledInput& p : polled) {
      EXPECT_EQ(p.handle, this);
      p.handle = nullptr;
      --outstanding_;
    }
  }
  base::Status fatalError() const override {
    return fatal_error ? base::Status::failed(*fatal_error) : base::Status();
  }
  base::Status unsubscribe() override {
    ++unsubscribes;
    return {};
  }
  void close() override {
    closed = true;
    if (on_close) on_close();
  }
  std::optional<int64_t> cachedHighWatermark(int32_t partition) const override {
    const auto it = log_.find(partition);
    return it == log_.end() ? 0 : static_cast<int64_t>(it->second.size());
  }

  // InputControl
  void pause(const std::vector<int32_t>& partitions) override {
    for (const int32_t p : partitions) paused_.insert(p);
  }
  void resume(int32_t partition) override { paused_.erase(partition); }
  base::Status seek(int32_t partition, int64_t offset) override {
    seeks.emplace_back(partition, offset);
    position_[partition] = offset;
    return {};
  }
  std::map<int32_t, int64_t> startOffsets(const std::vector<int32_t>& partitions) override {
    std::map<int32_t, int64_t> result;
    for (const int32_t p : partitions) result[p] = 0;
    return result;
  }

  // ConsumerAssignment (cooperative)
  bool cooperative() const override { return true; }
  bool assignmentLost() const override { return lost; }
  void incrementalAssign(const std::vector<int32_t>& partitions) override {
    for (const int32_t p : partitions) {
      assigned_.insert(p);
      position_.erase(p);  // fetched only once the task seeks it
    }
  }
  void incrementalUnassign(const std::vector<int32_t>& partitions) override {
    for (const int32_t p : partitions) assigned_.erase(p);
  }
  void assign(const std::vector<int32_t>& partitions) override {
    assigned_.clear();
    incrementalAssign(partitions);
  }
  base::Status subscribe() override {
    ++subscribes;
    if (subscribe_error) return base::Status::failed(*subscribe_error);
    if (on_subscribe) on_subscribe();
    return {};
  }
  base::Status rejoin() override {
    ++rejoins;
    return {};
  }

  [[nodiscard]] bool paused(int32_t p) const { return paused_.contains(p); }
  [[nodiscard]] bool assigned(int32_t p) const { return assigned_.contains(p); }
  [[nodiscard]] int timesFetched(int32_t p, int64_t offset) const {
    int n = 0;
    for (const auto& f : fetched) n += f == std::pair<int32_t, int64_t>{p, offset} ? 1 : 0;
    return n;
  }

  // What the test sets.
  bool lost = false;  // the revocation in progress is a loss
  std::optional<std::string> fatal_error;
  std::optional<std::string> subscribe_error;  // subscribe() refused with this reason
  Action on_subscribe;  // runs inside subscribe() (the first assignment, say)
  Action on_close;      // runs inside close() (the revocation librdkafka runs there)
  // What the test reads.
  std::vector<std::pair<int32_t, int64_t>> fetched;  // every record polled, in order
  std::vector<std::pair<int32_t, int64_t>> seeks;
  int polls = 0;
  int subscribes = 0;
  int unsubscribes = 0;
  int rejoins = 0;
  bool closed = false;

 private:
  struct Record {
    std::string key;
    std::string value;
  };
  // The next partition with a record to fetch, round robin after the last one fetched.
  [[nodiscard]] std::optional<int32_t> nextFetchable() const {
    std::optional<int32_t> first;
    for (const int32_t p : assigned_) {
      if (paused_.contains(p)) continue;
      const auto pos = position_.find(p);
      const auto log = log_.find(p);
      if (pos == position_.end() || log == log_.end() ||
          pos->second >= static_cast<int64_t>(log->second.size())) {
        continue;
      }
      if (p > last_partition_) return p;
      if (!first) first = p;
    }
    return first;
  }

  std::atomic<bool>& stop_;
  std::map<int32_t, std::deque<Record>> log_;  // a deque: polled views stay valid as it grows
  std::map<int32_t, int64_t> position_;        // absent: not fetched until a seek
  std::set<int32_t> assigned_;
  std::set<int32_t> paused_;
  std::map<std::pair<int32_t, int64_t>, Action> before_fetch_;
  std::deque<Action> idle_;
  int32_t last_partition_ = -1;
  int outstanding_ = 0;
};

}  // namespace fraud::service::testing
