#include "loadgen/card_hash_key.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fraud::loadgen {

std::optional<CardHashKey> loadCardHashKey(const std::optional<std::string>& key_file,
                                           std::string& error) {
  error.clear();
  CardHashKey key;
  if (key_file) {
    key.source = *key_file;
    std::ifstream in(*key_file, std::ios::binary);
    if (!in) {
      error = "cannot read card-hash key file " + *key_file + ": " + std::strerror(errno);
      return std::nullopt;
    }
    std::ostringstream content;
    content << in.rdbuf();
    key.bytes = content.str();
    if (!key.bytes.empty() && key.bytes.back() == '\n') key.bytes.pop_back();
  } else if (const char* env = std::getenv(kCardHashKeyEnv); env != nullptr) {
    key.source = kCardHashKeyEnv;
    key.bytes = env;
  } else {
    return std::nullopt;
  }
  if (key.bytes.empty()) {
    error = "the card-hash key from " + key.source + " is empty";
    return std::nullopt;
  }
  return key;
}

}  // namespace fraud::loadgen
