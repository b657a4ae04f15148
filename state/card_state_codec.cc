#include "state/card_state_codec.h"

#include <cstdint>
#include <cstring>

namespace fraud::state {
namespace {

using detectors::CardState;
using detectors::Country;
using detectors::EventTime;
using detectors::Incident;
using detectors::kMaxEventTime;

// The latest an incident can end (docs/rule.md §4: `end = s* + W`): the longest window
// (DetectorOptions: W is 1..kMaxEventTime) past the latest event time. The codec does not know
// the service's W, so it bounds by the largest.
constexpr EventTime kMaxIncidentEnd = 2 * kMaxEventTime;

// Where an encoding goes: a string it grows, or a buffer it must fit (BoundedOut).
class StringOut {
 public:
  explicit StringOut(std::string& out) : out_(out) {}
  void push_back(char c) { out_.push_back(c); }
  void append(const char* bytes, size_t n) { out_.append(bytes, n); }

 private:
  std::string& out_;
};

// Writes while the bytes fit `buffer` and counts them all: never allocates.
class BoundedOut {
 public:
  explicit BoundedOut(std::span<char> buffer) : buffer_(buffer) {}
  void push_back(char c) {
    if (size_ < buffer_.size()) buffer_[size_] = c;
    ++size_;
  }
  void append(const char* bytes, size_t n) {
    if (n <= buffer_.size() && size_ <= buffer_.size() - n) {
      std::memcpy(buffer_.data() + size_, bytes, n);
    }
    size_ += n;
  }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  std::span<char> buffer_;
  size_t size_ = 0;
};

template <typename Out>
void putVarint(Out& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

template <typename Out>
void putCountry(Out& out, const Country& c) {
  out.append(c.code, 2);
}

template <typename Out>
void encodeTo(const CardState& state, Out& out) {
  out.push_back(static_cast<char>(kCardStateFormat));
  putVarint(out, state.events.size());
  EventTime previous = 0;
  for (auto e = state.events.cursor(); !e.done(); e.next()) {
    putVarint(out, static_cast<uint64_t>(e.time() - previous));  // events are sorted by time
    previous = e.time();
    putCountry(out, e.country());
    putVarint(out, e.txId().size());
    out.append(e.txId().data(), e.txId().size());
  }
  if (!state.incident) {
    out.push_back('\0');
    return;
  }
  const Incident& incident = *state.incident;
  out.push_back('\1');
  putVarint(out, static_cast<uint64_t>(incident.start));
  putVarint(out, static_cast<uint64_t>(incident.end - incident.start));
  putVarint(out, incident.revision);
  putVarint(out, incident.countries.size());
  for (const Country& c : incident.countries) putCountry(out, c);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const auto b = static_cast<uint8_t>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // A time or a span of time of at most `max`.
  bool time(EventTime& t, EventTime max) {
    uint64_t v;
    if (!varint(v) || v > static_cast<uint64_t>(max)) return false;
    t = static_cast<EventTime>(v);
    return true;
  }
  bool country(Country& c) {
    if (bytes_.size() - pos_ < 2) return false;
    const char a = bytes_[pos_];
    const char b = bytes_[pos_ + 1];
    if (a < 'A' || a > 'Z' || b < 'A' || b > 'Z') return false;
    c = Country::of(a, b);
    pos_ += 2;
    return true;
  }
  // docs/rule.md §1: a tx_id is 1..64 bytes.
  bool txId(std::string_view& id) {
    uint64_t len;
    if (!varint(len) || len == 0 || len > detectors::TxId::kMaxSize || len > bytes_.size() - pos_) {
      return false;
    }
    id = bytes_.substr(pos_, len);
    pos_ += len;
    return true;
  }
  bool byte(uint8_t& b) {
    if (pos_ >= bytes_.size()) return false;
    b = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  [[nodiscard]] bool done() const { return pos_ == bytes_.size(); }
  [[nodiscard]] size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// The one reading of the format: `sink` is told each event and the incident as they are read.
// Refuses what decodeCardState() documents; CardStateBuilder keeps what it is told,
// CardStateCheck nothing (the format's check without allocating).
template <typename Sink>
bool parseCardState(std::string_view bytes, Sink& sink) {
  Reader in(bytes);
  uint8_t format;
  if (!in.byte(format) || format != kCardStateFormat) return false;
  uint64_t count;
  // Each event takes at least 4 bytes, which bounds a corrupt count before allocating.
  if (!in.varint(count) || count > in.remaining() / 4) return false;
  sink.events(count, in.remaining());
  EventTime previous = 0;
  for (uint64_t i = 0; i < count; ++i) {
    EventTime delta;
    Country country;
    std::string_view tx_id;
    // docs/rule.md §1: every event time is 0..kMaxEventTime.
    if (!in.time(delta, kMaxEventTime - previous) || !in.country(country) || !in.txId(tx_id)) {
      return false;
    }
    sink.event(previous, previous + delta, country, tx_id);
    previous += delta;
  }
  uint8_t has_incident;
  if (!in.byte(has_incident) || has_incident > 1) return false;
  if (has_incident == 1) {
    EventTime start;
    EventTime length;
    uint64_t revision;
    uint64_t countries;
    // It starts at an event's time and ends at most a window past the latest.
    if (!in.time(start, kMaxEventTime) || !in.time(length, kMaxIncidentEnd - start) ||
        !in.varint(revision) || revision == 0 || revision > UINT32_MAX || !in.varint(countries) ||
        countries > in.remaining() / 2) {
      return false;
    }
    sink.incident(start, start + length, static_cast<uint32_t>(revision), countries);
    for (uint64_t i = 0; i < countries; ++i) {
      Country c;
      if (!in.country(c)) return false;
      sink.incidentCountry(c);
    }
  }
  return in.done();
}

class CardStateBuilder {
 public:
  // An event's packed record is about as long as its encoding: one allocation, mostly.
  void events(uint64_t count, size_t encoded_bytes) {
    if (count > 0) state_.events.reserve(encoded_bytes);
  }
  void event(EventTime previous, EventTime time, const Country& country, std::string_view tx_id) {
    state_.events.append(previous, time, country, tx_id);
  }
  void incident(EventTime start, EventTime end, uint32_t revision, uint64_t countries) {
    Incident& incident = state_.incident.emplace();
    incident.start = start;
    incident.end = end;
    incident.revision = revision;
    incident.countries.reserve(countries);
  }
  void incidentCountry(const Country& c) { state_.incident->countries.push_back(c); }
  CardState take() { return std::move(state_); }

 private:
  CardState state_;
};

struct CardStateCheck {
  void events(uint64_t, size_t) {}
  void event(EventTime, EventTime, const Country&, std::string_view) {}
  void incident(EventTime, EventTime, uint32_t, uint64_t) {}
  void incidentCountry(const Country&) {}
};

}  // namespace

void encodeCardState(const CardState& state, std::string& out) {
  StringOut sink(out);
  encodeTo(state, sink);
}

size_t encodeCardStateInto(const CardState& state, std::span<char> buffer) noexcept {
  BoundedOut sink(buffer);
  encodeTo(state, sink);
  return sink.size();
}

std::string encodeCardState(const CardState& state) {
  std::string out;
  encodeCardState(state, out);
  return out;
}

std::optional<CardState> decodeCardState(std::string_view bytes) {
  CardStateBuilder builder;
  if (!parseCardState(bytes, builder)) return std::nullopt;
  return builder.take();
}

bool isCardState(std::string_view bytes) noexcept {
  CardStateCheck check;
  return parseCardState(bytes, check);
}

size_t maxEncodedCardStateBytes(size_t max_events) {
  detectors::CardState state;
  const std::string tx_id(detectors::TxId::kMaxSize, 'x');
  for (size_t i = 0; i < max_events; ++i) {
    state.events.append(detectors::kMaxEventTime, detectors::kMaxEventTime,
                        detectors::Country::of('Z', 'Z'), tx_id);
  }
  detectors::Incident& incident = state.incident.emplace();
  incident.start = detectors::kMaxEventTime;
  incident.end = detectors::kMaxEventTime;
  incident.revision = UINT32_MAX;
  for (char a = 'A'; a <= 'Z'; ++a) {
    for (char b = 'A'; b <= 'Z'; ++b) incident.countries.push_back(detectors::Country::of(a, b));
  }
  return encodeCardState(state).size();
}

}  // namespace fraud::state
