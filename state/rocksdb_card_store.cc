#include "state/rocksdb_card_store.h"

#include "state/rocksdb_partition.h"

namespace fraud::state {

RocksDbCardStore::RocksDbCardStore(std::unique_ptr<RocksDbPartition> disk, CacheBudget& budget,
                                   int32_t partition)
    : LiveCardStore(std::move(disk), budget, partition),
      disk_(&static_cast<const RocksDbPartition&>(storage())) {}

RocksDbCardStore::~RocksDbCardStore() = default;

size_t RocksDbCardStore::diskScans() const { return disk_->scans(); }

}  // namespace fraud::state
