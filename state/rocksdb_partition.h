#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "state/card_cache.h"
#include "state/change_log.h"
#include "state/live_card_store.h"

namespace fraud::state {

class CheckpointWriter;
class Database;
struct WriteProgress;

// Internal. The RocksDB store of one partition, the PartitionStorage under its card cache and
// change log: reads its encoded cards from the database (CardSource), and writes committed
// batches through the instance's writer thread (CommittedBatchSink), so the caller never waits
// for a write but in waitWritten(); reads run on the caller's thread. Reads throw
// detectors::CardStoreError when RocksDB fails.
// Thread-safety: one thread at a time calls it; the writer thread reports progress. The service
// runs no thread per partition: the store above is built on fd-warmer (on the ingest thread when
// the warmer could not), then driven by the ingest thread and read by the HTTP threads (a cache
// miss reads through), under PartitionTask::mu_.
class RocksDbPartition final : public PartitionStorage {
 public:
  RocksDbPartition(Database& db, CheckpointWriter& writer, int32_t partition);
  ~RocksDbPartition() override;
  RocksDbPartition(const RocksDbPartition&) = delete;
  RocksDbPartition& operator=(const RocksDbPartition&) = delete;

  [[nodiscard]] std::optional<std::string> read(const detectors::CardRef& card_ref) override;
  void scan(const std::function<void(const detectors::CardRef&, std::string_view)>& visit) override;

  void write(std::unique_ptr<CommittedBatch> batch) override;
  [[nodiscard]] uint64_t written() const override;
  [[nodiscard]] base::Status waitWritten(uint64_t seq) override;
  [[nodiscard]] base::Status writeStatus() const override;

  // Full scans of the partition so far (tests).
  [[nodiscard]] size_t scans() const { return scans_; }

 private:
  Database& db_;
  CheckpointWriter& writer_;
  int32_t partition_;
  std::shared_ptr<WriteProgress> progress_;  // shared with the writer thread
  size_t scans_ = 0;
};

}  // namespace fraud::state
