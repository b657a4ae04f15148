#include "state/database.h"

#include <rocksdb/cache.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <filesystem>

#include "state/key_layout.h"

namespace fraud::state {
namespace {

constexpr std::string_view kFormatVersion = "1";

rocksdb::Options databaseOptions(const StateDbOptions& options) {
  const auto block_cache = rocksdb::NewLRUCache(options.block_cache_mb << 20);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = block_cache;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;

  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  db_options.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(options.write_buffer_mb << 20, block_cache);
  db_options.write_buffer_size = std::max<size_t>(options.write_buffer_mb << 20, 8 << 20) / 4;
  db_options.memtable_prefix_bloom_size_ratio = 0.1;
  db_options.memtable_whole_key_filtering = true;
  // Most card states are overwritten or deleted within minutes: no compression for the young
  // levels, LZ4 for the rest.
  db_options.compression_per_level = {rocksdb::kNoCompression,  rocksdb::kNoCompression,
                                      rocksdb::kLZ4Compression, rocksdb::kLZ4Compression,
                                      rocksdb::kLZ4Compression, rocksdb::kLZ4Compression,
                                      rocksdb::kLZ4Compression};
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 3;
  return db_options;
}

}  // namespace

std::string Database::describe(const rocksdb::Status& status) {
  return "RocksDB: " + status.ToString();
}

base::Status Database::toStatus(const rocksdb::Status& status) {
  if (status.ok()) return {};
  return base::Status::ioError(describe(status));
}

base::Result<std::unique_ptr<Database>> Database::open(const StateDbOptions& options) {
  // RocksDB creates the last directory of the path only. (A path that exists as something
  // else is left for RocksDB to refuse.)
  std::error_code ec;
  if (!std::filesystem::exists(options.dir, ec))
    std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return base::Status::ioError("cannot open state in " + options.dir +
                                 ": cannot create it: " + ec.message());
  }
  std::unique_ptr<Database> database(new Database());
  const rocksdb::Options db_options = databaseOptions(options);
  rocksdb::DB* db = nullptr;
  const auto status = rocksdb::DB::Open(db_options, options.dir, &db);
  if (!status.ok()) {
    return toStatus(status).withPrefix("cannot open state in " + options.dir + ": ");
  }
  database->db_.reset(db);
  // The changelog is the durable copy (see StateDb).
  database->write_options_.disableWAL = true;
  // RocksDB's flush and compaction threads run below the ingest thread. Where the platform
  // refuses (no thread priorities: RocksDB's NotSupported) they run at the normal priority,
  // which is slower ingest under load, not wrong state: the database opens all the same.
  for (const auto pool : {rocksdb::Env::Priority::LOW, rocksdb::Env::Priority::HIGH}) {
    toStatus(rocksdb::Env::Default()->LowerThreadPoolCPUPriority(pool, rocksdb::CpuPriority::kLow))
        .ignoreError();
  }
  // Restored files are read back at once (the card cache is warmed from them) and most of their
  // cards change within minutes: uncompressed, like the young levels.
  database->sst_options_ = db_options;
  database->sst_options_.compression_per_level.clear();
  database->sst_options_.compression = rocksdb::kNoCompression;
  database->restore_budget_ = static_cast<int64_t>(options.restore_buffer_mb) << 20;
  if (auto format = database->checkFormat(options.dir); !format.ok()) return format;
  if (auto restore = database->prepareRestoreDir(options.dir); !restore.ok()) return restore;
  return database;
}

base::Status Database::checkFormat(const std::string& dir) {
  try {
    const auto format = get(std::string(kFormatKey));
    if (format && *format != kFormatVersion) {
      return base::Status::failed(
          "state in " + dir + " has format version " + *format + "; this build reads version " +
          std::string(kFormatVersion) +
          ". Move the directory away: the state is then restored from the changelog topic");
    }
    if (format) return {};
  } catch (const detectors::CardStoreError& e) {
    return base::Status::ioError("cannot read state in " + dir + ": " + e.what());
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->SeekToFirst();
  if (it->Valid()) {
    return base::Status::failed("state in " + dir +
                                " has no format version: it was not written by fraud-detector; "
                                "move it away");
  }
  if (!it->status().ok()) {
    return toStatus(it->status()).withPrefix("cannot read state in " + dir + ": ");
  }
  // Flushed at once: restores ingest files that survive a crash, and the memtable does not.
  auto put = db_->Put(write_options_, kFormatKey, kFormatVersion);
  if (put.ok()) put = db_->Flush(rocksdb::FlushOptions());
  return toStatus(put).withPrefix("cannot initialise state in " + dir + ": ");
}

base::Status Database::prepareRestoreDir(const std::string& dir) {
  restore_dir_ = (std::filesystem::path(dir) / "restore").string();
  // Files left by a restore that a crash interrupted were never ingested: drop them.
  std::error_code ec;
  std::filesystem::remove_all(restore_dir_, ec);
  if (!ec) std::filesystem::create_directories(restore_dir_, ec);
  if (ec) return base::Status::ioError("cannot prepare " + restore_dir_ + ": " + ec.message());
  return {};
}

base::Status Database::flush() { return toStatus(db_->Flush(rocksdb::FlushOptions())); }

Database::~Database() {
  if (db_ == nullptr) return;  // open() failed before RocksDB opened
  // Without a write-ahead log, only flushed memtables survive the process. A failed flush only
  // means a longer restore from the changelog next time (from the last flushed checkpoint).
  flush().ignoreError();
}

std::optional<std::string> Database::get(const std::string& key) {
  std::string value;
  const auto status = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (status.IsNotFound()) return std::nullopt;
  if (!status.ok()) throw detectors::CardStoreError(describe(status));
  return value;
}

base::Result<bool> Database::holdsPrefix(const std::string& prefix) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->Seek(prefix);
  const bool holds = it->Valid() && it->key().starts_with(prefix);
  if (!it->status().ok()) return toStatus(it->status());
  return holds;
}

base::Status Database::write(rocksdb::WriteBatch& batch) {
  return toStatus(db_->Write(write_options_, &batch));
}

base::Status Database::put(const std::string& key, const std::string& value) {
  return toStatus(db_->Put(write_options_, key, value));
}

base::Status Database::clear(int32_t partition) {
  rocksdb::WriteBatch batch;
  auto status =
      batch.DeleteRange(partitionPrefix('C', partition), partitionPrefix('C', partition + 1));
  if (status.ok()) status = batch.Delete(checkpointKey(partition));
  if (!status.ok()) return toStatus(status);
  return write(batch);
}

base::Status Database::ingest(const std::string& path) {
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;
  ingest.write_global_seqno = false;
  return toStatus(db_->IngestExternalFile({path}, ingest));
}

uint64_t Database::diskBytes() {
  uint64_t sst = 0;
  uint64_t memtables = 0;
  // A property RocksDB does not report (it reports both) counts as 0 bytes.
  if (!db_->GetIntProperty("rocksdb.live-sst-files-size", &sst)) sst = 0;
  if (!db_->GetIntProperty("rocksdb.cur-size-all-mem-tables", &memtables)) memtables = 0;
  return sst + memtables;
}

std::string Database::newRestoreFile(int32_t partition) {
  return restore_dir_ + "/partition-" + std::to_string(partition) + "-" +
         std::to_string(restore_files_++) + ".sst";
}

}  // namespace fraud::state
