#include "tests/support/transaction_stream.h"

#include <random>

namespace fraud::testing {

std::vector<TestRecord> generateStream(const StreamOptions& options) {
  static const char* const kCountries[] = {"DE", "FR", "IT", "ES", "AT", "PL", "NL", "US"};
  std::mt19937_64 random(options.seed);
  auto uniform = [&](uint64_t n) { return static_cast<int64_t>(random() % n); };
  auto chance = [&](double p) { return static_cast<double>(random() % 1'000'000) < p * 1e6; };

  std::vector<TestRecord> records;
  records.reserve(static_cast<size_t>(options.records));
  for (int i = 0; i < options.records; ++i) {
    if (!records.empty() && chance(options.duplicate_fraction)) {
      records.push_back(records[static_cast<size_t>(uniform(records.size()))]);
      continue;
    }
    const std::string card =
        "card-" + std::to_string(1000 + uniform(static_cast<uint64_t>(options.cards)));
    if (chance(options.malformed_fraction)) {
      records.push_back({card, "{\"tx_id\":\"bad-" + std::to_string(i) + "\",\"card\":"});
      continue;
    }
    int64_t event_time = options.start_ms + i * options.step_ms - uniform(60'000);
    if (chance(options.late_fraction)) event_time -= 200'000;
    const std::string country = kCountries[uniform(sizeof(kCountries) / sizeof(kCountries[0]))];
    records.push_back({card, "{\"tx_id\":\"tx-" + std::to_string(i) + "\",\"card\":\"" + card +
                                 "\",\"country\":\"" + country + "\",\"event_time\":" +
                                 std::to_string(event_time) + ",\"amount\":12.5}"});
  }
  return records;
}

}  // namespace fraud::testing
