#include "service/kafka/secret.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fraud::kafka {

base::Result<Secret> loadSecret(const std::optional<std::string>& file, std::string_view flag,
                                const char* env_var, std::string_view what) {
  Secret secret;
  if (file) {
    secret.source = *file;
    std::ifstream in(*file, std::ios::binary);
    if (!in) {
      return base::Status::invalidArgument("cannot read " + std::string(what) + " file " + *file +
                                           ": " + std::strerror(errno));
    }
    std::ostringstream content;
    content << in.rdbuf();
    secret.bytes = content.str();
    if (!secret.bytes.empty() && secret.bytes.back() == '\n') secret.bytes.pop_back();
  } else if (const char* env = std::getenv(env_var); env != nullptr) {
    secret.source = env_var;
    secret.bytes = env;
  } else {
    return base::Status::invalidArgument("no " + std::string(what) + ": pass " + std::string(flag) +
                                         " PATH or set " + env_var);
  }
  if (secret.bytes.empty()) {
    return base::Status::invalidArgument("the " + std::string(what) + " from " + secret.source +
                                         " is empty");
  }
  return secret;
}

base::Result<Secret> loadCardHashKey(const std::optional<std::string>& key_file) {
  auto key = loadSecret(key_file, kCardHashKeyFlag, kCardHashKeyEnv, "card-hash key");
  if (key && key->bytes.size() < kMinCardHashKeyBytes) {
    return base::Status::invalidArgument(
        "the card-hash key from " + key->source + " is " + std::to_string(key->bytes.size()) +
        " bytes; it must be at least " + std::to_string(kMinCardHashKeyBytes) +
        " (a card lookup shows card -> card_ref pairs, from which a short key can be found "
        "by brute force). Make one with: openssl rand -hex 32");
  }
  return key;
}

bool cardHashKeyAbsent(const std::optional<std::string>& key_file) {
  return !key_file && std::getenv(kCardHashKeyEnv) == nullptr;
}

}  // namespace fraud::kafka
