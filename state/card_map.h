#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "detectors/card_ref.h"

namespace fraud::state {

// An open-addressing hash map from CardRef to V: linear probing over one array, deletion by
// backward shift (no tombstones). One cache miss per lookup where std::unordered_map takes
// two or three; this map is on the per-record path of every detector.
// Pointers into it are invalidated by insert() and erase().
template <typename V>
class CardMap {
 public:
  CardMap() { slots_.resize(kInitialCapacity); }

  [[nodiscard]] V* find(const detectors::CardRef& key) {
    for (size_t i = home(key);; i = next(i)) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (equal(slot.key, key)) return &slot.value;
    }
  }

  void prefetch(const detectors::CardRef& key) const { __builtin_prefetch(&slots_[home(key)]); }

  // The value for `key`, default-constructed when absent; `inserted` tells which.
  V& insert(const detectors::CardRef& key, bool& inserted) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    for (size_t i = home(key);; i = next(i)) {
      Slot& slot = slots_[i];
      if (!slot.used) {
        slot.used = true;
        slot.key = key;
        slot.value = V{};
        ++size_;
        inserted = true;
        return slot.value;
      }
      if (equal(slot.key, key)) {
        inserted = false;
        return slot.value;
      }
    }
  }

  bool erase(const detectors::CardRef& key) {
    size_t i = home(key);
    for (;; i = next(i)) {
      if (!slots_[i].used) return false;
      if (equal(slots_[i].key, key)) break;
    }
    // Backward-shift: move later entries of the probe run into the hole when their home
    // position allows it, so that lookups never need tombstones.
    size_t hole = i;
    for (size_t j = next(i); slots_[j].used; j = next(j)) {
      const size_t h = home(slots_[j].key);
      const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = std::move(slots_[j]);
        hole = j;
      }
    }
    slots_[hole].used = false;
    slots_[hole].value = V{};
    --size_;
    return true;
  }

  [[nodiscard]] size_t size() const { return size_; }

  template <typename Visit>
  void forEach(Visit&& visit) const {
    for (const Slot& slot : slots_) {
      if (slot.used) visit(slot.key, slot.value);
    }
  }
  template <typename Visit>
  void forEachMutable(Visit&& visit) {
    for (Slot& slot : slots_) {
      if (slot.used) visit(slot.key, slot.value);
    }
  }

 private:
  static constexpr size_t kInitialCapacity = 1024;  // a power of two

  struct Slot {
    detectors::CardRef key;
    bool used = false;
    V value{};
  };

  static uint64_t word(const detectors::CardRef& ref, size_t i) {
    uint64_t w;
    std::memcpy(&w, ref.bytes.data() + 8 * i, sizeof(w));
    return w;
  }
  static bool equal(const detectors::CardRef& a, const detectors::CardRef& b) {
    return word(a, 0) == word(b, 0) && word(a, 1) == word(b, 1) && word(a, 2) == word(b, 2) &&
           word(a, 3) == word(b, 3);
  }
  [[nodiscard]] size_t home(const detectors::CardRef& key) const {
    return detectors::CardRefHash{}(key) & (slots_.size() - 1);
  }
  [[nodiscard]] size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (Slot& slot : old) {
      if (!slot.used) continue;
      bool inserted = false;
      insert(slot.key, inserted) = std::move(slot.value);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace fraud::state
