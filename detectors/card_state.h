#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/transaction.h"

namespace fraud::detectors {

// A tx_id as a value: docs/rule.md §1 caps it at 64 bytes. Used to build and read single events;
// a card keeps its events packed (EventList), not as TxIds.
class TxId {
 public:
  static constexpr size_t kMaxSize = 64;

  TxId() = default;
  // `id` must be at most kMaxSize bytes (the codec guarantees it); longer is cut.
  TxId(std::string_view id)  // NOLINT(google-explicit-constructor): a value type for text
      : size_(static_cast<uint8_t>(std::min(id.size(), kMaxSize))) {
    std::memcpy(data_, id.data(), size_);
  }
  TxId(const char* id) : TxId(std::string_view(id)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] std::string_view view() const { return {data_, size_}; }
  [[nodiscard]] size_t size() const { return size_; }
  friend bool operator==(const TxId& a, const TxId& b) { return a.view() == b.view(); }
  friend bool operator==(const TxId& a, std::string_view b) { return a.view() == b; }

 private:
  uint8_t size_ = 0;
  char data_[kMaxSize] = {};
};

// One accepted transaction as a card keeps it (docs/rule.md §2), as a value.
struct Event {
  EventTime time = 0;
  Country country;
  TxId tx_id;

  friend bool operator==(const Event&, const Event&) = default;
};

// A card's events, ordered by (time, order of acceptance) (docs/rule.md §2), packed in one heap
// block: a 24-byte header (count, bytes used, capacity, the last record's offset, a base time),
// then one record per event:
//
//   u24 little endian: time - base, or 0xFFFFFF when that does not fit, then the time in 8 bytes
//   u16 little endian: country index (0..675) << 6 | (tx_id size - 1)
//   the tx_id's bytes (1..64)
//
// The base is set a margin below the first event's time, so a card's live events (window and
// grace span minutes) all fit the 24-bit offset: decoding an event is a fixed sequence of loads,
// without a loop; a time out of range is rebased once (all records rewritten), and kept in 8
// bytes only if the list's span is wider than the offset can cover. A typical event (19-byte
// tx_id) takes 24 bytes where an Event takes 80; the tx_id is stored once, here. Adding an event
// at or after the last one (the usual case) reads only the header and the last record; the
// other operations are one forward pass. The block grows by a quarter of its size (at least to
// fit) when full. An empty list holds no block. Not thread-safe; copying copies the block.
class EventList {
 public:
  // A position in the list and the event there. Reading the list through a cursor copies
  // nothing; a cursor is invalidated by any change to its list.
  class Cursor {
   public:
    [[nodiscard]] bool done() const { return offset_ == end_; }
    [[nodiscard]] EventTime time() const { return time_; }
    [[nodiscard]] Country country() const { return countryOfIndex(country_index_); }
    [[nodiscard]] unsigned countryIndex() const { return country_index_; }
    [[nodiscard]] std::string_view txId() const { return {tx_id_, tx_size_}; }
    // The record's offset: two cursors of a list are at the same event when these are equal.
    [[nodiscard]] uint32_t offset() const { return offset_; }
    // Moves to the next event; `done()` past the last.
    void next() {
      offset_ = next_;
      if (offset_ != end_) decode();
    }

   private:
    friend class EventList;
    Cursor(const char* records, uint32_t end, uint32_t offset, EventTime base)
        : records_(records), end_(end), offset_(offset), base_(base) {
      if (offset_ != end_) decode();
    }
    void decode() {
      const char* p = records_ + offset_;
      uint32_t word;
      std::memcpy(&word, p, 4);  // the offset's 3 bytes and one of the country's
      const uint32_t off = word & kEscape;
      if (off != kEscape) [[likely]] {
        time_ = base_ + static_cast<EventTime>(off);
        p += 3;
      } else {
        std::memcpy(&time_, p + 3, 8);
        p += 11;
      }
      uint16_t packed;
      std::memcpy(&packed, p, 2);
      country_index_ = static_cast<uint16_t>(packed >> 6);
      tx_size_ = static_cast<uint8_t>((packed & 0x3F) + 1);
      tx_id_ = p + 2;
      next_ = static_cast<uint32_t>(tx_id_ + tx_size_ - records_);
    }

    const char* records_;
    uint32_t end_;
    uint32_t offset_;
    uint32_t next_ = 0;
    EventTime base_;
    EventTime time_ = 0;
    const char* tx_id_ = nullptr;
    uint16_t country_index_ = 0;
    uint8_t tx_size_ = 0;
  };

  // Reads events as values (tests, the API); the detector reads through cursors.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Event;
    using difference_type = std::ptrdiff_t;
    using pointer = const Event*;
    using reference = Event;

    Event operator*() const { return Event{cursor_.time(), cursor_.country(), cursor_.txId()}; }
    const_iterator& operator++() {
      cursor_.next();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      cursor_.next();
      return before;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.cursor_.offset() == b.cursor_.offset();
    }

   private:
    friend class EventList;
    explicit const_iterator(Cursor cursor) : cursor_(cursor) {}
    Cursor cursor_;
  };

  EventList() = default;
  EventList(std::initializer_list<Event> events);
  EventList(const EventList& other);
  EventList(EventList&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  EventList& operator=(const EventList& other);
  EventList& operator=(EventList&& other) noexcept;
  EventList& operator=(std::initializer_list<Event> events);
  ~EventList() { std::free(block_); }

  [[nodiscard]] size_t size() const { return block_ == nullptr ? 0 : header().count; }
  [[nodiscard]] bool empty() const { return size() == 0; }
  // Heap bytes held, for memory accounting.
  [[nodiscard]] size_t allocatedBytes() const {
    return block_ == nullptr ? 0 : sizeof(Header) + header().capacity;
  }
  // Bytes of the packed records (not counting the header).
  [[nodiscard]] size_t packedBytes() const { return block_ == nullptr ? 0 : header().size; }
  // A hint that the events are read soon: fetches the first cache lines of the block.
  void prefetch() const {
    if (block_ == nullptr) return;
    __builtin_prefetch(block_);
    __builtin_prefetch(block_ + 64);
  }

  [[nodiscard]] Cursor cursor() const {
    return block_ == nullptr ? Cursor(nullptr, 0, 0, 0)
                             : Cursor(records(), header().size, 0, header().base);
  }
  [[nodiscard]] const_iterator begin() const { return const_iterator(cursor()); }
  [[nodiscard]] const_iterator end() const {
    const uint32_t size = block_ == nullptr ? 0 : header().size;
    return const_iterator(Cursor(nullptr, size, size, 0));
  }
  // The i-th event; walks the list (tests and the API only). `i` must be < size().
  [[nodiscard]] Event at(size_t i) const;
  [[nodiscard]] Event operator[](size_t i) const { return at(i); }
  [[nodiscard]] Event front() const { return at(0); }
  [[nodiscard]] Event back() const { return at(size() - 1); }
  // The latest event time; the list must not be empty.
  [[nodiscard]] EventTime lastTime() const {
    return Cursor(records(), header().size, header().last, header().base).time();
  }

  // Adds an event after every event with the same or an earlier time (docs/rule.md §2: ties keep
  // their order of acceptance). `tx_id` must be 1..TxId::kMaxSize bytes; `time` 0..kMaxEventTime.
  void add(EventTime time, Country country, std::string_view tx_id);
  void push_back(const Event& event) { add(event.time, event.country, event.tx_id.view()); }
  // Adds an event at the end without looking for its place: `time` must be >= lastTime().
  // `previous` is lastTime() (any value when empty); unused, kept for the codec's calls.
  void append(EventTime previous, EventTime time, Country country, std::string_view tx_id);
  // Room for `record_bytes` bytes of packed records without growing (a hint: a decoder that
  // knows about how much it will append).
  void reserve(size_t record_bytes);
  // Drops every event with a time before `horizon`.
  void eraseBefore(EventTime horizon);
  // Drops the first `n` events (n <= size()).
  void eraseFirst(size_t n);
  void clear();
  // docs/rule.md §2 step 2: some event with time >= live_from has this tx_id.
  [[nodiscard]] bool containsTxIdFrom(std::string_view tx_id, EventTime live_from) const;

  // Equal events in the same order (two lists may encode them against different bases).
  friend bool operator==(const EventList& a, const EventList& b);

  [[nodiscard]] static constexpr Country countryOfIndex(unsigned index) {
    return Country::of(static_cast<char>('A' + index / 26), static_cast<char>('A' + index % 26));
  }

 private:
  static constexpr uint32_t kEscape = 0xFFFFFF;  // the offset of a time kept in 8 bytes
  struct Header {
    uint32_t count;
    uint32_t size;      // bytes of records in use
    uint32_t capacity;  // bytes of records the block has room for
    uint32_t last;      // offset of the last record (when count > 0)
    EventTime base;     // a record's time is base + its 24-bit offset
  };
  [[nodiscard]] const Header& header() const { return *reinterpret_cast<const Header*>(block_); }
  [[nodiscard]] Header& header() { return *reinterpret_cast<Header*>(block_); }
  [[nodiscard]] const char* records() const { return block_ + sizeof(Header); }
  [[nodiscard]] char* records() { return block_ + sizeof(Header); }
  // Replaces `old_size` bytes at `offset` with `size` bytes from `bytes`, growing the block.
  void splice(uint32_t offset, uint32_t old_size, const char* bytes, uint32_t size);
  // Drops the records before `cursor` (which is at an event, or done).
  void eraseUntil(const Cursor& cursor, uint32_t dropped);
  // Writes one record for `time` against the list's base; returns its size.
  [[nodiscard]] size_t putRecord(char* out, EventTime time, Country country,
                                 std::string_view tx_id) const;
  // Before adding an event at `time` in a record of about `record_size` bytes: allocates the
  // block, or sets the base of an empty list, or rewrites the records against a lower base
  // when `time` does not fit the current one (and would fit that).
  void rebaseFor(EventTime time, size_t record_size);
  // Adds the record at the end; the base must be set.
  void appendRecord(EventTime time, Country country, std::string_view tx_id);

  char* block_ = nullptr;
};

// An optional value kept on the heap: one pointer when empty, as most cards' incident is.
// The interface is std::optional's, as far as the detector and the codec use it.
template <typename T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): like std::optional
  HeapOptional(const T& value)     // NOLINT(google-explicit-constructor): like std::optional
      : value_(std::make_unique<T>(value)) {}
  HeapOptional(T&& value)  // NOLINT(google-explicit-constructor): like std::optional
      : value_(std::make_unique<T>(std::move(value))) {}
  HeapOptional(const HeapOptional& other)
      : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(T value) {
    if (value_) {
      *value_ = std::move(value);
    } else {
      value_ = std::make_unique<T>(std::move(value));
    }
    return *this;
  }
  ~HeapOptional() = default;

  [[nodiscard]] bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  T& emplace() {
    value_ = std::make_unique<T>();
    return *value_;
  }
  void reset() { value_.reset(); }

  friend bool operator==(const HeapOptional& a, const HeapOptional& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || *a == *b;
  }

 private:
  std::unique_ptr<T> value_;
};

// A card's open incident (docs/rule.md §4). `start` is its identity and never changes.
struct Incident {
  EventTime start = 0;
  EventTime end = 0;
  uint32_t revision = 0;
  std::vector<Country> countries;  // sorted, distinct

  friend bool operator==(const Incident&, const Incident&) = default;
};

// Everything the detector keeps for one card: two pointers, plus the events' block.
// Invariant: `events` is ordered by (time, order of acceptance): a new event goes after every
// event with the same time, so the order survives serialization without a sequence number.
struct CardState {
  EventList events;
  HeapOptional<Incident> incident;

  [[nodiscard]] bool empty() const { return events.empty() && !incident.has_value(); }
  // The latest time at which this card still matters: its newest event or its incident's end.
  // The card can be dropped once this falls behind the partition's live horizon (docs/rule.md §2,
  // §4).
  [[nodiscard]] EventTime lastRelevantTime() const;
  // Heap bytes held by the state (not counting the CardState itself), for memory accounting.
  [[nodiscard]] size_t allocatedBytes() const;

  friend bool operator==(const CardState&, const CardState&) = default;
};

}  // namespace fraud::detectors
