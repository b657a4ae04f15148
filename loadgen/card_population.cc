#include "loadgen/card_population.h"

#include "loadgen/countries.h"

namespace fraud::loadgen {
namespace {

// Test-only card numbers (loadgen/README.md, "Card numbers"): "00", 13 digits, then a check
// digit that deliberately fails Luhn. MII 0 (ISO/IEC 7812-1) is no card network's range.
constexpr char kPanPrefix[] = "00";
constexpr int kPanPrefixLength = 2;
constexpr uint64_t kPanBodyModulus = 10'000'000'000'000;  // 10^13: 13 free digits
// Coprime with 10^13, so card -> card * k + offset (mod 10^13) is a bijection; below 2^32 so the
// product of a 32-bit card index cannot overflow.
constexpr uint64_t kPanMultiplier = 2'654'435'761;

uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix64(mix64(mix64(a) ^ b) ^ c); }

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

CardPopulation::CardPopulation(uint32_t cards, uint64_t seed, int64_t travel_period_ms,
                               double travel_fraction)
    : cards_(cards),
      seed_(seed),
      travel_period_ms_(travel_period_ms),
      travel_fraction_(travel_fraction),
      hot_end_(cards >= 100 ? cards / 100 : 0),
      warm_end_(cards >= 100 ? cards / 5 : 0),
      pan_offset_(mix64(seed ^ 0x70616eu) % kPanBodyModulus) {}

uint32_t CardPopulation::pickByActivity(Xoshiro256& random) const {
  if (warm_end_ == 0) return random.below(cards_);
  const uint32_t tier = random.below(5);  // 1/5 hot, 2/5 warm, 2/5 quiet
  if (tier == 0) return random.below(hot_end_);
  if (tier <= 2) return hot_end_ + random.below(warm_end_ - hot_end_);
  return warm_end_ + random.below(cards_ - warm_end_);
}

uint32_t CardPopulation::pickQuiet(Xoshiro256& random) const {
  return warm_end_ + random.below(cards_ - warm_end_);
}

void CardPopulation::writePan(uint32_t card, char* out) const {
  uint64_t body = (card * kPanMultiplier + pan_offset_) % kPanBodyModulus;
  for (int i = 0; i < kPanPrefixLength; ++i) out[i] = kPanPrefix[i];
  for (int i = 14; i >= kPanPrefixLength; --i) {
    out[i] = static_cast<char>('0' + body % 10);
    body /= 10;
  }
  // Luhn: from the right, the check digit at position 15 is not doubled; position 14 is. The
  // digit written is the valid one plus 5 (mod 10), so the number never passes the check.
  unsigned sum = 0;
  for (int i = 14, doubled = 1; i >= 0; --i, doubled ^= 1) {
    unsigned d = static_cast<unsigned>(out[i] - '0');
    if (doubled != 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  const unsigned valid = (10 - sum % 10) % 10;
  out[15] = static_cast<char>('0' + (valid + 5) % 10);
}

std::string CardPopulation::pan(uint32_t card) const {
  std::string out(kPanLength, '0');
  writePan(card, out.data());
  return out;
}

size_t CardPopulation::homeCountry(uint32_t card) const {
  return pickCountryByWeight(hash3(seed_, card, 0x686f6d65u));
}

size_t CardPopulation::countryAt(uint32_t card, detectors::EventTime t) const {
  const size_t home = homeCountry(card);
  if (travel_fraction_ <= 0) return home;
  const auto phase =
      static_cast<int64_t>(hash3(seed_, card, 0x7068u) % static_cast<uint64_t>(travel_period_ms_));
  const int64_t period = floorDiv(t + phase, travel_period_ms_);
  const uint64_t h = hash3(seed_ ^ 0x74726176u, card, static_cast<uint64_t>(period));
  if (static_cast<double>(h >> 11) * 0x1.0p-53 >= travel_fraction_) return home;
  const size_t destination = pickCountryByWeight(mix64(h));
  return destination != home ? destination : (destination + 1) % countryCount();
}

}  // namespace fraud::loadgen
