#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "detectors/card_state.h"

namespace fraud::state {

// A card's state copied into a buffer this object owns, in the codec's binary form
// (card_state_codec.h): a copy that allocates nothing once the buffer is large enough. For
// copying under a lock that the state's writer shares (the service's card lookups hold the
// partition task's lock only while they copy); the state is rebuilt from the copy, allocating,
// after the lock is released.
//
// Not thread-safe: one thread at a time. capture() is the only method meant to run under the
// caller's lock; reserve() and state() allocate.
class CardStateCopy {
 public:
  // About 150 events with 19-byte tx_ids and an incident: most cards fit without growing.
  static constexpr size_t kDefaultCapacity = 4096;

  explicit CardStateCopy(size_t capacity = kDefaultCapacity);

  // Copies `state` when its encoding fits the buffer: true. Else false, nothing is held, and
  // needed() says how large the buffer must be (reserve() that, outside the lock, and copy
  // again). Never allocates, never throws.
  [[nodiscard]] bool capture(const detectors::CardState& state) noexcept;
  // The size of the last capture()'s encoding, whether or not it fit.
  [[nodiscard]] size_t needed() const { return size_; }
  [[nodiscard]] size_t capacity() const { return buffer_.size(); }
  // Grows the buffer to at least `bytes`, with a quarter more for a card that grows meanwhile.
  void reserve(size_t bytes);
  // The state the last successful capture() copied (allocates); nothing when none did, or when
  // the copy does not decode (a state the codec cannot store either).
  [[nodiscard]] std::optional<detectors::CardState> state() const;

 private:
  std::vector<char> buffer_;  // its size is the capacity
  size_t size_ = 0;
  bool held_ = false;
};

}  // namespace fraud::state
