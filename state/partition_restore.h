#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/base/status.h"
#include "detectors/card_ref.h"
#include "state/partition_checkpoint.h"

namespace fraud::state {

class Database;

// One partition's state brought up from the changelog: the card records in changelog order,
// then the checkpoint they reach. Records are buffered in memory and written as a sorted SST
// file (the last record of a card winning) that is ingested into the database: no memtable, no
// flush, and a partition that overlaps nothing on disk lands in the last level, compacted
// already. A file is written whenever the restores together buffer more than
// StateDbOptions::restore_buffer_mb (a later file wins over an earlier one), and at finish().
//
// Crash-safe: an ingested file is on disk before ingestion returns, and the checkpoint is
// written only after the last one. A crash mid-restore leaves the old checkpoint (the next
// restore reads the changelog from it again and rewrites the same cards: applying a stretch
// of the changelog twice gives what applying it once does) or none (the next restore starts
// from scratch and drops the partition's cards first).
// Made by StateDb::beginRestore(). Thread-safety: one thread at a time; restores of distinct
// partitions may run on different threads.
class PartitionRestore {
 public:
  ~PartitionRestore();
  PartitionRestore(const PartitionRestore&) = delete;
  PartitionRestore& operator=(const PartitionRestore&) = delete;

  // The card's state from the changelog (`encoded`), or its erasure. An error (kIoError) when
  // writing a full buffer to disk failed; the restore is then unusable.
  [[nodiscard]] base::Status put(const detectors::CardRef& card_ref, std::string_view encoded);
  [[nodiscard]] base::Status erase(const detectors::CardRef& card_ref);
  // Writes what is buffered, then `checkpoint` when given. An error (kIoError) on failure.
  [[nodiscard]] base::Status finish(const std::optional<PartitionCheckpoint>& checkpoint);

  // Files ingested so far (for tests).
  [[nodiscard]] size_t filesWritten() const { return files_; }

 private:
  friend class StateDb;
  struct Bucket;  // the records of one range of card refs, in arrival order
  class Arena;    // their values

  PartitionRestore(Database& db, int32_t partition, bool from_scratch);
  [[nodiscard]] base::Status add(const detectors::CardRef& card_ref, std::string_view encoded,
                                 bool erased);
  [[nodiscard]] base::Status prepare();
  [[nodiscard]] base::Status writeFile();
  // Writes the buffered records, the last of each card, to a sorted file at `path`: how many
  // (`written`, also on an error).
  [[nodiscard]] base::Status writeSorted(const std::string& path, size_t& written);

  Database& db_;
  int32_t partition_;
  bool from_scratch_;
  bool prepared_ = false;
  bool partition_empty_ = false;  // nothing of the partition on disk: erasures need no tombstone
  std::vector<Bucket> buckets_;
  std::unique_ptr<Arena> arena_;
  size_t records_ = 0;
  int64_t bytes_ = 0;    // buffered now
  int64_t charged_ = 0;  // of which counted in the database's restore total
  size_t files_ = 0;
};

}  // namespace fraud::state
