#pragma once

#include <array>
#include <cstdint>

namespace fraud::loadgen {

// SplitMix64's finalizer: a bijection on 64-bit integers that scatters nearby inputs. Used as a
// stateless hash of (seed, card, period, ...) so a card's traits need no stored table.
[[nodiscard]] constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

// xoshiro256** (Blackman & Vigna), seeded through SplitMix64. Every sample is derived with integer
// arithmetic and exact IEEE operations only (no <random> distribution, no libm), so a seed gives
// the same sequence with any compiler and standard library.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t x = seed;
    for (auto& word : s_) {
      x += 0x9e3779b97f4a7c15u;
      word = mix64(x);
    }
  }

  [[nodiscard]] uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 random bits.
  [[nodiscard]] double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) for n >= 1 (multiply-shift: no modulo bias worth measuring for n < 2^32).
  [[nodiscard]] uint32_t below(uint32_t n) {
    return static_cast<uint32_t>(((next() >> 32) * n) >> 32);
  }
  // Uniform in [0, n) for any n >= 1 (64-bit ranges such as event-time spans).
  [[nodiscard]] uint64_t below64(uint64_t n) {
    return static_cast<uint64_t>(uniform() * static_cast<double>(n)) % n;
  }
  [[nodiscard]] bool chance(double p) { return uniform() < p; }

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace fraud::loadgen
