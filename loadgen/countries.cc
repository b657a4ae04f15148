#include "loadgen/countries.h"

#include <algorithm>
#include <array>

namespace fraud::loadgen {
namespace {

using detectors::Country;

constexpr CountryInfo info(const char (&code)[3], std::string_view currency, uint32_t weight) {
  return CountryInfo{Country::of(code[0], code[1]), currency, weight};
}

constexpr std::array kCountries = {
    info("US", "USD", 300), info("GB", "GBP", 80), info("DE", "EUR", 80), info("FR", "EUR", 70),
    info("IT", "EUR", 50),  info("ES", "EUR", 50), info("NL", "EUR", 30), info("BE", "EUR", 20),
    info("CH", "CHF", 20),  info("AT", "EUR", 15), info("SE", "SEK", 15), info("NO", "NOK", 10),
    info("DK", "DKK", 10),  info("FI", "EUR", 8),  info("IE", "EUR", 10), info("PT", "EUR", 12),
    info("PL", "PLN", 25),  info("CZ", "CZK", 10), info("GR", "EUR", 10), info("TR", "TRY", 20),
    info("CA", "CAD", 40),  info("MX", "MXN", 30), info("BR", "BRL", 40), info("AR", "ARS", 12),
    info("CL", "CLP", 8),   info("CO", "COP", 8),  info("JP", "JPY", 50), info("KR", "KRW", 30),
    info("CN", "CNY", 60),  info("HK", "HKD", 10), info("SG", "SGD", 10), info("IN", "INR", 40),
    info("AU", "AUD", 25),  info("NZ", "NZD", 6),  info("ZA", "ZAR", 10), info("NG", "NGN", 8),
    info("EG", "EGP", 6),   info("AE", "AED", 10), info("IL", "ILS", 8),  info("TH", "THB", 12),
};

constexpr std::array<uint64_t, kCountries.size()> cumulativeWeights() {
  std::array<uint64_t, kCountries.size()> sums{};
  uint64_t total = 0;
  for (size_t i = 0; i < kCountries.size(); ++i) {
    total += kCountries[i].weight;
    sums[i] = total;
  }
  return sums;
}

constexpr auto kCumulative = cumulativeWeights();

}  // namespace

size_t countryCount() { return kCountries.size(); }

const CountryInfo& countryInfo(size_t index) { return kCountries[index]; }

size_t pickCountryByWeight(uint64_t random) {
  const uint64_t point = (random >> 11) % kCumulative.back();
  return static_cast<size_t>(std::upper_bound(kCumulative.begin(), kCumulative.end(), point) -
                             kCumulative.begin());
}

}  // namespace fraud::loadgen
