#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "detectors/base/status.h"

namespace fraud::state {

struct StateDbOptions {
  std::string dir;              // required; created when missing, with its parents
  size_t block_cache_mb = 128;  // RocksDB block cache, shared by all partitions. 8..1048576
  size_t write_buffer_mb = 64;  // memtables, charged to the block cache. 4..1048576
  size_t card_cache_mb = 1024;  // decoded card states kept in memory, all partitions. 1..1048576
  // Restored card states buffered in memory, all restores together, before they are written
  // to disk as sorted files. 1..1048576
  size_t restore_buffer_mb = 256;

  // Every problem at once; empty when the options are usable. Looks at the values only.
  [[nodiscard]] std::vector<std::string> validate() const;
  // Whether `dir` can hold the state, asked of the file system: it is a directory, or a path
  // that can be created as one, and this process can create files in it (or in the nearest
  // directory above it that exists). The check creates a probe file there and removes it, which
  // holds for any user, root included (whom permission bits do not stop, but a read-only mount
  // does); nothing is left behind. An error naming the path, or ok (also for an empty `dir`,
  // which validate() reports).
  [[nodiscard]] base::Status checkDir() const;
};

}  // namespace fraud::state
