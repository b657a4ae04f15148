#include "state/card_state_codec.h"

#include <gtest/gtest.h>

#include <span>
#include <string>

namespace fraud::state {
namespace {

using detectors::CardState;
using detectors::Country;

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
