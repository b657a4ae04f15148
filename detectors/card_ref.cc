// OpenSSL 3 deprecates the low-level SHA256_* calls, but they are the only ones whose context is
// a plain struct: copying a keyed HMAC midstate is a memcpy here, where every EVP context copy
// allocates. One card_ref is computed per record, so this is the hot path.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "detectors/card_ref.h"

#include <openssl/sha.h>

#include <memory>

namespace fraud::detectors {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void appendHex(std::string& out, const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kHexDigits[data[i] >> 4]);
    out.push_back(kHexDigits[data[i] & 0x0F]);
  }
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string CardRef::hex() const {
  std::string out;
  out.reserve(64);
  appendHex(out, bytes.data(), bytes.size());
  return out;
}

std::optional<CardRef> CardRef::fromHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  CardRef ref;
  for (size_t i = 0; i < ref.bytes.size(); ++i) {
    const int hi = hexValue(hex[2 * i]);
    const int lo = hexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    ref.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return ref;
}

struct CardHasher::Midstates {
  SHA256_CTX inner;  // after absorbing key XOR ipad
  SHA256_CTX outer;  // after absorbing key XOR opad
};

CardHasher::CardHasher(std::string_view key) : midstates_(std::make_unique<Midstates>()) {
  // RFC 2104: a key longer than the block is replaced by its digest, then zero-padded.
  std::array<uint8_t, SHA256_CBLOCK> block{};
  if (key.size() > block.size()) {
    SHA256(reinterpret_cast<const uint8_t*>(key.data()), key.size(), block.data());
  } else {
    std::memcpy(block.data(), key.data(), key.size());
  }
  std::array<uint8_t, SHA256_CBLOCK> pad{};
  for (size_t i = 0; i < block.size(); ++i) pad[i] = block[i] ^ 0x36;
  SHA256_Init(&midstates_->inner);
  SHA256_Update(&midstates_->inner, pad.data(), pad.size());
  for (size_t i = 0; i < block.size(); ++i) pad[i] = block[i] ^ 0x5c;
  SHA256_Init(&midstates_->outer);
  SHA256_Update(&midstates_->outer, pad.data(), pad.size());
}

CardHasher::~CardHasher() = default;

CardRef CardHasher::hash(std::string_view card) const {
  std::array<uint8_t, SHA256_DIGEST_LENGTH> inner_digest;
  SHA256_CTX ctx = midstates_->inner;
  SHA256_Update(&ctx, card.data(), card.size());
  SHA256_Final(inner_digest.data(), &ctx);
  ctx = midstates_->outer;
  SHA256_Update(&ctx, inner_digest.data(), inner_digest.size());
  CardRef ref;
  SHA256_Final(ref.bytes.data(), &ctx);
  return ref;
}

std::string sha256Hex(std::string_view data) {
  std::array<uint8_t, SHA256_DIGEST_LENGTH> digest;
  SHA256(reinterpret_cast<const uint8_t*>(data.data()), data.size(), digest.data());
  std::string out;
  out.reserve(64);
  appendHex(out, digest.data(), digest.size());
  return out;
}

std::string alertId(const CardRef& card_ref, EventTime incident_start) {
  std::string text = card_ref.hex();
  text.push_back(':');
  text += std::to_string(incident_start);
  return sha256Hex(text).substr(0, 32);
}

}  // namespace fraud::detectors
