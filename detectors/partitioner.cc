#include "detectors/partitioner.h"

#include <array>

namespace fraud::detectors {
namespace {

// Slicing-by-8 tables: table[0] is the classic byte table; table[k] advances a byte through k
// more zero bytes, so eight input bytes cost eight lookups and no data dependency between them.
using Crc32Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Crc32Tables makeCrc32Tables() {
  Crc32Tables tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    tables[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k) {
      const uint32_t previous = tables[k - 1][i];
      tables[k][i] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr Crc32Tables kCrc32 = makeCrc32Tables();

uint32_t loadLittleEndian32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

std::optional<Partitioner> parsePartitioner(std::string_view name) {
  if (name == "crc32") return Partitioner::kCrc32;
  if (name == "murmur2") return Partitioner::kMurmur2;
  return std::nullopt;
}

std::string_view partitionerName(Partitioner partitioner) {
  switch (partitioner) {
    case Partitioner::kCrc32:
      return "crc32";
    case Partitioner::kMurmur2:
      return "murmur2";
  }
  return "?";
}

uint32_t crc32(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t c = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    const uint32_t low = loadLittleEndian32(p) ^ c;
    const uint32_t high = loadLittleEndian32(p + 4);
    c = kCrc32[7][low & 0xFFu] ^ kCrc32[6][(low >> 8) & 0xFFu] ^ kCrc32[5][(low >> 16) & 0xFFu] ^
        kCrc32[4][low >> 24] ^ kCrc32[3][high & 0xFFu] ^ kCrc32[2][(high >> 8) & 0xFFu] ^
        kCrc32[1][(high >> 16) & 0xFFu] ^ kCrc32[0][high >> 24];
  }
  for (; n > 0; ++p, --n) c = kCrc32[0][(c ^ *p) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// Kafka's Utils.murmur2, byte for byte: little-endian 4-byte blocks, then the tail.
uint32_t murmur2(std::string_view data) {
  constexpr uint32_t kSeed = 0x9747b28cu;
  constexpr uint32_t kM = 0x5bd1e995u;
  constexpr int kR = 24;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const size_t length = data.size();
  uint32_t h = kSeed ^ static_cast<uint32_t>(length);
  const size_t blocks = length / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k = loadLittleEndian32(bytes + 4 * i);
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  const unsigned char* tail = bytes + 4 * blocks;
  switch (length % 4) {
    case 3:
      h ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= tail[0];
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

int32_t partitionCrc32(std::string_view key, int32_t partition_count) {
  return static_cast<int32_t>(crc32(key) % static_cast<uint32_t>(partition_count));
}

int32_t partitionMurmur2(std::string_view key, int32_t partition_count) {
  return static_cast<int32_t>((murmur2(key) & 0x7FFFFFFFu) %
                              static_cast<uint32_t>(partition_count));
}

int32_t partitionFor(Partitioner partitioner, std::string_view key, int32_t partition_count) {
  return partitioner == Partitioner::kMurmur2 ? partitionMurmur2(key, partition_count)
                                              : partitionCrc32(key, partition_count);
}

}  // namespace fraud::detectors
