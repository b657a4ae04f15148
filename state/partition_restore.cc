#include "state/partition_restore.h"

#include <rocksdb/sst_file_writer.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "state/database.h"
#include "state/key_layout.h"

namespace fraud::state {

using detectors::CardRef;

namespace {

// Card refs are uniformly distributed: bucketed by their first bits, in key order, each bucket
// is small enough to sort in cache, and appending to it touches only its tail.
constexpr int kBucketBits = 12;

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

struct PartitionRestore::Bucket {
  struct Record {
    CardRef ref;
    const char* value = nullptr;  // in the arena
    uint32_t size = 0;
    bool erased = false;
  };
  std::vector<Record> records;  // in changelog order
};

// The buffered values, back to back in large chunks: one copy each, none moved again.
class PartitionRestore::Arena {
 public:
  const char* copy(std::string_view bytes) {
    if (bytes.empty()) return nullptr;
    if (bytes.size() > kChunk - used_) {
      // A value over a quarter of a chunk gets one of its own; the current chunk stays open.
      if (bytes.size() > kChunk / 4) return own(bytes);
      chunks_.push_back(std::make_unique<char[]>(kChunk));
      used_ = 0;
    }
    char* at = chunks_.back().get() + used_;
    std::memcpy(at, bytes.data(), bytes.size());
    used_ += bytes.size();
    return at;
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 20;
  const char* own(std::string_view bytes) {
    auto chunk = std::make_unique<char[]>(bytes.size());
    std::memcpy(chunk.get(), bytes.data(), bytes.size());
    const char* at = chunk.get();
    // Before the current chunk, which keeps taking values.
    chunks_.insert(chunks_.empty() ? chunks_.end() : chunks_.end() - 1, std::move(chunk));
    return at;
  }
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = kChunk;  // no chunk yet
};

PartitionRestore::PartitionRestore(Database& db, int32_t partition, bool from_scratch)
    : db_(db),
      partition_(partition),
      from_scratch_(from_scratch),
      buckets_(1 << kBucketBits),
      arena_(std::make_unique<Arena>()) {}

PartitionRestore::~PartitionRestore() { db_.restoreBytes() -= charged_; }

base::Status PartitionRestore::put(const CardRef& card_ref, std::string_view encoded) {
  return add(card_ref, encoded, false);
}

base::Status PartitionRestore::erase(const CardRef& card_ref) { return add(card_ref, {}, true); }

base::Status PartitionRestore::add(const CardRef& card_ref, std::string_view encoded, bool erased) {
  const unsigned index = (static_cast<unsigned>(card_ref.bytes[0]) << (kBucketBits - 8)) |
                         (static_cast<unsigned>(card_ref.bytes[1]) >> (16 - kBucketBits));
  buckets_[index].records.push_back(Bucket::Record{card_ref, arena_->copy(encoded),
                                                   static_cast<uint32_t>(encoded.size()), erased});
  ++records_;
  bytes_ += static_cast<int64_t>(sizeof(Bucket::Record) + encoded.size());
  // The shared total is updated every 64 KiB. Over the budget, the restore holding a fair
  // share of it writes; so does one that outgrows it alone: never a file per record when many
  // restores share the budget.
  if (bytes_ - charged_ < (64 << 10)) return {};
  db_.restoreBytes() += bytes_ - charged_;
  charged_ = bytes_;
  const int64_t budget = db_.restoreBudget();
  if (bytes_ >= budget || (db_.restoreBytes().load() > budget && bytes_ >= budget / 16)) {
    return writeFile();
  }
  return {};
}

base::Status PartitionRestore::prepare() {
  if (prepared_) return {};
  const auto holds = db_.holdsPrefix(partitionPrefix('C', partition_));
  if (!holds) return holds.status();
  const bool holds_cards = *holds;
  if (from_scratch_ && holds_cards) {
    // Left by a restore that did not finish: the changelog alone says what the partition holds.
    if (auto cleared = db_.clear(partition_); !cleared.ok()) return cleared;
  }
  partition_empty_ = from_scratch_ || !holds_cards;
  prepared_ = true;
  return {};
}

base::Status PartitionRestore::writeSorted(const std::string& path, size_t& written) {
  // Not dropped from the page cache: the card cache is warmed from this file right after.
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), db_.sstOptions(), nullptr,
                                /*invalidate_page_cache=*/false);
  std::string key = partitionPrefix('C', partition_);
  const size_t prefix_size = key.size();
  key.resize(prefix_size + sizeof(CardRef{}.bytes));
  rocksdb::Status status;
  std::vector<uint32_t> order;
  for (const Bucket& bucket : buckets_) {
    const auto& records = bucket.records;
    order.resize(records.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return before(records[a].ref, a, records[b].ref, b); });
    for (size_t i = 0; i < order.size(); ++i) {
      // The last record of each card wins.
      if (i + 1 < order.size() && records[order[i + 1]].ref == records[order[i]].ref) continue;
      const Bucket::Record& record = records[order[i]];
      if (record.erased && partition_empty_) continue;
      if (written == 0) status = writer.Open(path);
      std::memcpy(key.data() + prefix_size, record.ref.bytes.data(), record.ref.bytes.size());
      if (status.ok()) {
        status = record.erased ? writer.Delete(key)
                               : writer.Put(key, rocksdb::Slice(record.value, record.size));
      }
      ++written;
      if (!status.ok()) return Database::toStatus(status);
    }
  }
  if (written > 0) status = writer.Finish();
  return Database::toStatus(status);
}

base::Status PartitionRestore::writeFile() {
  if (auto error = prepare(); !error.ok()) return error;
  if (records_ > 0) {
    const std::string path = db_.newRestoreFile(partition_);
    size_t written = 0;
    base::Status error = writeSorted(path, written);
    if (error.ok() && written > 0) error = db_.ingest(path);
    if (written > 0) {
      std::error_code ec;
      std::filesystem::remove(path, ec);  // moved when ingested; a failed file is dropped
    }
    if (!error.ok()) return error;
    if (written > 0) {
      partition_empty_ = false;
      ++files_;
    }
  }
  for (Bucket& bucket : buckets_) bucket = Bucket();
  arena_ = std::make_unique<Arena>();
  records_ = 0;
  bytes_ = 0;
  db_.restoreBytes() -= charged_;
  charged_ = 0;
  return {};
}

base::Status PartitionRestore::finish(const std::optional<PartitionCheckpoint>& checkpoint) {
  if (auto error = writeFile(); !error.ok()) return error;
  if (!checkpoint) return {};
  return db_.put(checkpointKey(partition_), checkpoint->encode());
}

}  // namespace fraud::state
