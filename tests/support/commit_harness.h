// A commit coordinator over a fake transaction sink (fake_sinks.h), with real tasks over a real
// StateDb in a temporary directory: what the commit and rebalance tests share.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "detectors/record_pipeline.h"
#include "service/commit_coordinator.h"
#include "service/config.h"
#include "service/metrics.h"
#include "service/task_manager.h"
#include "tests/support/fake_sinks.h"
#include "tests/support/service_fakes.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service::testing {

class CommitHarness {
 public:
  explicit CommitHarness(CommitCoordinator::Options options = defaultOptions())
      : context_{config, sink, pipeline_, interval, 1'000'000, [] { return int64_t{0}; }},
        tasks(context_, db, input, restorer),
        commits(
            std::move(options), sink, tasks,
            [this](const InputOffsets& o) { offsets_outside.push_back(o); }, nullptr, interval,
            nullptr) {}

  static CommitCoordinator::Options defaultOptions() {
    CommitCoordinator::Options options;
    options.input_topic = "transactions";
    options.changelog_topic = "changelog";
    options.owner = "instance-a";
    options.commit_interval = std::chrono::milliseconds(0);
    return options;
  }

  // Assigns these partitions and completes their restores from an empty checkpoint.
  void activate(const std::vector<int32_t>& partitions) {
    tasks.assign(partitions);
    for (const int32_t p : partitions) {
      restorer.complete(p, restorer.lastTicket(p), state::PartitionCheckpoint{});
    }
    ASSERT_EQ(tasks.activateRestored().size(), partitions.size());
  }

  // One valid record on partition p at offset o (a new country per offset: alerts come).
  void feed(int32_t p, int64_t o) {
    static constexpr const char* kCountries[] = {"FR", "DE", "ES", "IT", "PT", "NL"};
    const std::string value =
        txJson("t" + std::to_string(o), "card-" + std::to_string(p), kCountries[o % 6], 1'000 * o);
    InputRecord record;
    record.offset = o;
    record.key = "card";
    record.value = value;
    ASSERT_NE(tasks.task(p), nullptr);
    ASSERT_EQ(tasks.task(p)->process(record), PartitionTask::Processed::kDone);
    commits.recordProcessed();
  }

  TempStateDb db;
  ServiceConfig config;
  FakeTransactionSink sink;
  IntervalMetrics interval;
  FakeInput input;
  FakeRestorer restorer;
  std::vector<InputOffsets> offsets_outside;  // committed outside the transaction

 private:
  detectors::CardHasher hasher_{kTestKey};
  detectors::RecordPipeline pipeline_{detectors::PipelineOptions{}, hasher_};
  TaskContext context_;

 public:
  TaskManager tasks;
  CommitCoordinator commits;
};

}  // namespace fraud::service::testing
