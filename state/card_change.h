#pragma once

#include <optional>
#include <string>

#include "detectors/card_ref.h"

namespace fraud::state {

// One card's change since the last checkpoint: its encoded state, or nothing when erased.
struct CardChange {
  detectors::CardRef card_ref;
  std::optional<std::string> encoded;
};

}  // namespace fraud::state
