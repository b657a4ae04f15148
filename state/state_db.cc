#include "state/state_db.h"

#include <rocksdb/write_batch.h>

#include <algorithm>

#include "state/checkpoint_writer.h"
#include "state/database.h"
#include "state/key_layout.h"
#include "state/rocksdb_partition.h"

namespace fraud::state {

StateDb::StateDb(std::unique_ptr<Database> db, int64_t card_cache_budget)
    : db_(std::move(db)), writer_(std::make_unique<CheckpointWriter>(*db_)) {
  card_cache_.limit = card_cache_budget;
}

// The writer finishes its queue before the database flushes its memtables and closes.
StateDb::~StateDb() = default;

base::Result<std::unique_ptr<StateDb>> StateDb::open(const StateDbOptions& options) {
  auto db = Database::open(options);
  if (!db) return db.status();
  return std::unique_ptr<StateDb>(
      new StateDb(std::move(*db), static_cast<int64_t>(options.card_cache_mb) << 20));
}

std::optional<PartitionCheckpoint> StateDb::checkpoint(int32_t partition) {
  const auto value = db_->get(checkpointKey(partition));
  if (!value) return std::nullopt;
  if (const base::Status rejection = PartitionCheckpoint::rejection(*value); !rejection.ok()) {
    throw RejectedCheckpoint("local checkpoint of partition " + std::to_string(partition) +
                             " rejected: " + rejection.message());
  }
  return PartitionCheckpoint::decode(*value);
}

std::unique_ptr<RocksDbCardStore> StateDb::cardStore(int32_t partition) {
  return std::unique_ptr<RocksDbCardStore>(new RocksDbCardStore(
      std::make_unique<RocksDbPartition>(*db_, *writer_, partition), card_cache_, partition));
}

std::unique_ptr<PartitionRestore> StateDb::beginRestore(int32_t partition, bool from_scratch) {
  return std::unique_ptr<PartitionRestore>(new PartitionRestore(*db_, partition, from_scratch));
}

base::Status StateDb::writeRestored(int32_t partition, const std::vector<CardChange>& changes,
                                    const std::optional<PartitionCheckpoint>& checkpoint) {
  // In key order, and only the last change of each card: the changelog holds a card once per
  // commit that changed it, and the memtable's skip list inserts sorted keys with few
  // comparisons (as the checkpoint writer does).
  std::vector<const CardChange*> order;
  order.reserve(changes.size());
  for (const auto& change : changes) order.push_back(&change);
  std::stable_sort(order.begin(), order.end(), [](const CardChange* a, const CardChange* b) {
    return a->card_ref < b->card_ref;
  });
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < order.size(); ++i) {
    const CardChange& change = *order[i];
    if (i + 1 < order.size() && order[i + 1]->card_ref == change.card_ref) continue;  // newer
    const auto key = cardKey(partition, change.card_ref);
    const auto status = change.encoded ? batch.Put(key, *change.encoded) : batch.Delete(key);
    if (!status.ok()) return Database::toStatus(status);
  }
  if (checkpoint) {
    const auto status = batch.Put(checkpointKey(partition), checkpoint->encode());
    if (!status.ok()) return Database::toStatus(status);
  }
  return db_->write(batch);
}

base::Status StateDb::clearPartition(int32_t partition) { return db_->clear(partition); }

uint64_t StateDb::diskBytes() { return db_->diskBytes(); }

uint64_t StateDb::cachedBytes() const {
  return static_cast<uint64_t>(std::max<int64_t>(0, card_cache_.used.load()));
}

void StateDb::setWriteObserver(std::function<void(double seconds)> observer) {
  writer_->setObserver(std::move(observer));
}

}  // namespace fraud::state
