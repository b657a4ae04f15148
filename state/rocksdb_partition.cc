#include "state/rocksdb_partition.h"

#include "state/checkpoint_writer.h"
#include "state/database.h"
#include "state/key_layout.h"

namespace fraud::state {

RocksDbPartition::RocksDbPartition(Database& db, CheckpointWriter& writer, int32_t partition)
    : db_(db),
      writer_(writer),
      partition_(partition),
      progress_(std::make_shared<WriteProgress>()) {}

RocksDbPartition::~RocksDbPartition() = default;

std::optional<std::string> RocksDbPartition::read(const detectors::CardRef& card_ref) {
  return db_.get(cardKey(partition_, card_ref));
}

void RocksDbPartition::scan(
    const std::function<void(const detectors::CardRef&, std::string_view)>& visit) {
  ++scans_;
  db_.scan(partitionPrefix('C', partition_),
           [&](std::string_view key, std::string_view value) { visit(cardOfKey(key), value); });
}

void RocksDbPartition::write(std::unique_ptr<CommittedBatch> batch) {
  writer_.submit(progress_, partition_, std::move(batch));
}

uint64_t RocksDbPartition::written() const { return progress_->written.load(); }

base::Status RocksDbPartition::waitWritten(uint64_t seq) {
  WriteProgress& progress = *progress_;
  base::MutexLock lock(progress.mu);
  while (progress.error.ok() && progress.written.load() < seq) lock.wait(progress.cv);
  return progress.error;
}

base::Status RocksDbPartition::writeStatus() const {
  WriteProgress& progress = *progress_;
  base::MutexLock lock(progress.mu);
  return progress.error;
}

}  // namespace fraud::state
