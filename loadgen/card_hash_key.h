#pragma once

#include <optional>
#include <string>

namespace fraud::loadgen {

// The card-hash key (SPEC §5), loaded exactly as `fraud-detector` loads it (service/
// card_hash_key.h, which loadgen/ may not depend on): the file's content less one trailing
// newline when `key_file` is given, else the bytes of FRAUD_CARD_HASH_KEY. Nothing when neither
// is set. `error` is set when a source is given but unusable (unreadable file, empty key).
struct CardHashKey {
  std::string bytes;   // never logged
  std::string source;  // a path or the variable's name, for messages
};

[[nodiscard]] std::optional<CardHashKey> loadCardHashKey(const std::optional<std::string>& key_file,
                                                         std::string& error);

inline constexpr const char* kCardHashKeyEnv = "FRAUD_CARD_HASH_KEY";

}  // namespace fraud::loadgen
