#include "service/kafka/secret.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fraud::kafka {

std::optional<Secret> loadSecret(const std::optional<std::string>& file, std::string_view flag,
                                 const char* env_var, std::string_view what, std::string& error) {
  Secret secret;
  if (file) {
    secret.source = *file;
    std::ifstream in(*file, std::ios::binary);
    if (!in) {
      error = "cannot read " + std::string(what) + " file " + *file + ": " + std::strerror(errno);
      return std::nullopt;
    }
    std::ostringstream content;
    content << in.rdbuf();
    secret.bytes = content.str();
    if (!secret.bytes.empty() && secret.bytes.back() == '\n') secret.bytes.pop_back();
  } else if (const char* env = std::getenv(env_var); env != nullptr) {
    secret.source = env_var;
    secret.bytes = env;
  } else {
    error = "no " + std::string(what) + ": pass " + std::string(flag) + " PATH or set " + env_var;
    return std::nullopt;
  }
  if (secret.bytes.empty()) {
    error = "the " + std::string(what) + " from " + secret.source + " is empty";
    return std::nullopt;
  }
  return secret;
}

std::optional<Secret> loadCardHashKey(const std::optional<std::string>& key_file,
                                      std::string& error) {
  auto key = loadSecret(key_file, kCardHashKeyFlag, kCardHashKeyEnv, "card-hash key", error);
  if (key && key->bytes.size() < kMinCardHashKeyBytes) {
    error = "the card-hash key from " + key->source + " is " + std::to_string(key->bytes.size()) +
            " bytes; it must be at least " + std::to_string(kMinCardHashKeyBytes) +
            " (a card lookup shows card -> card_ref pairs, from which a short key can be found "
            "by brute force). Make one with: openssl rand -hex 32";
    return std::nullopt;
  }
  return key;
}

bool cardHashKeyAbsent(const std::optional<std::string>& key_file) {
  return !key_file && std::getenv(kCardHashKeyEnv) == nullptr;
}

}  // namespace fraud::kafka
