#include "detectors/card_state.h"

#include <algorithm>
#include <limits>
#include <new>

namespace fraud::detectors {
namespace {

// The longest record: an escaped time, the country and size, a tx_id of the longest size.
constexpr size_t kMaxRecord = 3 + 8 + 2 + TxId::kMaxSize;
// How far below the first event's time a new list's base is set: room for late events.
constexpr EventTime kBaseMargin = EventTime{1} << 22;  // 70 minutes

// glibc's malloc hands out chunks of 16k bytes holding 16k - 8 usable ones: asking for exactly
// that wastes nothing.
size_t roundAllocation(size_t bytes) { return std::max<size_t>(24, (bytes + 23) / 16 * 16 - 8); }

// The base for a list whose earliest time is `time`.
EventTime baseBelow(EventTime time) {
  return time >= std::numeric_limits<EventTime>::min() + kBaseMargin ? time - kBaseMargin : time;
}

}  // namespace

size_t EventList::putRecord(char* out, EventTime time, Country country,
                            std::string_view tx_id) const {
  const EventTime base = header().base;
  const uint64_t off = static_cast<uint64_t>(time) - static_cast<uint64_t>(base);
  size_t n;
  if (time >= base && off < kEscape) {
    out[0] = static_cast<char>(off & 0xFF);
    out[1] = static_cast<char>(off >> 8 & 0xFF);
    out[2] = static_cast<char>(off >> 16);
    n = 3;
  } else {
    out[0] = out[1] = out[2] = static_cast<char>(0xFF);
    std::memcpy(out + 3, &time, 8);
    n = 11;
  }
  // A tx_id outside 1..kMaxSize bytes is cut, or padded with a space.
  const size_t tx_size = std::clamp<size_t>(tx_id.size(), 1, TxId::kMaxSize);
  const unsigned packed = country.index() << 6 | static_cast<unsigned>(tx_size - 1);
  out[n++] = static_cast<char>(packed & 0xFF);
  out[n++] = static_cast<char>(packed >> 8);
  out[n] = ' ';
  std::memcpy(out + n, tx_id.data(), std::min(tx_id.size(), tx_size));
  return n + tx_size;
}

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

void EventList::splice(uint32_t offset, uint32_t old_size, const char* bytes, uint32_t size) {
  const uint32_t used = header().size;
  const uint32_t new_used = used - old_size + size;
  if (new_used > header().capacity) {
    const size_t old_allocation = sizeof(Header) + header().capacity;
    const size_t allocation =
        roundAllocation(std::max(sizeof(Header) + new_used, old_allocation + old_allocation / 4));
    auto* grown = static_cast<char*>(std::realloc(block_, allocation));
    if (grown == nullptr) throw std::bad_alloc();
    block_ = grown;
    header().capacity = static_cast<uint32_t>(allocation - sizeof(Header));
  }
  char* r = records();
  std::memmove(r + offset + size, r + offset + old_size, used - offset - old_size);
  if (size > 0) std::memcpy(r + offset, bytes, size);
  header().size = new_used;
}

void EventList::reserve(size_t record_bytes) {
  if (record_bytes > UINT32_MAX - sizeof(Header)) return;
  if (block_ == nullptr) {
    const size_t allocation = roundAllocation(sizeof(Header) + record_bytes);
    block_ = static_cast<char*>(std::malloc(allocation));
    if (block_ == nullptr) throw std::bad_alloc();
    // The base is set by the first event (rebaseFor: an empty list takes that event's).
    header() = Header{0, 0, static_cast<uint32_t>(allocation - sizeof(Header)), 0, 0};
    return;
  }
  if (header().capacity >= record_bytes) return;
  const size_t allocation = roundAllocation(sizeof(Header) + record_bytes);
  auto* grown = static_cast<char*>(std::realloc(block_, allocation));
  if (grown == nullptr) throw std::bad_alloc();
  block_ = grown;
  header().capacity = static_cast<uint32_t>(allocation - sizeof(Header));
}

void EventList::rebaseFor(EventTime time, size_t record_size) {
  if (block_ == nullptr) {
    const size_t allocation = roundAllocation(sizeof(Header) + record_size);
    block_ = static_cast<char*>(std::malloc(allocation));
    if (block_ == nullptr) throw std::bad_alloc();
    header() = Header{0, 0, static_cast<uint32_t>(allocation - sizeof(Header)), 0, baseBelow(time)};
    return;
  }
  Header& h = header();
  if (h.count == 0) {
    h.base = baseBelow(time);
    return;
  }
  const uint64_t off = static_cast<uint64_t>(time) - static_cast<uint64_t>(h.base);
  if (time >= h.base && off < kEscape) [[likely]] {
    return;
  }
  // Rare: rewrite every record against a base below the earliest of the list and `time`, when
  // that makes the whole span fit; a wider span keeps its outliers in 8 bytes.
  const EventTime earliest = std::min(time, cursor().time());
  const EventTime latest = std::max(time, lastTime());
  const EventTime base = baseBelow(earliest);
  if (static_cast<uint64_t>(latest) - static_cast<uint64_t>(base) >= kEscape) return;
  const std::vector<Event> events(begin(), end());
  h.count = 0;
  h.size = 0;
  h.base = base;
  for (const Event& e : events) appendRecord(e.time, e.country, e.tx_id.view());
}

void EventList::add(EventTime time, Country country, std::string_view tx_id) {
  rebaseFor(time, 5 + tx_id.size());
  if (header().count == 0 || time >= lastTime()) {
    appendRecord(time, country, tx_id);
    return;
  }
  Cursor c = cursor();
  while (c.time() <= time) c.next();  // stops before the end: the last event is later
  char bytes[kMaxRecord];
  const size_t n = putRecord(bytes, time, country, tx_id);
  splice(c.offset(), 0, bytes, static_cast<uint32_t>(n));
  Header& h = header();
  h.last += static_cast<uint32_t>(n);
  ++h.count;
}

void EventList::append(EventTime /*previous*/, EventTime time, Country country,
                       std::string_view tx_id) {
  rebaseFor(time, 5 + tx_id.size());
  appendRecord(time, country, tx_id);
}

void EventList::appendRecord(EventTime time, Country country, std::string_view tx_id) {
  char bytes[kMaxRecord];
  const size_t n = putRecord(bytes, time, country, tx_id);
  const uint32_t offset = header().size;
  splice(offset, 0, bytes, static_cast<uint32_t>(n));
  Header& h = header();
  h.last = offset;
  ++h.count;
}

void EventList::eraseUntil(const Cursor& cursor, uint32_t dropped) {
  if (cursor.done()) {
    clear();
    return;
  }
  const uint32_t offset = cursor.offset();
  splice(0, offset, nullptr, 0);
  Header& h = header();
  h.last -= offset;
  h.count -= dropped;
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
  header().last = 0;
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
  if (a.size() != b.size()) return false;
  EventList::Cursor x = a.cursor();
  for (EventList::Cursor y = b.cursor(); !x.done(); x.next(), y.next()) {
    if (x.time() != y.time() || x.countryIndex() != y.countryIndex() || x.txId() != y.txId()) {
      return false;
    }
  }
  return true;
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
