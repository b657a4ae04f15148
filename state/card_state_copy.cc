#include "state/card_state_copy.h"

#include <string_view>

#include "state/card_state_codec.h"

namespace fraud::state {

CardStateCopy::CardStateCopy(size_t capacity) : buffer_(capacity) {}

bool CardStateCopy::capture(const detectors::CardState& state) noexcept {
  size_ = encodeCardStateInto(state, buffer_);
  held_ = size_ <= buffer_.size();
  return held_;
}

void CardStateCopy::reserve(size_t bytes) {
  if (bytes <= buffer_.size()) return;
  buffer_ = std::vector<char>(bytes + bytes / 4);
  held_ = false;
}

std::optional<detectors::CardState> CardStateCopy::state() const {
  if (!held_) return std::nullopt;
  return decodeCardState(std::string_view(buffer_.data(), size_));
}

}  // namespace fraud::state
