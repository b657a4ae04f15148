#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fraud::state {

struct StateDbOptions {
  std::string dir;              // required; created when missing
  size_t block_cache_mb = 128;  // RocksDB block cache, shared by all partitions. 8..1048576
  size_t write_buffer_mb = 64;  // memtables, charged to the block cache. 4..1048576
  size_t card_cache_mb = 1024;  // decoded card states kept in memory, all partitions. 1..1048576
  // Restored card states buffered in memory, all restores together, before they are written
  // to disk as sorted files. 1..1048576
  size_t restore_buffer_mb = 256;

  // Every problem at once; empty when the options are usable.
  [[nodiscard]] std::vector<std::string> validate() const;
};

}  // namespace fraud::state
