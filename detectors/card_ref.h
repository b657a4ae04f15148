#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/transaction.h"

namespace fraud::detectors {

// HMAC-SHA-256 of a card under the card-hash key (docs/rule.md §5): the card's only identity in
// state, logs, metrics and the API. Held as raw bytes; hex() is its external form.
struct CardRef {
  std::array<uint8_t, 32> bytes{};

  [[nodiscard]] std::string hex() const;
  // Parses 64 lowercase hex characters; nothing for any other text.
  [[nodiscard]] static std::optional<CardRef> fromHex(std::string_view hex);
  [[nodiscard]] std::string_view raw() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  friend bool operator==(const CardRef&, const CardRef&) = default;
  friend auto operator<=>(const CardRef&, const CardRef&) = default;
};

// The bytes are already uniformly distributed: a hash table needs no further mixing.
struct CardRefHash {
  size_t operator()(const CardRef& ref) const noexcept {
    size_t h;
    std::memcpy(&h, ref.bytes.data(), sizeof(h));
    return h;
  }
};

// Computes card_ref. The keyed inner and outer SHA-256 states are built once, so hashing a card
// costs two compression rounds. Immutable after construction; safe to share between threads.
class CardHasher {
 public:
  // `key` is used byte for byte; it must not be empty (checked by the caller's config).
  explicit CardHasher(std::string_view key);
  ~CardHasher();
  CardHasher(const CardHasher&) = delete;
  CardHasher& operator=(const CardHasher&) = delete;

  [[nodiscard]] CardRef hash(std::string_view card) const;

 private:
  struct Midstates;
  std::unique_ptr<Midstates> midstates_;
};

// alert_id (docs/rule.md §5): the first 32 hex characters of SHA-256("<card_ref hex>:<start>").
[[nodiscard]] std::string alertId(const CardRef& card_ref, EventTime incident_start);

// Lowercase hex of SHA-256 over `data`.
[[nodiscard]] std::string sha256Hex(std::string_view data);

}  // namespace fraud::detectors
