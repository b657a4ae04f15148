#include "state/key_layout.h"

#include <cstring>

namespace fraud::state {
namespace {

constexpr size_t kPrefixSize = 5;  // tag, be32(partition)

}  // namespace

std::string partitionPrefix(char tag, int32_t partition) {
  std::string key(1, tag);
  const auto p = static_cast<uint32_t>(partition);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(p >> shift));
  return key;
}

std::string cardKey(int32_t partition, const detectors::CardRef& ref) {
  std::string key = partitionPrefix('C', partition);
  key.append(ref.raw());
  return key;
}

std::string checkpointKey(int32_t partition) { return partitionPrefix('P', partition); }

detectors::CardRef cardOfKey(std::string_view key) {
  detectors::CardRef ref;
  std::memcpy(ref.bytes.data(), key.data() + kPrefixSize, ref.bytes.size());
  return ref;
}

}  // namespace fraud::state
