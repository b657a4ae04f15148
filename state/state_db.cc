#include "state/state_db.h"

#include <pthread.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

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
// The niceness of the checkpoint writer thread (and RocksDB's flush and compaction threads run
// at low CPU priority too).
constexpr int kWriterNice = 10;
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
  if (restore_buffer_mb < 1 || restore_buffer_mb > 1'048'576) {
    problems.push_back("restore buffer must be 1..1048576 MiB, got " +
                       std::to_string(restore_buffer_mb));
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

// What one store's background writes have reached; shared by the store and the writer.
struct StoreWrites {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> written{0};  // the last batch on disk
  std::optional<std::string> error;  // under mu: a write failed; later batches are not written
};

// The card changes of committed transactions, the latest per card (nothing: erased), with the
// checkpoint the last of them reaches: one write for the disk. The writer thread builds the
// RocksDB batch from it.
struct PendingBatch {
  uint64_t seq = 0;  // the last transaction it covers
  int32_t partition = 0;
  CardMap<std::optional<std::string>> changes;
  std::string checkpoint;  // encoded
};

struct StateDb::Impl {
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::WriteOptions write_options;
  std::atomic<int64_t> cached_bytes{0};
  int64_t card_cache_budget = 0;
  // Restores: the options their SST files are written with, where they are written (moved
  // into the database when ingested; emptied at open), and their shared memory budget.
  rocksdb::Options sst_options;
  std::string restore_dir;
  std::atomic<uint64_t> restore_files{0};
  std::atomic<int64_t> restore_bytes{0};
  int64_t restore_budget = 0;

  // The writer thread: committed batches of every store, written in the order handed in.
  struct Job {
    std::shared_ptr<StoreWrites> target;
    std::unique_ptr<PendingBatch> batch;
  };
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  bool stopping = false;
  std::string fail_writes;  // under jobs_mu; tests
  std::function<void(double)> write_observer;
  std::thread writer;

  void submit(const std::shared_ptr<StoreWrites>& target, std::unique_ptr<PendingBatch> batch) {
    {
      std::lock_guard lock(jobs_mu);
      jobs.push_back(Job{target, std::move(batch)});
    }
    jobs_cv.notify_one();
  }

  ~Impl() { stopWriter(); }

  void stopWriter() {
    {
      std::lock_guard lock(jobs_mu);
      stopping = true;
    }
    jobs_cv.notify_all();
    if (writer.joinable()) writer.join();
  }

  void writerLoop() {
    pthread_setname_np(pthread_self(), "fd-state-write");
    // Below the ingest thread: a burst of checkpoint writes must not take the CPU from it.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kWriterNice);
    while (true) {
      Job job;
      std::string fail;
      {
        std::unique_lock lock(jobs_mu);
        jobs_cv.wait(lock, [this] { return stopping || !jobs.empty(); });
        if (jobs.empty()) return;  // stopping, everything written
        job = std::move(jobs.front());
        jobs.pop_front();
        fail = fail_writes;
      }
      StoreWrites& target = *job.target;
      {
        std::lock_guard lock(target.mu);
        if (target.error) {
          target.cv.notify_all();
          continue;  // after a failed batch no later one may land: the disk would skip one
        }
      }
      const auto started = std::chrono::steady_clock::now();
      rocksdb::WriteBatch batch;
      const PendingBatch& pending = *job.batch;
      pending.changes.forEach([&](const CardRef& ref, const std::optional<std::string>& value) {
        const auto key = cardKey(pending.partition, ref);
        (void)(value ? batch.Put(key, *value) : batch.Delete(key));
      });
      (void)batch.Put(checkpointKey(pending.partition), pending.checkpoint);
      const auto status =
          fail.empty() ? db->Write(write_options, &batch) : rocksdb::Status::IOError(fail);
      if (write_observer) {
        write_observer(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
      {
        std::lock_guard lock(target.mu);
        if (status.ok()) {
          target.written.store(job.batch->seq);
        } else {
          target.error = describe(status);
        }
      }
      target.cv.notify_all();
    }
  }

  [[nodiscard]] std::optional<std::string> get(const std::string& key) {
    std::string value;
    const auto status = db->Get(rocksdb::ReadOptions(), key, &value);
    if (status.IsNotFound()) return std::nullopt;
    if (!status.ok()) throw detectors::CardStoreError(describe(status));
    return value;
  }

  [[nodiscard]] std::optional<std::string> clear(int32_t partition) {
    rocksdb::WriteBatch batch;
    auto status =
        batch.DeleteRange(partitionPrefix('C', partition), partitionPrefix('C', partition + 1));
    if (status.ok()) status = batch.Delete(checkpointKey(partition));
    if (status.ok()) status = db->Write(write_options, &batch);
    if (!status.ok()) return describe(status);
    return std::nullopt;
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
    if (!it->status().ok()) throw detectors::CardStoreError(describe(it->status()));
  }
};

StateDb::StateDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StateDb::~StateDb() {
  impl_->stopWriter();
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
  Impl* writing = impl.get();
  impl->writer = std::thread([writing] { writing->writerLoop(); });
  for (const auto pool : {rocksdb::Env::Priority::LOW, rocksdb::Env::Priority::HIGH}) {
    (void)rocksdb::Env::Default()->LowerThreadPoolCPUPriority(pool, rocksdb::CpuPriority::kLow);
  }
  impl->card_cache_budget = static_cast<int64_t>(options.card_cache_mb) << 20;
  // Restored files are read back at once (the card cache is warmed from them) and most of their
  // cards change within minutes: uncompressed, like the young levels.
  impl->sst_options = db_options;
  impl->sst_options.compression_per_level.clear();
  impl->sst_options.compression = rocksdb::kNoCompression;
  impl->restore_budget = static_cast<int64_t>(options.restore_buffer_mb) << 20;

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
      // Flushed at once: restores ingest files that survive a crash, and the memtable does not.
      auto put = impl->db->Put(impl->write_options, kFormatKey, kFormatVersion);
      if (put.ok()) put = impl->db->Flush(rocksdb::FlushOptions());
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
  impl->restore_dir = (std::filesystem::path(options.dir) / "restore").string();
  {
    // Files left by a restore that a crash interrupted were never ingested: drop them.
    std::error_code ec;
    std::filesystem::remove_all(impl->restore_dir, ec);
    if (!ec) std::filesystem::create_directories(impl->restore_dir, ec);
    if (ec) {
      error = "cannot prepare " + impl->restore_dir + ": " + ec.message();
      return nullptr;
    }
  }
  return std::unique_ptr<StateDb>(new StateDb(std::move(impl)));
}

std::optional<PartitionCheckpoint> StateDb::checkpoint(int32_t partition) {
  const auto value = impl_->get(checkpointKey(partition));
  if (!value) return std::nullopt;
  auto checkpoint = PartitionCheckpoint::decode(*value);
  if (!checkpoint) {
    throw detectors::CardStoreError("unreadable checkpoint of partition " +
                                    std::to_string(partition));
  }
  return checkpoint;
}

std::unique_ptr<RocksDbCardStore> StateDb::cardStore(int32_t partition) {
  return std::make_unique<RocksDbCardStore>(*impl_, partition);
}

std::unique_ptr<PartitionRestore> StateDb::beginRestore(int32_t partition, bool from_scratch) {
  return std::make_unique<PartitionRestore>(*impl_, partition, from_scratch);
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
  return impl_->clear(partition);
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

void StateDb::setWriteObserver(std::function<void(double seconds)> observer) {
  std::lock_guard lock(impl_->jobs_mu);
  impl_->write_observer = std::move(observer);
}

void StateDb::failWritesForTesting(std::string message) {
  std::lock_guard lock(impl_->jobs_mu);
  impl_->fail_writes = std::move(message);
}

// Card refs are uniformly distributed: bucketed by their first bits, in key order, each bucket
// is small enough to sort in cache, and appending to it touches only its tail.
constexpr int kBucketBits = 12;

struct PartitionRestore::Bucket {
  struct Record {
    CardRef ref;
    uint32_t offset = 0;  // into values
    uint32_t size = 0;
    bool erased = false;
  };
  std::vector<Record> records;  // in changelog order
  std::string values;
};

PartitionRestore::PartitionRestore(StateDb::Impl& db, int32_t partition, bool from_scratch)
    : db_(db), partition_(partition), from_scratch_(from_scratch), buckets_(1 << kBucketBits) {}

PartitionRestore::~PartitionRestore() { db_.restore_bytes -= charged_; }

std::optional<std::string> PartitionRestore::put(const CardRef& card_ref,
                                                 std::string_view encoded) {
  return add(card_ref, encoded, false);
}

std::optional<std::string> PartitionRestore::erase(const CardRef& card_ref) {
  return add(card_ref, {}, true);
}

std::optional<std::string> PartitionRestore::add(const CardRef& card_ref, std::string_view encoded,
                                                 bool erased) {
  const unsigned index = (static_cast<unsigned>(card_ref.bytes[0]) << (kBucketBits - 8)) |
                         (static_cast<unsigned>(card_ref.bytes[1]) >> (16 - kBucketBits));
  Bucket& bucket = buckets_[index];
  bucket.records.push_back(Bucket::Record{card_ref, static_cast<uint32_t>(bucket.values.size()),
                                          static_cast<uint32_t>(encoded.size()), erased});
  bucket.values.append(encoded);
  ++records_;
  bytes_ += static_cast<int64_t>(sizeof(Bucket::Record) + encoded.size());
  if (bucket.values.size() >= (size_t{1} << 31)) return writeFile();  // offsets stay 32-bit
  // The shared total is updated every 64 KiB. Over the budget, the restore holding a fair
  // share of it writes; so does one that outgrows it alone: never a file per record when many
  // restores share the budget.
  if (bytes_ - charged_ < (64 << 10)) return std::nullopt;
  db_.restore_bytes += bytes_ - charged_;
  charged_ = bytes_;
  const int64_t budget = db_.restore_budget;
  if (bytes_ >= budget || (db_.restore_bytes.load() > budget && bytes_ >= budget / 16)) {
    return writeFile();
  }
  return std::nullopt;
}

std::optional<std::string> PartitionRestore::prepare() {
  if (prepared_) return std::nullopt;
  const std::string prefix = partitionPrefix('C', partition_);
  std::unique_ptr<rocksdb::Iterator> it(db_.db->NewIterator(rocksdb::ReadOptions()));
  it->Seek(prefix);
  const bool holds_cards = it->Valid() && it->key().starts_with(prefix);
  if (!it->status().ok()) return describe(it->status());
  if (from_scratch_ && holds_cards) {
    // Left by a restore that did not finish: the changelog alone says what the partition holds.
    if (auto error = db_.clear(partition_)) return error;
  }
  partition_empty_ = from_scratch_ || !holds_cards;
  prepared_ = true;
  return std::nullopt;
}

namespace {

uint64_t bigEndianWord(const CardRef& ref, size_t i) {
  uint64_t w;
  std::memcpy(&w, ref.bytes.data() + 8 * i, sizeof(w));
  return __builtin_bswap64(w);
}

// Key order of card refs (bytewise), then changelog order.
bool before(const CardRef& a, uint32_t a_seq, const CardRef& b, uint32_t b_seq) {
  for (size_t i = 0; i < 4; ++i) {
    const uint64_t x = bigEndianWord(a, i);
    const uint64_t y = bigEndianWord(b, i);
    if (x != y) return x < y;
  }
  return a_seq < b_seq;
}

}  // namespace

std::optional<std::string> PartitionRestore::writeFile() {
  if (auto error = prepare()) return error;
  if (records_ > 0) {
    const std::string path = db_.restore_dir + "/partition-" + std::to_string(partition_) + "-" +
                             std::to_string(db_.restore_files++) + ".sst";
    // Not dropped from the page cache: the card cache is warmed from this file right after.
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), db_.sst_options, nullptr,
                                  /*invalidate_page_cache=*/false);
    std::string key = partitionPrefix('C', partition_);
    const size_t prefix_size = key.size();
    key.resize(prefix_size + sizeof(CardRef{}.bytes));
    bool opened = false;
    size_t written = 0;
    rocksdb::Status status;
    std::vector<uint32_t> order;
    for (const Bucket& bucket : buckets_) {
      if (!status.ok()) break;
      const auto& records = bucket.records;
      order.resize(records.size());
      for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return before(records[a].ref, a, records[b].ref, b);
      });
      for (size_t i = 0; i < order.size() && status.ok(); ++i) {
        // The last record of each card wins.
        if (i + 1 < order.size() && records[order[i + 1]].ref == records[order[i]].ref) continue;
        const Bucket::Record& record = records[order[i]];
        if (record.erased && partition_empty_) continue;
        if (!opened) {
          status = writer.Open(path);
          opened = true;
          if (!status.ok()) break;
        }
        std::memcpy(key.data() + prefix_size, record.ref.bytes.data(), record.ref.bytes.size());
        status = record.erased
                     ? writer.Delete(key)
                     : writer.Put(
                           key, rocksdb::Slice(bucket.values.data() + record.offset, record.size));
        ++written;
      }
    }
    if (status.ok() && written > 0) status = writer.Finish();
    if (status.ok() && written > 0) {
      rocksdb::IngestExternalFileOptions ingest;
      ingest.move_files = true;
      ingest.write_global_seqno = false;
      status = db_.db->IngestExternalFile({path}, ingest);
    }
    if (opened) {
      std::error_code ec;
      std::filesystem::remove(path, ec);  // moved when ingested; a failed file is dropped
    }
    if (!status.ok()) return describe(status);
    if (written > 0) {
      partition_empty_ = false;
      ++files_;
    }
  }
  for (Bucket& bucket : buckets_) bucket = Bucket();
  records_ = 0;
  bytes_ = 0;
  db_.restore_bytes -= charged_;
  charged_ = 0;
  return std::nullopt;
}

std::optional<std::string> PartitionRestore::finish(
    const std::optional<PartitionCheckpoint>& checkpoint) {
  if (auto error = writeFile()) return error;
  if (!checkpoint) return std::nullopt;
  const auto status =
      db_.db->Put(db_.write_options, checkpointKey(partition_), checkpoint->encode());
  if (!status.ok()) return describe(status);
  return std::nullopt;
}

RocksDbCardStore::RocksDbCardStore(StateDb::Impl& db, int32_t partition)
    : db_(db), partition_(partition), writes_(std::make_shared<StoreWrites>()) {
  // Warm the cache with the whole partition while it fits: a complete cache answers every
  // lookup, so RocksDB is only written to, until the first eviction.
  ++disk_scans_;
  db_.scan(partitionPrefix('C', partition_), [&](std::string_view key, std::string_view value) {
    ++card_count_;
    if (!complete_) return;
    if (db_.cached_bytes.load() > db_.card_cache_budget / 10 * 9) {
      complete_ = false;
      return;
    }
    auto state = decodeCardState(value);
    if (!state) {
      throw detectors::CardStoreError("unreadable card state in partition " +
                                      std::to_string(partition_));
    }
    CardRef ref;
    std::memcpy(ref.bytes.data(), key.data() + 5, ref.bytes.size());
    bool inserted = false;
    Entry& entry = cache_.insert(ref, inserted);
    entry.state = std::move(*state);
    entry.referenced = false;
    charge(entry, bytesOf(entry.state));
  });
  committed_card_count_ = card_count_;
}

RocksDbCardStore::~RocksDbCardStore() {
  // Committed batches still go to disk, and all of this store's writes land before a later
  // store of the partition (or a restore, or clearPartition()) reads or writes it.
  staged_.clear();
  submitCommitted();
  (void)waitWritten();
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
    throw detectors::CardStoreError("unreadable card state in partition " +
                                    std::to_string(partition_));
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
  if (complete_) {
    // The cache holds every card of the partition: no second scan and decode of the disk (a
    // restored partition's activation builds its detector's expiry index from here).
    cache_.forEach([&](const CardRef& ref, const Entry& entry) {
      if (!entry.erased) visit(ref, entry.state);
    });
    return;
  }
  ++disk_scans_;
  db_.scan(partitionPrefix('C', partition_), [&](std::string_view key, std::string_view value) {
    CardRef ref;
    std::memcpy(ref.bytes.data(), key.data() + 5, ref.bytes.size());
    if (const Entry* entry = cache_.find(ref); entry != nullptr && entry->persist_changed) {
      return;  // visited from the cache below
    }
    const auto state = decodeCardState(value);
    if (!state) {
      throw detectors::CardStoreError("unreadable card state in partition " +
                                      std::to_string(partition_));
    }
    visit(ref, *state);
  });
  for (const auto& ref : persist_changed_) {
    const Entry* entry = cache_.find(ref);
    if (!entry->erased) visit(ref, entry->state);
  }
}

const std::vector<CardChange>& RocksDbCardStore::takeCommitChanges() {
  stageChanges();
  return staged_.back().changes;
}

void RocksDbCardStore::stageChanges() {
  StagedChanges& staged = staged_.emplace_back();
  staged.seq = next_seq_++;
  staged.changes.reserve(commit_changed_.size());
  for (const auto& ref : commit_changed_) {
    Entry* entry = cache_.find(ref);
    entry->commit_changed = false;
    entry->staged_seq = staged.seq;
    if (entry->erased) {
      staged.changes.push_back(CardChange{ref, std::nullopt});
    } else {
      CardChange& change = staged.changes.emplace_back(CardChange{ref, std::string()});
      encodeCardState(entry->state, *change.encoded);
    }
  }
  commit_changed_.clear();
  staged.card_count = card_count_;
}

void RocksDbCardStore::commitSucceeded(const PartitionCheckpoint& checkpoint) {
  if (!committed_) {
    committed_ = std::make_unique<PendingBatch>();
    committed_->partition = partition_;
  }
  for (auto& staged : staged_) {
    for (auto& change : staged.changes) {
      bool inserted = false;
      committed_->changes.insert(change.card_ref, inserted) = std::move(change.encoded);
    }
    committed_->seq = staged.seq;
    committed_card_count_ = staged.card_count;
  }
  if (staged_.empty()) committed_->seq = next_seq_++;  // a checkpoint alone
  staged_.clear();
  committed_->checkpoint = checkpoint.encode();
}

void RocksDbCardStore::submitCommitted() {
  if (!committed_) return;
  handed_seq_ = committed_->seq;
  db_.submit(writes_, std::move(committed_));
}

void RocksDbCardStore::handOff() {
  // While the previous hand-off is still being written, committed changes go on coalescing
  // here (at most one encoded state per card): a writer slower than the commits never makes a
  // queue that grows without bound.
  if (writes_->written.load() >= handed_seq_) submitCommitted();
  reclaimWritten();
}

bool RocksDbCardStore::waitWritten() {
  std::unique_lock lock(writes_->mu);
  writes_->cv.wait(lock, [this] {
    return writes_->error.has_value() || writes_->written.load() >= handed_seq_;
  });
  return !writes_->error.has_value();
}

std::optional<std::string> RocksDbCardStore::writeError() const {
  std::lock_guard lock(writes_->mu);
  return writes_->error;
}

std::optional<std::string> RocksDbCardStore::writeCommitted() {
  // handOff() keeps the newest commit back while an earlier one is being written: wait for that
  // one, then hand the newest off and wait for it too.
  handOff();
  if (!waitWritten()) return writeError();
  submitCommitted();
  if (!waitWritten()) return writeError();
  reclaimWritten();
  return std::nullopt;
}

std::optional<std::string> RocksDbCardStore::persist(const PartitionCheckpoint& checkpoint) {
  stageChanges();
  commitSucceeded(checkpoint);
  return writeCommitted();
}

void RocksDbCardStore::reclaimWritten() {
  const uint64_t written = writes_->written.load();
  if (written == reclaimed_seq_) return;
  reclaimed_seq_ = written;
  size_t kept = 0;
  for (const auto& ref : persist_changed_) {
    Entry* entry = cache_.find(ref);
    if (entry->commit_changed || entry->staged_seq == 0 || entry->staged_seq > written) {
      persist_changed_[kept++] = ref;  // its latest change is not on disk yet
      continue;
    }
    entry->persist_changed = false;
    if (entry->erased) {
      charge(*entry, 0);
      cache_.erase(ref);
    } else {
      charge(*entry, bytesOf(entry->state));
    }
  }
  persist_changed_.resize(kept);
  evictIfOverBudget();
}

bool RocksDbCardStore::discardChanges() {
  staged_.clear();  // the aborted transaction's changes
  submitCommitted();
  const bool written_all = waitWritten();
  const uint64_t written = writes_->written.load();
  std::vector<CardRef> reread;
  for (const auto& ref : persist_changed_) {
    Entry* entry = cache_.find(ref);
    if (entry == nullptr) continue;
    const bool on_disk =
        !entry->commit_changed && entry->staged_seq != 0 && entry->staged_seq <= written;
    if (!on_disk || entry->erased) {
      charge(*entry, 0);
      cache_.erase(ref);
      if (!on_disk) reread.push_back(ref);
      continue;
    }
    entry->persist_changed = false;
    charge(*entry, bytesOf(entry->state));
  }
  persist_changed_.clear();
  commit_changed_.clear();
  card_count_ = committed_card_count_;
  reclaimed_seq_ = written;
  if (!reread.empty()) {
    // The disk holds the committed version of each card changed since (or none): reading those
    // back keeps the cache complete, so later rewinds do not scan the whole partition again.
    const bool was_complete = complete_ && written_all;
    complete_ = false;  // until every one is back: a failed read leaves them on disk only
    for (const auto& ref : reread) {
      if (was_complete) (void)load(ref);
    }
    complete_ = was_complete;
  }
  return written_all;
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
