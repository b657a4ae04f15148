#include "state/card_state_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fraud::state {
namespace {

using detectors::CardState;
using detectors::Country;

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// An encoding written by hand (the codec's encoder is never given such values): events at
// `times` (each "DE", tx id "x", the deltas as the format stores them), and an incident from
// `incident_start` lasting `incident_length` when given.
std::string handEncoded(const std::vector<uint64_t>& times,
                        std::optional<uint64_t> incident_start = std::nullopt,
                        uint64_t incident_length = 0) {
  std::string out(1, static_cast<char>(kCardStateFormat));
  putVarint(out, times.size());
  uint64_t previous = 0;
  for (const uint64_t t : times) {
    putVarint(out, t - previous);
    previous = t;
    out += "DE";
    putVarint(out, 1);
    out += "x";
  }
  if (!incident_start) {
    out.push_back('\0');
    return out;
  }
  out.push_back('\1');
  putVarint(out, *incident_start);
  putVarint(out, incident_length);
  putVarint(out, 1);  // revision
  putVarint(out, 1);  // one country
  out += "DE";
  return out;
}

CardState sample() {
  CardState state;
  state.events = {detectors::Event{1'700'000'000'000, Country::of('D', 'E'), "tx-1"},
                  detectors::Event{1'700'000'000'000, Country::of('F', 'R'), "tx-\xc3\xa9"},
                  detectors::Event{1'700'000'100'000, Country::of('I', 'T'),
                                   detectors::TxId(std::string(64, 'x'))}};
  state.incident = detectors::Incident{
      1'700'000'000'000, 1'700'000'600'000, 3, {Country::of('D', 'E'), Country::of('F', 'R')}};
  return state;
}

TEST(CardStateCodec, RoundTripsEventsAndIncident) {
  const CardState state = sample();
  EXPECT_EQ(decodeCardState(encodeCardState(state)), state);
  CardState no_incident = state;
  no_incident.incident.reset();
  EXPECT_EQ(decodeCardState(encodeCardState(no_incident)), no_incident);
  EXPECT_EQ(decodeCardState(encodeCardState(CardState{})), CardState{});
}

TEST(CardStateCodec, RefusesAnotherFormatVersion) {
  std::string bytes = encodeCardState(sample());
  bytes[0] = static_cast<char>(kCardStateFormat + 1);
  EXPECT_EQ(decodeCardState(bytes), std::nullopt);
}

TEST(CardStateCodec, RefusesEveryTruncationAndTrailingBytes) {
  const std::string bytes = encodeCardState(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(decodeCardState(bytes.substr(0, n)), std::nullopt) << "length " << n;
  }
  EXPECT_EQ(decodeCardState(bytes + "x"), std::nullopt);
}

TEST(CardStateCodec, RefusesCorruptCountries) {
  std::string bytes = encodeCardState(sample());
  const auto at = bytes.find("DE");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'd';
  EXPECT_EQ(decodeCardState(bytes), std::nullopt);
}

// docs/rule.md §1: an event time is 0..kMaxEventTime. A state from the changelog (any producer
// can write there) with an event past it is no card state of ours: refused, so that a restore
// drops the card instead of handing the detector times no record can carry.
TEST(CardStateCodec, RefusesEventTimesPastTheRulesMaximum) {
  constexpr auto kMax = static_cast<uint64_t>(detectors::kMaxEventTime);
  const auto at_max = decodeCardState(handEncoded({5, kMax}));
  ASSERT_TRUE(at_max.has_value()) << "the maximum itself is an event time";
  EXPECT_EQ(at_max->events.lastTime(), detectors::kMaxEventTime);
  EXPECT_EQ(decodeCardState(handEncoded({kMax + 1})), std::nullopt);
  EXPECT_EQ(decodeCardState(handEncoded({5, kMax + 1})), std::nullopt) << "by its delta";
  EXPECT_EQ(decodeCardState(handEncoded({static_cast<uint64_t>(INT64_MAX)})), std::nullopt);
}

// An incident starts at an event's time (0..kMaxEventTime) and ends at most a window (itself
// at most kMaxEventTime) past the start of its last qualifying window.
TEST(CardStateCodec, RefusesIncidentTimesNoWindowCanReach) {
  constexpr auto kMax = static_cast<uint64_t>(detectors::kMaxEventTime);
  EXPECT_TRUE(decodeCardState(handEncoded({kMax}, kMax, kMax)).has_value())
      << "the latest start and the longest extension";
  EXPECT_TRUE(decodeCardState(handEncoded({}, 0, 2 * kMax)).has_value());
  EXPECT_EQ(decodeCardState(handEncoded({}, kMax + 1, 0)), std::nullopt);
  EXPECT_EQ(decodeCardState(handEncoded({}, kMax, kMax + 1)), std::nullopt);
  EXPECT_EQ(decodeCardState(handEncoded({}, 0, 2 * kMax + 1)), std::nullopt);
  EXPECT_EQ(decodeCardState(handEncoded({}, static_cast<uint64_t>(INT64_MAX), 0)), std::nullopt);
}

// isCardState() is the decoder's check without the state: it accepts exactly what
// decodeCardState() accepts, over every truncation and every single-byte change of an encoding
// and the hand-made edge cases above.
TEST(CardStateCodec, TheCheckAcceptsExactlyWhatTheDecoderAccepts) {
  constexpr auto kMax = static_cast<uint64_t>(detectors::kMaxEventTime);
  std::vector<std::string> inputs = {
      encodeCardState(CardState{}),    handEncoded({5, kMax}),
      handEncoded({kMax + 1}),         handEncoded({kMax}, kMax, kMax),
      handEncoded({}, kMax, kMax + 1), handEncoded({}, 0, 2 * kMax),
      handEncoded({}, 0, 2 * kMax + 1)};
  const std::string bytes = encodeCardState(sample());
  for (size_t n = 0; n <= bytes.size(); ++n) inputs.push_back(bytes.substr(0, n));
  inputs.push_back(bytes + "x");
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (const int value : {0x00, 0x01, 0x02, 0x41, 0x7F, 0x80, 0xFF}) {
      std::string changed = bytes;
      changed[i] = static_cast<char>(value);
      inputs.push_back(std::move(changed));
    }
  }
  size_t accepted = 0;
  for (const std::string& input : inputs) {
    const bool decoded = decodeCardState(input).has_value();
    EXPECT_EQ(isCardState(input), decoded) << "input of " << input.size() << " bytes";
    accepted += decoded ? 1 : 0;
  }
  EXPECT_GT(accepted, 10u) << "the inputs reach both answers";
  EXPECT_LT(accepted + 100, inputs.size());
}

TEST(CardStateCodec, EncodesIntoABufferWhatItEncodesIntoAString) {
  const std::string expected = encodeCardState(sample());
  std::string buffer(expected.size(), '\0');
  EXPECT_EQ(encodeCardStateInto(sample(), buffer), expected.size());
  EXPECT_EQ(buffer, expected);
  CardState empty;
  EXPECT_EQ(encodeCardStateInto(empty, buffer), encodeCardState(empty).size());
  EXPECT_EQ(buffer.substr(0, encodeCardState(empty).size()), encodeCardState(empty));
}

TEST(CardStateCodec, EncodingIntoATooSmallBufferWritesNothingPastItAndSaysTheSize) {
  const std::string expected = encodeCardState(sample());
  for (size_t size : {size_t{0}, size_t{1}, size_t{10}, expected.size() - 1}) {
    std::string buffer(size + 8, '#');
    EXPECT_EQ(encodeCardStateInto(sample(), std::span<char>(buffer.data(), size)), expected.size())
        << size;
    EXPECT_EQ(buffer.substr(size), std::string(8, '#')) << "wrote past the buffer: " << size;
  }
}

}  // namespace
}  // namespace fraud::state
