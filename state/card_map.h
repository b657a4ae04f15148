#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "detectors/card_ref.h"

namespace fraud::state {

// A hash map from CardRef to V in two parts:
//   - an index: open addressing with linear probing over 8-byte slots, deletion by backward
//     shift (no tombstones). A slot holds 32 bits of the key's hash (its home and a tag) and the
//     position of the entry, so probing and growing never read an entry.
//   - the entries {key, value}, dense, in chunks of kChunk: no empty slots, and growing copies
//     no entry. Erasing moves the last entry into the hole.
// So a card costs its entry plus 8 bytes of index at a load of 3/8..3/4, where a table of whole
// entries costs them at that load; a lookup reads one index slot and one entry.
// Pointers into it are invalidated by insert() and erase().
template <typename V>
class CardMap {
 public:
  CardMap() : index_(kInitialCapacity, 0) {}

  [[nodiscard]] V* find(const detectors::CardRef& key) {
    return const_cast<V*>(std::as_const(*this).find(key));
  }
  // Reads only: allocates nothing, moves nothing.
  [[nodiscard]] const V* find(const detectors::CardRef& key) const {
    const uint32_t hash = hashOf(key);
    for (size_t i = hash & mask(); index_[i] != 0; i = next(i)) {
      if (hashOfSlot(index_[i]) != hash) continue;
      const Entry& entry = entryAt(positionOfSlot(index_[i]));
      if (equal(entry.key, key)) return &entry.value;
    }
    return nullptr;
  }

  // Fetches the index slot of `key` into cache.
  void prefetch(const detectors::CardRef& key) const {
    __builtin_prefetch(&index_[hashOf(key) & mask()]);
  }
  // After prefetch(): fetches the entry of `key` (the first one the index names with its hash).
  void prefetchEntry(const detectors::CardRef& key) const {
    const uint32_t hash = hashOf(key);
    for (size_t i = hash & mask(); index_[i] != 0; i = next(i)) {
      if (hashOfSlot(index_[i]) == hash) {
        __builtin_prefetch(&entryAt(positionOfSlot(index_[i])));
        return;
      }
    }
  }

  // The value for `key`, default-constructed when absent; `inserted` tells which.
  V& insert(const detectors::CardRef& key, bool& inserted) {
    if ((size_ + 1) * 4 > index_.size() * 3) grow();
    const uint32_t hash = hashOf(key);
    size_t i = hash & mask();
    for (; index_[i] != 0; i = next(i)) {
      if (hashOfSlot(index_[i]) != hash) continue;
      Entry& entry = entryAt(positionOfSlot(index_[i]));
      if (equal(entry.key, key)) {
        inserted = false;
        return entry.value;
      }
    }
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<Entry[]>(kChunk));
    Entry& entry = entryAt(size_);
    entry.key = key;
    entry.value = V{};
    index_[i] = slotOf(hash, size_);
    ++size_;
    inserted = true;
    return entry.value;
  }

  bool erase(const detectors::CardRef& key) {
    const uint32_t hash = hashOf(key);
    size_t i = hash & mask();
    for (;; i = next(i)) {
      if (index_[i] == 0) return false;
      if (hashOfSlot(index_[i]) == hash && equal(entryAt(positionOfSlot(index_[i])).key, key)) {
        break;
      }
    }
    const size_t position = positionOfSlot(index_[i]);
    // Backward shift: move later slots of the probe run into the hole when their home position
    // allows it, so that lookups never need tombstones.
    size_t hole = i;
    for (size_t j = next(i); index_[j] != 0; j = next(j)) {
      const size_t h = hashOfSlot(index_[j]) & mask();
      const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        index_[hole] = index_[j];
        hole = j;
      }
    }
    index_[hole] = 0;
    // The last entry fills the erased one's place; its slot follows it.
    const size_t last = size_ - 1;
    if (position != last) {
      Entry& moved = entryAt(last);
      const uint32_t moved_hash = hashOf(moved.key);
      for (size_t j = moved_hash & mask();; j = next(j)) {
        if (index_[j] != 0 && positionOfSlot(index_[j]) == last) {
          index_[j] = slotOf(moved_hash, position);
          break;
        }
      }
      entryAt(position) = std::move(moved);
    }
    entryAt(last).value = V{};
    --size_;
    // Keep one spare chunk, so that a map hovering around a chunk boundary does not thrash.
    while (chunks_.size() >= 2 && size_ + 2 * kChunk <= chunks_.size() * kChunk) {
      chunks_.pop_back();
    }
    return true;
  }

  [[nodiscard]] size_t size() const { return size_; }

  template <typename Visit>
  void forEach(Visit&& visit) const {
    for (size_t p = 0; p < size_; ++p) {
      const Entry& entry = entryAt(p);
      visit(entry.key, entry.value);
    }
  }
  template <typename Visit>
  void forEachMutable(Visit&& visit) {
    for (size_t p = 0; p < size_; ++p) {
      Entry& entry = entryAt(p);
      visit(entry.key, entry.value);
    }
  }

 private:
  static constexpr size_t kInitialCapacity = 1024;  // index slots, a power of two
  static constexpr size_t kChunk = 4096;            // entries

  struct Entry {
    detectors::CardRef key;
    V value{};
  };

  // The card_ref is already uniformly distributed: its first 32 bits are the hash.
  static uint32_t hashOf(const detectors::CardRef& key) {
    uint32_t h;
    std::memcpy(&h, key.bytes.data(), sizeof(h));
    return h;
  }
  // A slot: the hash in the high half, position + 1 in the low half; 0 is empty.
  static uint64_t slotOf(uint32_t hash, size_t position) {
    return static_cast<uint64_t>(hash) << 32 | static_cast<uint64_t>(position + 1);
  }
  static uint32_t hashOfSlot(uint64_t slot) { return static_cast<uint32_t>(slot >> 32); }
  static size_t positionOfSlot(uint64_t slot) { return static_cast<uint32_t>(slot) - 1; }

  [[nodiscard]] Entry& entryAt(size_t position) {
    return chunks_[position / kChunk][position % kChunk];
  }
  [[nodiscard]] const Entry& entryAt(size_t position) const {
    return chunks_[position / kChunk][position % kChunk];
  }

  static uint64_t word(const detectors::CardRef& ref, size_t i) {
    uint64_t w;
    std::memcpy(&w, ref.bytes.data() + 8 * i, sizeof(w));
    return w;
  }
  static bool equal(const detectors::CardRef& a, const detectors::CardRef& b) {
    return word(a, 0) == word(b, 0) && word(a, 1) == word(b, 1) && word(a, 2) == word(b, 2) &&
           word(a, 3) == word(b, 3);
  }
  [[nodiscard]] size_t mask() const { return index_.size() - 1; }
  [[nodiscard]] size_t next(size_t i) const { return (i + 1) & mask(); }

  void grow() {
    std::vector<uint64_t> old(index_.size() * 2, 0);
    old.swap(index_);
    for (const uint64_t slot : old) {
      if (slot == 0) continue;
      size_t i = hashOfSlot(slot) & mask();
      while (index_[i] != 0) i = next(i);
      index_[i] = slot;
    }
  }

  std::vector<uint64_t> index_;
  std::vector<std::unique_ptr<Entry[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace fraud::state
