#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fraud::service {

// A secret given to the service: never logged, never on a command line.
struct Secret {
  std::string bytes;
  std::string source;  // where it came from, for messages: a path or the variable's name
};

// Reads a secret from `file` when given (its content less one trailing newline), else from the
// environment variable `env_var` (its bytes as they are). On failure, or when the secret is
// empty, returns nothing and sets `error` to a message naming `what` and the source.
// `flag` names the file's flag in messages.
[[nodiscard]] std::optional<Secret> loadSecret(const std::optional<std::string>& file,
                                               std::string_view flag, const char* env_var,
                                               std::string_view what, std::string& error);

inline constexpr const char* kCardHashKeyEnv = "FRAUD_CARD_HASH_KEY";
inline constexpr const char* kApiTokenEnv = "FRAUD_API_TOKEN";

// The card-hash key (SPEC §5): --card-hash-key-file, else FRAUD_CARD_HASH_KEY.
[[nodiscard]] inline std::optional<Secret> loadCardHashKey(
    const std::optional<std::string>& key_file, std::string& error) {
  return loadSecret(key_file, "--card-hash-key-file", kCardHashKeyEnv, "card-hash key", error);
}

}  // namespace fraud::service
