#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/status.h"
#include "detectors/card_store.h"
#include "state/state_db_options.h"

namespace fraud::state {

// Internal (RocksDB types). The instance's RocksDB database: opened with its options and
// memory budget, its format version checked, writes without a write-ahead log, memtables
// flushed at close. Converts RocksDB's status at this edge: reads throw
// detectors::CardStoreError (the CardStore interface's), everything else returns a
// base::Status (kIoError when RocksDB or the disk failed).
// Thread-safety: every method may be called from any thread (rocksdb::DB is thread-safe).
class Database {
 public:
  // The database, or why not (bad directory, unreadable format version, ...).
  [[nodiscard]] static base::Result<std::unique_ptr<Database>> open(const StateDbOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // The value of `key`, or nothing. Throws detectors::CardStoreError when RocksDB fails.
  [[nodiscard]] std::optional<std::string> get(const std::string& key);
  // Visits every key starting with `prefix`, in key order, with its value (valid during the
  // call). Throws detectors::CardStoreError when RocksDB fails.
  template <typename Visit>
  void scan(const std::string& prefix, Visit&& visit);
  // Whether any key starts with `prefix`, or RocksDB's error.
  [[nodiscard]] base::Result<bool> holdsPrefix(const std::string& prefix);

  [[nodiscard]] base::Status write(rocksdb::WriteBatch& batch);
  [[nodiscard]] base::Status put(const std::string& key, const std::string& value);
  // Drops every card and the checkpoint of a partition.
  [[nodiscard]] base::Status clear(int32_t partition);
  // Moves a sorted file (written with sstOptions()) into the database.
  [[nodiscard]] base::Status ingest(const std::string& path);
  // Writes the memtables to disk (without a write-ahead log, only flushed state survives the
  // process). Also done when the database is destroyed.
  [[nodiscard]] base::Status flush();

  // Live SST and memtable bytes.
  [[nodiscard]] uint64_t diskBytes();
  // What restores write their files with, and where: a new path each call.
  [[nodiscard]] const rocksdb::Options& sstOptions() const { return sst_options_; }
  [[nodiscard]] std::string newRestoreFile(int32_t partition);
  // The memory restores buffer together, and its budget (StateDbOptions::restore_buffer_mb).
  [[nodiscard]] std::atomic<int64_t>& restoreBytes() { return restore_bytes_; }
  [[nodiscard]] int64_t restoreBudget() const { return restore_budget_; }

  // RocksDB's status as a message ("RocksDB: ...").
  [[nodiscard]] static std::string describe(const rocksdb::Status& status);
  // RocksDB's status as ours: ok, or kIoError with describe()'s message.
  [[nodiscard]] static base::Status toStatus(const rocksdb::Status& status);

 private:
  Database() = default;
  [[nodiscard]] base::Status checkFormat(const std::string& dir);
  [[nodiscard]] base::Status prepareRestoreDir(const std::string& dir);

  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_options_;
  rocksdb::Options sst_options_;
  std::string restore_dir_;  // emptied at open: files there were never ingested
  std::atomic<uint64_t> restore_files_{0};
  std::atomic<int64_t> restore_bytes_{0};
  int64_t restore_budget_ = 0;
};

template <typename Visit>
void Database::scan(const std::string& prefix, Visit&& visit) {
  rocksdb::ReadOptions read;
  read.fill_cache = false;  // a scan reads the partition once: it must not push out hot blocks
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    visit(std::string_view(it->key().data(), it->key().size()),
          std::string_view(it->value().data(), it->value().size()));
  }
  if (!it->status().ok()) throw detectors::CardStoreError(describe(it->status()));
}

}  // namespace fraud::state
