#pragma once

#include <optional>
#include <string>

namespace fraud::service {

struct CardHashKey {
  std::string bytes;   // never logged
  std::string source;  // where it came from, for messages: a path or the variable's name
};

// Reads the card-hash key (SPEC §5) from `key_file` when given (its content less one trailing
// newline), else from the environment variable FRAUD_CARD_HASH_KEY (its bytes as they are).
// On failure returns nothing and sets `error` to a message naming the source.
[[nodiscard]] std::optional<CardHashKey> loadCardHashKey(const std::optional<std::string>& key_file,
                                                         std::string& error);

inline constexpr const char* kCardHashKeyEnv = "FRAUD_CARD_HASH_KEY";

}  // namespace fraud::service
