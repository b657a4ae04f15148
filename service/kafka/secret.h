#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/status.h"

namespace fraud::kafka {

// A secret handed to a program: never logged, never on a command line.
struct Secret {
  std::string bytes;
  std::string source;  // where it came from, for messages: a path or the variable's name
};

// Reads a secret from `file` when given (its content less one trailing newline), else from the
// environment variable `env_var` (its bytes as they are). kInvalidArgument, naming `what` and
// the source, when the file cannot be read, the secret is empty, or neither source is given
// (the message then says to pass `flag` PATH or set `env_var`).
[[nodiscard]] base::Result<Secret> loadSecret(const std::optional<std::string>& file,
                                              std::string_view flag, const char* env_var,
                                              std::string_view what);

inline constexpr const char* kCardHashKeyEnv = "FRAUD_CARD_HASH_KEY";
inline constexpr const char* kCardHashKeyFlag = "--card-hash-key-file";
// The card-hash key's shortest length: card_ref = HMAC-SHA-256(key, card) and a lookup shows
// card -> card_ref pairs, so a short key can be found by brute force from one such pair.
inline constexpr size_t kMinCardHashKeyBytes = 32;

// The card-hash key (docs/rule.md §5): --card-hash-key-file, else FRAUD_CARD_HASH_KEY; refused when
// shorter than kMinCardHashKeyBytes, with a message that says why and how to make one.
[[nodiscard]] base::Result<Secret> loadCardHashKey(const std::optional<std::string>& key_file);

// Whether neither source of the card-hash key is given (then a caller may choose a default).
[[nodiscard]] bool cardHashKeyAbsent(const std::optional<std::string>& key_file);

}  // namespace fraud::kafka
