#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "state/live_card_store.h"

namespace fraud::state {

class RocksDbPartition;

// One partition's live cards over RocksDB: a LiveCardStore whose storage is the partition's
// RocksDbPartition, written by the database's writer thread (the caller waits for those writes
// only in writeCommitted(), discardChanges() and the destructor; a cache miss reads RocksDB on
// the caller's thread). Made by StateDb::cardStore().
// Not thread-safe: one thread at a time.
class RocksDbCardStore final : public LiveCardStore {
 public:
  ~RocksDbCardStore() override;

  // Full scans of the partition on disk so far, the warm-up included (tests).
  [[nodiscard]] size_t diskScans() const;

 private:
  friend class StateDb;
  RocksDbCardStore(std::unique_ptr<RocksDbPartition> disk, CacheBudget& budget, int32_t partition);

  const RocksDbPartition* disk_;  // owned by LiveCardStore
};

}  // namespace fraud::state
