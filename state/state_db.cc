#include "state/state_db.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

#include "state/card_state_codec.h"

namespace fraud::state {

using detectors::CardRef;
using detectors::CardState;

// Key layout (one keyspace):
//   "F"                         -> state format version (decimal text)
//   'C' be32(partition) ref[32] -> encoded CardState
//   'P' be32(partition)         -> encoded PartitionCheckpoint
namespace {

constexpr std::string_view kFormatKey = "F";
constexpr std::string_view kFormatVersion = "1";
constexpr uint8_t kCheckpointFormat = 1;
// A cache slot (key, flags, CardState) at the map's load factor.
constexpr size_t kEntryOverhead = 200;

std::string partitionPrefix(char tag, int32_t partition) {
  std::string key(1, tag);
  const auto p = static_cast<uint32_t>(partition);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(p >> shift));
  return key;
}

std::string cardKey(int32_t partition, const CardRef& ref) {
  std::string key = partitionPrefix('C', partition);
  key.append(ref.raw());
  return key;
}

std::string checkpointKey(int32_t partition) { return partitionPrefix('P', partition); }

void putFixed64(std::string& out, int64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
}

int64_t getFixed64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

size_t bytesOf(const CardState& state) { return kEntryOverhead + state.allocatedBytes(); }

std::string describe(const rocksdb::Status& status) { return "RocksDB: " + status.ToString(); }

}  // namespace

std::vector<std::string> StateDbOptions::validate() const {
  std::vector<std::string> problems;
  if (dir.empty()) problems.emplace_back("state dir must not be empty");
  if (block_cache_mb < 8 || block_cache_mb > 1'048'576) {
    problems.push_back("rocksdb block cache must be 8..1048576 MiB, got " +
                       std::to_string(block_cache_mb));
  }
  if (write_buffer_mb < 4 || write_buffer_mb > 1'048'576) {
    problems.push_back("rocksdb write buffer must be 4..1048576 MiB, got " +
                       std::to_string(write_buffer_mb));
  }
  if (card_cache_mb < 1 || card_cache_mb > 1'048'576) {
    problems.push_back("state cache must be 1..1048576 MiB, got " + std::to_string(card_cache_mb));
  }
  return problems;
}

std::string PartitionCheckpoint::encode() const {
  std::string out(1, static_cast<char>(kCheckpointFormat));
  putFixed64(out, next_offset);
  out.push_back(stream_time ? '\1' : '\0');
  putFixed64(out, stream_time.value_or(0));
  putFixed64(out, changelog_next_offset);
  return out;
}

std::optional<PartitionCheckpoint> PartitionCheckpoint::decode(std::string_view bytes) {
  if (bytes.size() != 26 || static_cast<uint8_t>(bytes[0]) != kCheckpointFormat ||
      static_cast<uint8_t>(bytes[9]) > 1) {
    return std::nullopt;
  }
  PartitionCheckpoint checkpoint;
  checkpoint.next_offset = getFixed64(bytes.substr(1));
  if (bytes[9] == '\1') checkpoint.stream_time = getFixed64(bytes.substr(10));
  checkpoint.changelog_next_offset = getFixed64(bytes.substr(18));
  return checkpoint;
}

struct StateDb::Impl {
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::WriteOptions write_options;
  std::atomic<int64_t> cached_bytes{0};
  int64_t card_cache_budget = 0;

  [[nodiscard]] std::optional<std::string> get(const std::string& key) {
    std::string value;
    const auto status = db->Get(rocksdb::ReadOptions(), key, &value);
    if (status.IsNotFound()) return std::nullopt;
    if (!status.ok()) throw std::runtime_error(describe(status));
    return value;
  }

  template <typename Visit>
  void scan(const std::string& prefix, Visit&& visit) {
    rocksdb::ReadOptions read;
    read.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      visit(std::string_view(it->key().data(), it->key().size()),
            std::string_view(it->value().data(), it->value().size()));
    }
    if (!it->status().ok()) throw std::runtime_error(describe(it->status()));
  }
};

StateDb::StateDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StateDb::~StateDb() {
  // Without a write-ahead log, only flushed memtables survive the process.
  const auto status = impl_->db->Flush(rocksdb::FlushOptions());
  (void)status;  // a failed flush only means a longer restore from the changelog next time
}

std::unique_ptr<StateDb> StateDb::open(const StateDbOptions& options, std::string& error) {
  auto impl = std::make_unique<Impl>();
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

  rocksdb::DB* db = nullptr;
  const auto status = rocksdb::DB::Open(db_options, options.dir, &db);
  if (!status.ok()) {
    error = "cannot open state in " + options.dir + ": " + describe(status);
    return nullptr;
  }
  impl->db.reset(db);
  impl->write_options.disableWAL = true;
  impl->card_cache_budget = static_cast<int64_t>(options.card_cache_mb) << 20;

  try {
    const auto format = impl->get(std::string(kFormatKey));
    if (!format) {
      std::unique_ptr<rocksdb::Iterator> it(impl->db->NewIterator(rocksdb::ReadOptions()));
      it->SeekToFirst();
      if (it->Valid()) {
        error = "state in " + options.dir +
                " has no format version: it was not written by fraud-detector; move it away";
        return nullptr;
      }
      const auto put = impl->db->Put(impl->write_options, kFormatKey, kFormatVersion);
      if (!put.ok()) {
        error = "cannot initialise state in " + options.dir + ": " + describe(put);
        return nullptr;
      }
    } else if (*format != kFormatVersion) {
      error = "state in " + options.dir + " has format version " + *format +
              "; this build reads version " + std::string(kFormatVersion) +
              ". Move the directory away: the state is then restored from the changelog topic";
      return nullptr;
    }
  } catch (const std::runtime_error& e) {
    error = "cannot read state in " + options.dir + ": " + e.what();
    return nullptr;
  }
  return std::unique_ptr<StateDb>(new StateDb(std::move(impl)));
}

std::optional<PartitionCheckpoint> StateDb::checkpoint(int32_t partition) {
  const auto value = impl_->get(checkpointKey(partition));
  if (!value) return std::nullopt;
  auto checkpoint = PartitionCheckpoint::decode(*value);
  if (!checkpoint) {
    throw std::runtime_error("unreadable checkpoint of partition " + std::to_string(partition));
  }
  return checkpoint;
}

std::unique_ptr<RocksDbCardStore> StateDb::cardStore(int32_t partition) {
  return std::make_unique<RocksDbCardStore>(*impl_, partition);
}

std::optional<std::string> StateDb::writeRestored(
    int32_t partition, const std::vector<CardChange>& changes,
    const std::optional<PartitionCheckpoint>& checkpoint) {
  rocksdb::WriteBatch batch;
  for (const auto& change : changes) {
    const auto key = cardKey(partition, change.card_ref);
    const auto status = change.encoded ? batch.Put(key, *change.encoded) : batch.Delete(key);
    if (!status.ok()) return describe(status);
  }
  if (checkpoint) {
    const auto status = batch.Put(checkpointKey(partition), checkpoint->encode());
    if (!status.ok()) return describe(status);
  }
  const auto status = impl_->db->Write(impl_->write_options, &batch);
  if (!status.ok()) return describe(status);
  return std::nullopt;
}

std::optional<std::string> StateDb::clearPartition(int32_t partition) {
  rocksdb::WriteBatch batch;
  auto status =
      batch.DeleteRange(partitionPrefix('C', partition), partitionPrefix('C', partition + 1));
  if (status.ok()) status = batch.Delete(checkpointKey(partition));
  if (status.ok()) status = impl_->db->Write(impl_->write_options, &batch);
  if (!status.ok()) return describe(status);
  return std::nullopt;
}

uint64_t StateDb::diskBytes() {
  uint64_t sst = 0;
  uint64_t memtables = 0;
  impl_->db->GetIntProperty("rocksdb.live-sst-files-size", &sst);
  impl_->db->GetIntProperty("rocksdb.cur-size-all-mem-tables", &memtables);
  return sst + memtables;
}

uint64_t StateDb::cachedBytes() const {
  return static_cast<uint64_t>(std::max<int64_t>(0, impl_->cached_bytes.load()));
}

RocksDbCardStore::RocksDbCardStore(StateDb::Impl& db, int32_t partition)
    : db_(db), partition_(partition) {
  // Warm the cache with the whole partition while it fits: a complete cache answers every
  // lookup, so RocksDB is only written to, until the first eviction.
  db_.scan(partitionPrefix('C', partition_), [&](std::string_view key, std::string_view value) {
    ++card_count_;
    if (!complete_) return;
    if (db_.cached_bytes.load() > db_.card_cache_budget / 10 * 9) {
      complete_ = false;
      return;
    }
    auto state = decodeCardState(value);
    if (!state) {
      throw std::runtime_error("unreadable card state in partition " + std::to_string(partition_));
    }
    CardRef ref;
    std::memcpy(ref.bytes.data(), key.data() + 5, ref.bytes.size());
    bool inserted = false;
    Entry& entry = cache_.insert(ref, inserted);
    entry.state = std::move(*state);
    entry.referenced = false;
    charge(entry, bytesOf(entry.state));
  });
  persisted_card_count_ = card_count_;
}

RocksDbCardStore::~RocksDbCardStore() {
  cache_.forEachMutable([this](const CardRef&, Entry& entry) { charge(entry, 0); });
}

void RocksDbCardStore::charge(Entry& entry, size_t bytes) {
  db_.cached_bytes += static_cast<int64_t>(bytes) - static_cast<int64_t>(entry.bytes);
  entry.bytes = bytes;
}

void RocksDbCardStore::markChanged(const CardRef& card_ref, Entry& entry) {
  if (!entry.commit_changed) {
    entry.commit_changed = true;
    commit_changed_.push_back(card_ref);
  }
  if (!entry.persist_changed) {
    entry.persist_changed = true;
    persist_changed_.push_back(card_ref);
  }
}

RocksDbCardStore::Entry* RocksDbCardStore::load(const CardRef& card_ref) {
  if (Entry* entry = cache_.find(card_ref)) {
    entry->referenced = true;
    return entry;
  }
  if (complete_) return nullptr;
  const auto value = db_.get(cardKey(partition_, card_ref));
  if (!value) return nullptr;
  auto state = decodeCardState(*value);
  if (!state) {
    throw std::runtime_error("unreadable card state in partition " + std::to_string(partition_));
  }
  bool inserted = false;
  Entry& entry = cache_.insert(card_ref, inserted);
  entry.state = std::move(*state);
  charge(entry, bytesOf(entry.state));
  return &entry;
}

const CardState* RocksDbCardStore::find(const CardRef& card_ref) {
  const Entry* entry = load(card_ref);
  return entry == nullptr || entry->erased ? nullptr : &entry->state;
}

CardState& RocksDbCardStore::modify(const CardRef& card_ref) {
  Entry* entry = load(card_ref);
  if (entry == nullptr) {
    bool inserted = false;
    entry = &cache_.insert(card_ref, inserted);
    charge(*entry, kEntryOverhead);
    ++card_count_;
  } else if (entry->erased) {
    entry->erased = false;
    ++card_count_;
  }
  markChanged(card_ref, *entry);
  return entry->state;
}

void RocksDbCardStore::erase(const CardRef& card_ref) {
  Entry* entry = load(card_ref);
  if (entry == nullptr || entry->erased) return;
  entry->erased = true;
  entry->state = CardState{};
  --card_count_;
  markChanged(card_ref, *entry);
}

void RocksDbCardStore::forEach(const std::function<void(const CardRef&, const CardState&)>& visit) {
  db_.scan(partitionPrefix('C', partition_), [&](std::string_view key, std::string_view value) {
    CardRef ref;
    std::memcpy(ref.bytes.data(), key.data() + 5, ref.bytes.size());
    if (const Entry* entry = cache_.find(ref); entry != nullptr && entry->persist_changed) {
      return;  // visited from the cache below
    }
    const auto state = decodeCardState(value);
    if (!state) {
      throw std::runtime_error("unreadable card state in partition " + std::to_string(partition_));
    }
    visit(ref, *state);
  });
  for (const auto& ref : persist_changed_) {
    const Entry* entry = cache_.find(ref);
    if (!entry->erased) visit(ref, entry->state);
  }
}

std::vector<CardChange> RocksDbCardStore::takeCommitChanges() {
  std::vector<CardChange> changes;
  changes.reserve(commit_changed_.size());
  for (const auto& ref : commit_changed_) {
    Entry* entry = cache_.find(ref);
    entry->commit_changed = false;
    changes.push_back(CardChange{
        ref, entry->erased ? std::nullopt : std::optional(encodeCardState(entry->state))});
  }
  commit_changed_.clear();
  return changes;
}

std::optional<std::string> RocksDbCardStore::persist(const PartitionCheckpoint& checkpoint) {
  rocksdb::WriteBatch batch;
  std::string value;
  for (const auto& ref : persist_changed_) {
    const Entry* entry = cache_.find(ref);
    const auto key = cardKey(partition_, ref);
    rocksdb::Status status;
    if (entry->erased) {
      status = batch.Delete(key);
    } else {
      value.clear();
      encodeCardState(entry->state, value);
      status = batch.Put(key, value);
    }
    if (!status.ok()) return describe(status);
  }
  if (const auto status = batch.Put(checkpointKey(partition_), checkpoint.encode()); !status.ok()) {
    return describe(status);
  }
  if (const auto status = db_.db->Write(db_.write_options, &batch); !status.ok()) {
    return describe(status);
  }
  for (const auto& ref : persist_changed_) {
    Entry* entry = cache_.find(ref);
    entry->persist_changed = false;
    if (entry->erased && !entry->commit_changed) {
      charge(*entry, 0);
      cache_.erase(ref);
    } else {
      charge(*entry, bytesOf(entry->state));
    }
  }
  persist_changed_.clear();
  persisted_card_count_ = card_count_;
  evictIfOverBudget();
  return std::nullopt;
}

void RocksDbCardStore::discardChanges() {
  for (const auto& ref : persist_changed_) {
    if (Entry* entry = cache_.find(ref)) {
      charge(*entry, 0);
      cache_.erase(ref);
      complete_ = false;  // the persisted version, if any, is on disk only now
    }
  }
  persist_changed_.clear();
  commit_changed_.clear();
  card_count_ = persisted_card_count_;
}

void RocksDbCardStore::evictIfOverBudget() {
  // CLOCK: a clean entry used since the last sweep gets a second chance.
  const int64_t target = db_.card_cache_budget / 10 * 9;
  for (int pass = 0; pass < 2 && db_.cached_bytes.load() > db_.card_cache_budget; ++pass) {
    int64_t excess = db_.cached_bytes.load() - target;
    std::vector<CardRef> victims;
    cache_.forEachMutable([&](const CardRef& ref, Entry& entry) {
      if (excess <= 0 || entry.persist_changed) return;
      if (entry.referenced) {
        entry.referenced = false;
        return;
      }
      victims.push_back(ref);
      excess -= static_cast<int64_t>(entry.bytes);
    });
    for (const auto& ref : victims) {
      charge(*cache_.find(ref), 0);
      cache_.erase(ref);
      complete_ = false;
    }
  }
}

}  // namespace fraud::state
