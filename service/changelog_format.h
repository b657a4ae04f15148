#pragma once

#include <string_view>

namespace fraud::service {

// The changelog topic (docs/state-and-recovery.md): one partition per input partition, the same
// number; compacted. Card records are keyed by the 32 raw bytes of card_ref, their value the
// encoded card state (state/card_state_codec.h), a null value when the card's state is gone.
// The checkpoint record (input offset, stream time) has this key, which no card key can equal.
inline constexpr std::string_view kChangelogCheckpointKey = "__checkpoint";

}  // namespace fraud::service
