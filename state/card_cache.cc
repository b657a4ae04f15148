#include "state/card_cache.h"

#include "state/card_state_codec.h"

namespace fraud::state {

using detectors::CardRef;
using detectors::CardState;

namespace {

// A cache slot (key, flags, CardState) at the map's load factor.
constexpr size_t kEntryOverhead = 200;

size_t bytesOf(const CardState& state) { return kEntryOverhead + state.allocatedBytes(); }

}  // namespace

CardCache::CardCache(CardSource& source, CacheBudget& budget, int32_t partition)
    : source_(source), budget_(budget), partition_(partition) {
  try {
    warm();
  } catch (...) {
    cache_.forEachMutable([this](const CardRef&, Entry& entry) { charge(entry, 0); });
    throw;
  }
}

CardCache::~CardCache() {
  cache_.forEachMutable([this](const CardRef&, Entry& entry) { charge(entry, 0); });
}

void CardCache::warm() {
  // The whole partition while it fits: a complete cache answers every lookup, so the store
  // below is only written to, until the first eviction.
  source_.scan([&](const CardRef& ref, std::string_view encoded) {
    ++card_count_;
    if (!complete_) return;
    if (budget_.used.load() > budget_.limit / 10 * 9) {
      complete_ = false;
      return;
    }
    CardState state = decode(encoded);
    bool inserted = false;
    Entry& entry = cache_.insert(ref, inserted);
    entry.state = std::move(state);
    entry.referenced = false;
    charge(entry, bytesOf(entry.state));
  });
}

CardState CardCache::decode(std::string_view encoded) const {
  auto state = decodeCardState(encoded);
  if (!state) {
    throw detectors::CardStoreError("unreadable card state in partition " +
                                    std::to_string(partition_));
  }
  return std::move(*state);
}

void CardCache::charge(Entry& entry, size_t bytes) {
  budget_.used += static_cast<int64_t>(bytes) - static_cast<int64_t>(entry.bytes);
  entry.bytes = bytes;
}

void CardCache::markChanged(const CardRef& card_ref, Entry& entry) {
  if (!entry.changed) {
    entry.changed = true;
    changed_.push_back(card_ref);
  }
  if (!entry.unwritten) {
    entry.unwritten = true;
    unwritten_.push_back(card_ref);
  }
}

CardCache::Entry* CardCache::load(const CardRef& card_ref) {
  if (Entry* entry = cache_.find(card_ref)) {
    entry->referenced = true;
    return entry;
  }
  if (complete_) return nullptr;
  return readThrough(card_ref);
}

CardCache::Entry* CardCache::readThrough(const CardRef& card_ref) {
  const auto encoded = source_.read(card_ref);
  if (!encoded) return nullptr;
  CardState state = decode(*encoded);
  bool inserted = false;
  Entry& entry = cache_.insert(card_ref, inserted);
  entry.state = std::move(state);
  charge(entry, bytesOf(entry.state));
  return &entry;
}

const CardState* CardCache::find(const CardRef& card_ref) {
  const Entry* entry = load(card_ref);
  return entry == nullptr || entry->erased ? nullptr : &entry->state;
}

CardCache::Cached CardCache::findCached(const CardRef& card_ref) {
  Entry* entry = cache_.find(card_ref);
  if (entry == nullptr) {
    return {complete_ ? Cached::Kind::kAbsent : Cached::Kind::kUnknown, nullptr};
  }
  entry->referenced = true;
  if (entry->erased) return {Cached::Kind::kAbsent, nullptr};
  return {Cached::Kind::kHeld, &entry->state};
}

CardState& CardCache::modify(const CardRef& card_ref) {
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

void CardCache::erase(const CardRef& card_ref) {
  Entry* entry = load(card_ref);
  if (entry == nullptr || entry->erased) return;
  entry->erased = true;
  entry->state = CardState{};
  --card_count_;
  markChanged(card_ref, *entry);
}

void CardCache::forEach(const std::function<void(const CardRef&, const CardState&)>& visit) {
  if (complete_) {
    // No scan and decode of the store below (a restored partition's activation builds its
    // detector's expiry index from here).
    cache_.forEach([&](const CardRef& ref, const Entry& entry) {
      if (!entry.erased) visit(ref, entry.state);
    });
    return;
  }
  source_.scan([&](const CardRef& ref, std::string_view encoded) {
    if (const Entry* entry = cache_.find(ref); entry != nullptr && entry->unwritten) {
      return;  // visited from the cache below
    }
    visit(ref, decode(encoded));
  });
  for (const auto& ref : unwritten_) {
    const Entry* entry = cache_.find(ref);
    if (!entry->erased) visit(ref, entry->state);
  }
}

void CardCache::settle(uint64_t written) {
  if (written == settled_seq_) return;
  settled_seq_ = written;
  size_t kept = 0;
  for (const auto& ref : unwritten_) {
    Entry* entry = cache_.find(ref);
    if (entry->changed || entry->change_seq == 0 || entry->change_seq > written) {
      unwritten_[kept++] = ref;  // its latest change is not on disk yet
      continue;
    }
    entry->unwritten = false;
    if (entry->erased) {
      charge(*entry, 0);
      cache_.erase(ref);
    } else {
      charge(*entry, bytesOf(entry->state));
    }
  }
  unwritten_.resize(kept);
  evictIfOverBudget();
}

void CardCache::rollBack(uint64_t written, size_t card_count, bool disk_holds_committed) {
  std::vector<CardRef> reread;
  for (const auto& ref : unwritten_) {
    Entry* entry = cache_.find(ref);
    if (entry == nullptr) continue;
    const bool on_disk = !entry->changed && entry->change_seq != 0 && entry->change_seq <= written;
    if (!on_disk || entry->erased) {
      charge(*entry, 0);
      cache_.erase(ref);
      if (!on_disk) reread.push_back(ref);
      continue;
    }
    entry->unwritten = false;
    charge(*entry, bytesOf(entry->state));
  }
  unwritten_.clear();
  changed_.clear();
  card_count_ = card_count;
  settled_seq_ = written;
  if (reread.empty()) return;
  // The disk holds the committed version of each (or none): reading those back keeps a
  // complete cache complete, so later rewinds scan nothing.
  const bool stays_complete = complete_ && disk_holds_committed;
  complete_ = false;  // until every one is back: a failed read leaves the rest below only
  if (!stays_complete) return;
  for (const auto& ref : reread) (void)readThrough(ref);
  complete_ = true;
}

void CardCache::evictIfOverBudget() {
  // CLOCK: a clean entry used since the last sweep gets a second chance.
  const int64_t target = budget_.limit / 10 * 9;
  for (int pass = 0; pass < 2 && budget_.used.load() > budget_.limit; ++pass) {
    int64_t excess = budget_.used.load() - target;
    std::vector<CardRef> victims;
    cache_.forEachMutable([&](const CardRef& ref, Entry& entry) {
      if (excess <= 0 || entry.unwritten) return;
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
