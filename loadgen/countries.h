#pragma once

#include <cstdint>
#include <string_view>

#include "detectors/transaction.h"

namespace fraud::loadgen {

// The countries the model uses, weighted by a rough share of card traffic.
struct CountryInfo {
  detectors::Country country;
  std::string_view currency;
  uint32_t weight;
};

[[nodiscard]] size_t countryCount();
[[nodiscard]] const CountryInfo& countryInfo(size_t index);
// A country index drawn by weight from 64 random bits.
[[nodiscard]] size_t pickCountryByWeight(uint64_t random);

}  // namespace fraud::loadgen
