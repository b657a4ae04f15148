// libFuzzer target for the record codec (docs/rule.md §1): no input crashes it, and every record it
// accepts obeys the field rules and survives a round trip through canonical JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "detectors/alert.h"
#include "detectors/record_codec.h"

namespace {

using fraud::detectors::DecodeResult;
using fraud::detectors::RecordDecoder;

void check(bool condition) {
  if (!condition) std::abort();
}

void checkRules(const fraud::detectors::Transaction& tx) {
  check(!tx.tx_id.empty() && tx.tx_id.size() <= 64);
  for (char c : tx.tx_id) {
    const auto b = static_cast<unsigned char>(c);
    check(b >= 0x20 && b != 0x7F);
  }
  check(tx.card.size() >= 4 && tx.card.size() <= 64);
  for (char c : tx.card) check(c >= 0x21 && c <= 0x7E);
  for (char c : tx.country.code) check(c >= 'A' && c <= 'Z');
  check(tx.event_time >= 0 && tx.event_time <= fraud::detectors::kMaxEventTime);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static RecordDecoder decoder;
  static RecordDecoder again;
  const std::string_view record(reinterpret_cast<const char*>(data), size);
  const DecodeResult first = decoder.decode(record);
  const DecodeResult second = again.decode(record);
  check(first.rejected == second.rejected);
  if (!first.ok()) return 0;
  checkRules(first.tx);
  check(first.tx.tx_id == second.tx.tx_id && first.tx.card == second.tx.card &&
        first.tx.event_time == second.tx.event_time);

  std::string canonical = "{\"tx_id\":";
  fraud::detectors::appendJsonString(canonical, first.tx.tx_id);
  canonical += ",\"card\":";
  fraud::detectors::appendJsonString(canonical, first.tx.card);
  canonical += ",\"country\":\"" + std::string(first.tx.country.view()) +
               "\",\"event_time\":" + std::to_string(first.tx.event_time) + "}";
  const DecodeResult round_trip = again.decode(canonical);
  check(round_trip.ok());
  check(round_trip.tx.tx_id == first.tx.tx_id && round_trip.tx.card == first.tx.card &&
        round_trip.tx.country == first.tx.country &&
        round_trip.tx.event_time == first.tx.event_time);
  // One valid JSON value and nothing after it: a stray byte makes it invalid.
  check(again.decode(std::string(record) + "x").rejected ==
        fraud::detectors::RejectReason::kInvalidJson);
  return 0;
}
