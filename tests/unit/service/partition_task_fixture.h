// A PartitionTask over a LiveCardStore on memory (the layers the service runs, over a memory
// storage in place of RocksDB), active from the start.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string_view>

#include "service/partition_task.h"
#include "state/live_card_store.h"
#include "tests/support/memory_card_source.h"
#include "tests/support/service_fakes.h"

namespace fraud::service {

inline constexpr int32_t kPartition = 3;

class PartitionTaskTest : public ::testing::Test {
 protected:
  explicit PartitionTaskTest(size_t max_dead_letter_bytes = 1'000'000)
      : harness_(max_dead_letter_bytes), task_(kPartition, harness_.context, 1) {
    budget_.limit = int64_t{16} << 20;
    EXPECT_TRUE(task_.activate(liveStore(), state::PartitionCheckpoint{}, 0));
  }

  // A live store over `storage` (fresh: an empty partition), which storage_ then points to.
  std::unique_ptr<state::LiveCardStore> liveStore(std::unique_ptr<state::MemoryCardSource> storage =
                                                      std::make_unique<state::MemoryCardSource>()) {
    storage_ = storage.get();
    return std::make_unique<state::LiveCardStore>(std::move(storage), budget_, kPartition);
  }

  PartitionTask::Processed feed(int64_t offset, std::optional<std::string_view> value,
                                std::string_view key = "card-0001",
                                std::optional<int64_t> timestamp = std::nullopt) {
    InputRecord record;
    record.offset = offset;
    record.key = key;
    record.value = value;
    record.timestamp_ms = timestamp;
    return task_.process(record);
  }

  state::CacheBudget budget_;                   // outlives the task's store
  state::MemoryCardSource* storage_ = nullptr;  // the task's store's storage ("disk")
  testing::TaskHarness harness_;
  PartitionTask task_;
};

}  // namespace fraud::service
