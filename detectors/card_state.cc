#include "detectors/card_state.h"

#include <algorithm>
#include <limits>
#include <new>

namespace fraud::detectors {
namespace {

// The longest record: a 64-bit varint delta, the country and size, a tx_id of the longest size.
constexpr size_t kMaxVarint = 10;
constexpr size_t kMaxRecord = kMaxVarint + 2 + TxId::kMaxSize;

size_t putVarint(char* out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<char>(v);
  return n;
}

// One record (see EventList). A tx_id outside 1..kMaxSize bytes is cut, or padded with a space.
size_t putRecord(char* out, uint64_t delta, Country country, std::string_view tx_id) {
  size_t n = putVarint(out, delta);
  const size_t tx_size = std::clamp<size_t>(tx_id.size(), 1, TxId::kMaxSize);
  const unsigned packed = country.index() << 6 | static_cast<unsigned>(tx_size - 1);
  out[n++] = static_cast<char>(packed & 0xFF);
  out[n++] = static_cast<char>(packed >> 8);
  out[n] = ' ';
  std::memcpy(out + n, tx_id.data(), std::min(tx_id.size(), tx_size));
  return n + tx_size;
}

uint32_t varintSizeAt(const char* p) {
  uint32_t n = 1;
  while ((static_cast<uint8_t>(*p++) & 0x80) != 0) ++n;
  return n;
}

// glibc's malloc hands out chunks of 16k bytes holding 16k - 8 usable ones: asking for exactly
// that wastes nothing.
size_t roundAllocation(size_t bytes) { return std::max<size_t>(24, (bytes + 23) / 16 * 16 - 8); }

}  // namespace

EventList::EventList(std::initializer_list<Event> events) {
  for (const Event& e : events) push_back(e);
}

EventList::EventList(const EventList& other) {
  if (other.empty()) return;
  const size_t allocation = roundAllocation(sizeof(Header) + other.header().size);
  block_ = static_cast<char*>(std::malloc(allocation));
  if (block_ == nullptr) throw std::bad_alloc();
  std::memcpy(block_, other.block_, sizeof(Header) + other.header().size);
  header().capacity = static_cast<uint32_t>(allocation - sizeof(Header));
}

EventList& EventList::operator=(const EventList& other) {
  if (this != &other) *this = EventList(other);
  return *this;
}

EventList& EventList::operator=(EventList&& other) noexcept {
  if (this != &other) {
    std::free(block_);
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

EventList& EventList::operator=(std::initializer_list<Event> events) {
  clear();
  for (const Event& e : events) push_back(e);
  return *this;
}

Event EventList::at(size_t i) const {
  Cursor c = cursor();
  for (; i > 0; --i) c.next();
  return Event{c.time(), c.country(), c.txId()};
}

EventTime EventList::lastTime() const {
  EventTime last = std::numeric_limits<EventTime>::min();
  for (Cursor c = cursor(); !c.done(); c.next()) last = c.time();
  return last;
}

void EventList::splice(uint32_t offset, uint32_t old_size, const char* bytes, uint32_t size) {
  const uint32_t used = block_ == nullptr ? 0 : header().size;
  const uint32_t new_used = used - old_size + size;
  if (block_ == nullptr || new_used > header().capacity) {
    const size_t old_allocation = block_ == nullptr ? 0 : sizeof(Header) + header().capacity;
    const size_t allocation =
        roundAllocation(std::max(sizeof(Header) + new_used, old_allocation + old_allocation / 4));
    auto* grown = static_cast<char*>(std::realloc(block_, allocation));
    if (grown == nullptr) throw std::bad_alloc();
    if (block_ == nullptr) {
      auto& h = *reinterpret_cast<Header*>(grown);
      h.count = 0;
      h.size = 0;
    }
    block_ = grown;
    header().capacity = static_cast<uint32_t>(allocation - sizeof(Header));
  }
  char* r = records();
  std::memmove(r + offset + size, r + offset + old_size, used - offset - old_size);
  std::memcpy(r + offset, bytes, size);
  header().size = new_used;
}

void EventList::add(EventTime time, Country country, std::string_view tx_id) {
  Cursor c = cursor();
  EventTime previous = 0;
  while (!c.done() && c.time() <= time) {
    previous = c.time();
    c.next();
  }
  char bytes[kMaxRecord + kMaxVarint];
  size_t n = putRecord(bytes, static_cast<uint64_t>(time - previous), country, tx_id);
  uint32_t offset = block_ == nullptr ? 0 : header().size;
  uint32_t replaced = 0;
  if (!c.done()) {
    // The next event's delta was from `previous`; it is from `time` now.
    offset = c.offset();
    replaced = varintSizeAt(records() + offset);
    n += putVarint(bytes + n, static_cast<uint64_t>(c.time() - time));
  }
  splice(offset, replaced, bytes, static_cast<uint32_t>(n));
  ++header().count;
}

void EventList::append(EventTime previous, EventTime time, Country country,
                       std::string_view tx_id) {
  if (empty()) previous = 0;
  char bytes[kMaxRecord];
  const size_t n = putRecord(bytes, static_cast<uint64_t>(time - previous), country, tx_id);
  splice(block_ == nullptr ? 0 : header().size, 0, bytes, static_cast<uint32_t>(n));
  ++header().count;
}

void EventList::eraseUntil(const Cursor& cursor, uint32_t dropped) {
  if (cursor.done()) {
    clear();
    return;
  }
  // The new first event's delta becomes its time.
  char bytes[kMaxVarint];
  const size_t n = putVarint(bytes, static_cast<uint64_t>(cursor.time()));
  const uint32_t offset = cursor.offset();
  splice(0, offset + varintSizeAt(records() + offset), bytes, static_cast<uint32_t>(n));
  header().count -= dropped;
}

void EventList::eraseBefore(EventTime horizon) {
  Cursor c = cursor();
  uint32_t dropped = 0;
  while (!c.done() && c.time() < horizon) {
    c.next();
    ++dropped;
  }
  if (dropped > 0) eraseUntil(c, dropped);
}

void EventList::eraseFirst(size_t n) {
  if (n == 0) return;
  Cursor c = cursor();
  for (size_t i = 0; i < n && !c.done(); ++i) c.next();
  eraseUntil(c, static_cast<uint32_t>(n));
}

void EventList::clear() {
  if (block_ == nullptr) return;
  header().count = 0;
  header().size = 0;
}

bool EventList::containsTxIdFrom(std::string_view tx_id, EventTime live_from) const {
  const size_t size = tx_id.size();
  if (size >= 8) {
    // Ids of one size mostly differ in their first 8 bytes: one compare, no call, per event.
    uint64_t head;
    std::memcpy(&head, tx_id.data(), 8);
    for (Cursor c = cursor(); !c.done(); c.next()) {
      if (c.tx_size_ != size || c.time() < live_from) continue;
      uint64_t other;
      std::memcpy(&other, c.tx_id_, 8);
      if (other == head && std::memcmp(c.tx_id_ + 8, tx_id.data() + 8, size - 8) == 0) {
        return true;
      }
    }
    return false;
  }
  for (Cursor c = cursor(); !c.done(); c.next()) {
    if (c.time() >= live_from && c.txId() == tx_id) return true;
  }
  return false;
}

bool operator==(const EventList& a, const EventList& b) {
  if (a.size() != b.size() || a.packedBytes() != b.packedBytes()) return false;
  return a.empty() || std::memcmp(a.records(), b.records(), a.packedBytes()) == 0;
}

EventTime CardState::lastRelevantTime() const {
  EventTime last = std::numeric_limits<EventTime>::min();
  if (!events.empty()) last = events.lastTime();
  if (incident) last = std::max(last, incident->end);
  return last;
}

size_t CardState::allocatedBytes() const {
  return events.allocatedBytes() +
         (incident ? sizeof(Incident) + incident->countries.capacity() * sizeof(Country) : 0);
}

}  // namespace fraud::detectors
