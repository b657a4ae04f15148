// Fakes for the service's units: the input consumer, the changelog restorer and the output,
// recorded so tests can assert what the units asked of them; what a PartitionTask needs. All in
// memory (a real StateDb for the component tests: temp_state_db.h).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/record_codec.h"
#include "detectors/record_pipeline.h"
#include "service/config.h"
#include "service/metrics.h"
#include "service/partition_task.h"
#include "service/record_collector.h"
#include "service/restore_queue.h"
#include "service/task_manager.h"

namespace fraud::service::testing {

class FakeInput final : public InputControl {
 public:
  void pause(const std::vector<int32_t>& partitions) override {
    for (const int32_t p : partitions) paused[p] = true;
  }
  void resume(int32_t partition) override { paused[partition] = false; }
  base::Status seek(int32_t partition, int64_t offset) override {
    if (fail_seeks) return base::Status::failed("Local: Erroneous state");
    seeks.emplace_back(partition, offset);
    return {};
  }
  std::map<int32_t, int64_t> startOffsets(const std::vector<int32_t>& partitions) override {
    ++start_offset_queries;
    std::map<int32_t, int64_t> result;
    if (unanswered_start_offsets > 0) {
      --unanswered_start_offsets;
      return result;
    }
    for (const int32_t p : partitions) result[p] = start_offset;
    return result;
  }

  std::map<int32_t, bool> paused;
  std::vector<std::pair<int32_t, int64_t>> seeks;
  int64_t start_offset = 0;
  int unanswered_start_offsets = 0;  // this many startOffsets() calls answer nothing
  int start_offset_queries = 0;
  bool fail_seeks = false;
};

class FakeRestorer final : public RestoreQueue {
 public:
  void enqueue(const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) override {
    for (const auto& pt : partition_tickets) queued.push_back(pt);
  }
  void cancel(int32_t partition) override { cancelled.push_back(partition); }
  std::vector<RestoreResult> takeCompleted() override { return std::exchange(completed, {}); }
  std::optional<double> progress(int32_t) const override { return std::nullopt; }

  // Completes the restore queued under `ticket` (with `checkpoint`, none: a new partition).
  void complete(int32_t partition, uint64_t ticket,
                std::optional<state::PartitionCheckpoint> checkpoint = std::nullopt) {
    RestoreResult result;
    result.partition = partition;
    result.ticket = ticket;
    result.checkpoint = checkpoint;
    completed.push_back(std::move(result));
  }
  // Ends the restore queued under `ticket` with an error.
  void fail(int32_t partition, uint64_t ticket, const std::string& error) {
    RestoreResult result;
    result.partition = partition;
    result.ticket = ticket;
    result.error = base::Status::failed(error);
    completed.push_back(std::move(result));
  }
  [[nodiscard]] uint64_t lastTicket(int32_t partition) const {
    for (auto it = queued.rbegin(); it != queued.rend(); ++it) {
      if (it->first == partition) return it->second;
    }
    return 0;
  }

  std::vector<std::pair<int32_t, uint64_t>> queued;
  std::vector<int32_t> cancelled;
  std::vector<RestoreResult> completed;
};

struct SentRecord {
  std::string topic;
  int32_t partition;
  std::string key;
  std::optional<std::string> value;
  std::map<std::string, std::string> headers;
};

class RecordingCollector final : public RecordCollector {
 public:
  void send(const std::string& topic, int32_t partition, std::string_view key,
            std::optional<std::string_view> value, std::initializer_list<Header> headers) override {
    SentRecord& r = sent.emplace_back();
    r.topic = topic;
    r.partition = partition;
    r.key = key;
    if (value) r.value = std::string(*value);
    for (const auto& h : headers) r.headers[std::string(h.name)] = std::string(h.value);
    ++next_offset;  // every record takes an offset, as on a topic
  }
  void sendCheckpoint(const std::string& topic, int32_t partition, std::string_view key,
                      std::string_view value) override {
    checkpoint_offsets[partition] = next_offset;
    send(topic, partition, key, value, {});
  }
  [[nodiscard]] std::vector<SentRecord> on(const std::string& topic) const {
    std::vector<SentRecord> result;
    for (const auto& r : sent) {
      if (r.topic == topic) result.push_back(r);
    }
    return result;
  }

  std::vector<SentRecord> sent;
  int64_t next_offset = 0;
  std::map<int32_t, int64_t> checkpoint_offsets;  // the last checkpoint record's, by partition
};

inline constexpr std::string_view kTestKey = "0123456789abcdef0123456789abcdef-test-key";

// Everything a PartitionTask needs, owned in one place.
struct TaskHarness {
  explicit TaskHarness(size_t max_dead_letter_bytes = 1'000'000)
      : hasher(kTestKey),
        pipeline(detectors::PipelineOptions{config.max_future_skew_ms, nullptr}, hasher),
        context{config, output, pipeline, interval, max_dead_letter_bytes, [] {
                  return int64_t{1'700'000'000'000};
                }} {}

  ServiceConfig config;
  detectors::CardHasher hasher;
  detectors::RecordPipeline pipeline;
  RecordingCollector output;
  IntervalMetrics interval;
  TaskContext context;
};

inline std::string txJson(std::string_view tx_id, std::string_view card, std::string_view country,
                          int64_t event_time) {
  return std::string(R"({"tx_id":")") + std::string(tx_id) + R"(","card":")" + std::string(card) +
         R"(","country":")" + std::string(country) + R"(","event_time":)" +
         std::to_string(event_time) + "}";
}

}  // namespace fraud::service::testing
