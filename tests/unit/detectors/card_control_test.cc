// Card controls (docs/rule.md "Card controls"): the control record's decoding, every reject
// reason and edge, and the suppression decision.
#include "detectors/card_control.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace fraud::detectors {
namespace {

constexpr std::string_view kCard = "4000123412341234";

// A control value for kCard; `fields` is raw JSON text after "card".
std::string control(const std::string& fields) {
  return std::string(R"({"card":")") + std::string(kCard) + "\"," + fields + "}";
}

std::string suppressUntil(const std::string& until, const std::string& more = "") {
  return control(R"("action":"suppress","until":)" + until +
                 R"(,"reason":"travel notice","author":"analyst-7")" + more);
}

std::optional<ControlRejectReason> rejection(const std::string& value) {
  ControlDecoder decoder;
  return decoder.decode(kCard, value).rejected;
}

ControlDecodeResult decoded(const std::string& value) {
  static ControlDecoder decoder;  // the views in the result live until the next decode
  return decoder.decode(kCard, value);
}

TEST(ControlDecoder, DecodesASuppressWithBothBounds) {
  const auto result = decoded(suppressUntil("2000", R"(,"from":1000)"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.card, kCard);
  EXPECT_EQ(result.control.action, ControlAction::kSuppress);
  EXPECT_EQ(result.control.from, 1000);
  EXPECT_EQ(result.control.until, 2000);
  EXPECT_EQ(result.control.reason, "travel notice");
  EXPECT_EQ(result.control.author, "analyst-7");
}

TEST(ControlDecoder, FromDefaultsToZero) {
  const auto result = decoded(suppressUntil("1"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.from, 0);
  EXPECT_EQ(result.control.until, 1);
  EXPECT_TRUE(result.control.suppresses(0));
}

TEST(ControlDecoder, UntilAndFromTakeBothEventTimeForms) {
  auto result = decoded(
      suppressUntil(R"("1970-01-01T00:00:02Z")", R"(,"from":"1970-01-01t01:00:01.5+01:00")"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.from, 1500);
  EXPECT_EQ(result.control.until, 2000);
  result = decoded(suppressUntil("253402300799999", R"(,"from":"9999-12-31T23:59:59.998Z")"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.from, 253402300799998);
  EXPECT_EQ(result.control.until, kMaxEventTime);
}

TEST(ControlDecoder, UntilBreakingTheEventTimeRuleIsInvalidField) {
  for (const std::string& until : std::vector<std::string>{
           "null", "1.0", "1e3", "-1", "253402300800000", "true", R"("2024-02-30T00:00:00Z")",
           R"("2024-01-15 10:00:00Z")", R"("1000")", "[1]", "18446744073709551615"}) {
    EXPECT_EQ(rejection(suppressUntil(until)), ControlRejectReason::kInvalidField) << until;
  }
}

TEST(ControlDecoder, FromBreakingTheEventTimeRuleIsInvalidFieldAlsoWhenNull) {
  for (const std::string& from : std::vector<std::string>{"null", "0.0", "-1", R"("x")"}) {
    EXPECT_EQ(rejection(suppressUntil("5", R"(,"from":)" + from)),
              ControlRejectReason::kInvalidField)
        << from;
  }
}

TEST(ControlDecoder, FromMustLieBeforeUntil) {
  EXPECT_EQ(rejection(suppressUntil("1000", R"(,"from":1000)")),
            ControlRejectReason::kInvalidField);
  EXPECT_EQ(rejection(suppressUntil("1000", R"(,"from":1001)")),
            ControlRejectReason::kInvalidField);
  // The same instant in two forms is still equal.
  EXPECT_EQ(rejection(suppressUntil("1000", R"(,"from":"1970-01-01T00:00:01Z")")),
            ControlRejectReason::kInvalidField);
  EXPECT_EQ(rejection(suppressUntil("1000", R"(,"from":999)")), std::nullopt);
  // until 0 leaves no from below it.
  EXPECT_EQ(rejection(suppressUntil("0")), ControlRejectReason::kInvalidField);
}

TEST(ControlDecoder, ARemoveNeedsNoBoundsAndIgnoresThem) {
  auto result = decoded(control(R"("action":"remove","reason":"cleared","author":"a")"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.action, ControlAction::kRemove);
  EXPECT_EQ(result.control.reason, "cleared");
  // Bounds that a suppress would refuse are no part of a remove.
  result =
      decoded(control(R"("action":"remove","reason":"r","author":"a","from":"x","until":null)"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.action, ControlAction::kRemove);
}

TEST(ControlDecoder, ATombstoneIsARemoveOfTheKeysCard) {
  ControlDecoder decoder;
  const auto result = decoder.decode(kCard, std::nullopt);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.card, kCard);
  EXPECT_EQ(result.control.action, ControlAction::kRemove);
  EXPECT_EQ(result.control.reason, "");
  EXPECT_EQ(result.control.author, "");
}

TEST(ControlDecoder, ATombstoneWhoseKeyIsNoCardIsInvalidField) {
  ControlDecoder decoder;
  for (const std::string_view key : {"", "abc", "has space", "caf\xc3\xa9-card"}) {
    EXPECT_EQ(decoder.decode(key, std::nullopt).rejected, ControlRejectReason::kInvalidField)
        << key;
  }
}

TEST(ControlDecoder, AnEmptyValueIsNoTombstoneButInvalidJson) {
  ControlDecoder decoder;
  EXPECT_EQ(decoder.decode(kCard, std::string_view()).rejected, ControlRejectReason::kInvalidJson);
}

TEST(ControlDecoder, RejectsInvalidJsonAsARecordDoes) {
  for (const std::string& bad : std::vector<std::string>{
           "not json", "null", "[]", R"("suppress")", suppressUntil("5") + " x",
           suppressUntil("5", R"(,"x":NaN)"), suppressUntil("5", R"(,"x":"\ud800")"),
           "\xef\xbb\xbf" + suppressUntil("5"),
           control("\"action\":\"suppress\",\"until\":5,\"reason\":\"r\xff\",\"author\":\"a\"")}) {
    EXPECT_EQ(rejection(bad), ControlRejectReason::kInvalidJson) << bad;
  }
}

TEST(ControlDecoder, MissingFieldsAreDecidedBeforeAnyRule) {
  EXPECT_EQ(rejection(R"({"action":"suppress","until":5,"reason":"r","author":"a"})"),
            ControlRejectReason::kMissingField);
  EXPECT_EQ(rejection(control(R"("until":5,"reason":"r","author":"a")")),
            ControlRejectReason::kMissingField);
  EXPECT_EQ(rejection(control(R"("action":"suppress","until":5,"author":"a")")),
            ControlRejectReason::kMissingField);
  EXPECT_EQ(rejection(control(R"("action":"suppress","until":5,"reason":"r")")),
            ControlRejectReason::kMissingField);
  // A suppress without until, even with every other field broken.
  EXPECT_EQ(rejection(R"({"card":1,"action":"suppress","reason":"","author":null})"),
            ControlRejectReason::kMissingField);
  // A remove needs no until.
  EXPECT_EQ(rejection(control(R"("action":"remove","reason":"r","author":"a")")), std::nullopt);
}

TEST(ControlDecoder, AnUnknownActionIsInvalidFieldAndRequiresNoUntil) {
  for (const std::string& action :
       std::vector<std::string>{R"("Suppress")", R"("REMOVE")", R"("pause")", R"("")",
                                R"("suppress ")", "null", "1", R"(["suppress"])"}) {
    EXPECT_EQ(rejection(control(R"("action":)" + action + R"(,"reason":"r","author":"a")")),
              ControlRejectReason::kInvalidField)
        << action;
  }
}

TEST(ControlDecoder, TheCardFollowsTheRecordsCardRule) {
  ControlDecoder decoder;
  for (const std::string& card :
       std::vector<std::string>{"abc", "has space", std::string(65, 'x'), "caf\\u00e9"}) {
    const std::string value =
        R"({"card":")" + card + R"(","action":"remove","reason":"r","author":"a"})";
    EXPECT_EQ(decoder.decode(card, value).rejected, ControlRejectReason::kInvalidField) << card;
  }
  EXPECT_EQ(rejection(R"({"card":12345678,"action":"remove","reason":"r","author":"a"})"),
            ControlRejectReason::kInvalidField);
  EXPECT_EQ(
      decoder
          .decode(std::string(64, 'x'), R"({"card":")" + std::string(64, 'x') +
                                            R"(","action":"remove","reason":"r","author":"a"})")
          .rejected,
      std::nullopt);
}

TEST(ControlDecoder, ACardOtherThanTheKeyIsCardMismatchAfterEveryOtherRule) {
  ControlDecoder decoder;
  const std::string value = suppressUntil("5");
  EXPECT_EQ(decoder.decode("4000123412341235", value).rejected, ControlRejectReason::kCardMismatch);
  // Byte for byte: case and escapes are not folded, an escape is decoded first.
  EXPECT_EQ(
      decoder
          .decode("TOK_abcd", R"({"card":"tok_abcd","action":"remove","reason":"r","author":"a"})")
          .rejected,
      ControlRejectReason::kCardMismatch);
  EXPECT_EQ(
      decoder
          .decode("tok/abcd", R"({"card":"tok\/abcd","action":"remove","reason":"r","author":"a"})")
          .rejected,
      std::nullopt);
  // A control broken in itself is invalid_field whatever its key.
  EXPECT_EQ(decoder.decode("4000123412341235", suppressUntil("5", R"(,"from":5)")).rejected,
            ControlRejectReason::kInvalidField);
}

TEST(ControlDecoder, AKeylessValueTakesItsCardAsTheKey) {
  ControlDecoder decoder;
  const auto result = decoder.decodeKeyless(suppressUntil("5"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.card, kCard);
  // A line is never a tombstone.
  EXPECT_EQ(decoder.decodeKeyless("null").rejected, ControlRejectReason::kInvalidJson);
}

TEST(ControlDecoder, ReasonIsOneTo200BytesOfUtf8) {
  const auto with_reason = [](const std::string& reason) {
    return control(R"("action":"remove","author":"a","reason":")" + reason + "\"");
  };
  EXPECT_EQ(rejection(with_reason("")), ControlRejectReason::kInvalidField);
  EXPECT_EQ(rejection(with_reason("r")), std::nullopt);
  EXPECT_EQ(rejection(with_reason(std::string(200, 'r'))), std::nullopt);
  EXPECT_EQ(rejection(with_reason(std::string(201, 'r'))), ControlRejectReason::kInvalidField);
  // Bytes, not characters: 100 two-byte characters fit, one more byte does not.
  std::string two_byte;
  for (int i = 0; i < 100; ++i) two_byte += "\xc3\xa9";
  EXPECT_EQ(rejection(with_reason(two_byte)), std::nullopt);
  EXPECT_EQ(rejection(with_reason(two_byte + "r")), ControlRejectReason::kInvalidField);
  // Measured decoded: an escape of six characters is one byte.
  std::string escaped;
  for (int i = 0; i < 200; ++i) escaped += "\\u0072";
  EXPECT_EQ(rejection(with_reason(escaped)), std::nullopt);
  EXPECT_EQ(rejection(control(R"("action":"remove","author":"a","reason":null)")),
            ControlRejectReason::kInvalidField);
  EXPECT_EQ(rejection(control(R"("action":"remove","author":"a","reason":7)")),
            ControlRejectReason::kInvalidField);
}

TEST(ControlDecoder, AuthorIsOneTo64BytesOfUtf8) {
  const auto with_author = [](const std::string& author) {
    return control(R"("action":"remove","reason":"r","author":")" + author + "\"");
  };
  EXPECT_EQ(rejection(with_author("")), ControlRejectReason::kInvalidField);
  EXPECT_EQ(rejection(with_author(std::string(64, 'a'))), std::nullopt);
  EXPECT_EQ(rejection(with_author(std::string(65, 'a'))), ControlRejectReason::kInvalidField);
  std::string four_byte;
  for (int i = 0; i < 16; ++i) four_byte += "\xf0\x9f\x98\x80";
  EXPECT_EQ(rejection(with_author(four_byte)), std::nullopt);
  EXPECT_EQ(rejection(with_author(four_byte + "a")), ControlRejectReason::kInvalidField);
}

// Control characters are C0 (U+0000..U+001F) and DEL (U+007F), as for a tx_id; C1
// (U+0080..U+009F) is allowed.
TEST(ControlDecoder, ControlCharactersAreC0AndDelNotC1) {
  const auto with_texts = [](const std::string& reason, const std::string& author) {
    return control(R"("action":"remove","reason":")" + reason + R"(","author":")" + author + "\"");
  };
  for (const std::string& bad :
       std::vector<std::string>{"\\u0000", "a\\tb", "a\\nb", "\\u001f", "\\u007f", "\x7f"}) {
    EXPECT_EQ(rejection(with_texts(bad, "a")), ControlRejectReason::kInvalidField) << bad;
    EXPECT_EQ(rejection(with_texts("r", bad)), ControlRejectReason::kInvalidField) << bad;
  }
  for (const std::string& good : std::vector<std::string>{"\\u0080", "\xc2\x9f", "\\u00a0", " ",
                                                          "\\u2028", "\\ud83d\\ude00"}) {
    EXPECT_EQ(rejection(with_texts(good, good)), std::nullopt) << good;
  }
}

TEST(ControlDecoder, ExtraFieldsAreIgnored) {
  const auto result = decoded(suppressUntil(
      "5", R"(,"card_ref":"x","ticket":{"id":[1,null,2.5]},"action2":"remove","Until":"x")"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.until, 5);
}

TEST(ControlDecoder, NamesAreMatchedAfterDecoding) {
  const auto result =
      decoded(control(R"("\u0061ction":"suppress","unt\u0069l":7,"reason":"r","author":"a")"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.control.until, 7);
}

TEST(ControlRejectReason, NamesShareTheRecordsReasonNames) {
  EXPECT_EQ(controlRejectReasonName(ControlRejectReason::kInvalidJson), "invalid_json");
  EXPECT_EQ(controlRejectReasonName(ControlRejectReason::kMissingField), "missing_field");
  EXPECT_EQ(controlRejectReasonName(ControlRejectReason::kInvalidField), "invalid_field");
  EXPECT_EQ(controlRejectReasonName(ControlRejectReason::kCardMismatch), "card_mismatch");
  EXPECT_EQ(controlRejectReasonName(ControlRejectReason::kMisrouted), "misrouted");
}

TEST(ControlCounts, JsonListsAppliedAndOnlyTheReasonsSeen) {
  ControlCounts counts;
  EXPECT_EQ(counts.json(), R"({"applied":0,"rejected":{}})");
  counts.applied = 3;
  counts.countRejected(ControlRejectReason::kMisrouted);
  counts.countRejected(ControlRejectReason::kInvalidJson);
  counts.countRejected(ControlRejectReason::kInvalidJson);
  EXPECT_EQ(counts.json(), R"({"applied":3,"rejected":{"invalid_json":2,"misrouted":1}})");
}

CardControl suppress(EventTime from, EventTime until, std::string reason = "r") {
  return CardControl{ControlAction::kSuppress, from, until, std::move(reason), "a"};
}

CardRef ref(uint8_t first) {
  CardRef r;
  r.bytes[0] = first;
  return r;
}

TEST(CardControls, SuppressesFromInclusiveToUntilExclusive) {
  CardControls controls;
  controls.apply(ref(1), suppress(100, 200));
  EXPECT_EQ(controls.suppressing(ref(1), 99), nullptr);
  ASSERT_NE(controls.suppressing(ref(1), 100), nullptr);
  EXPECT_EQ(controls.suppressing(ref(1), 100)->reason, "r");
  EXPECT_NE(controls.suppressing(ref(1), 199), nullptr);
  EXPECT_EQ(controls.suppressing(ref(1), 200), nullptr);
  // Another card's alerts are not touched.
  EXPECT_EQ(controls.suppressing(ref(2), 150), nullptr);
}

TEST(CardControls, TheLastAppliedControlIsTheOnlyOne) {
  CardControls controls;
  controls.apply(ref(1), suppress(100, 200, "first"));
  controls.apply(ref(1), suppress(300, 400, "second"));
  EXPECT_EQ(controls.size(), 1u);
  EXPECT_EQ(controls.suppressing(ref(1), 150), nullptr);
  ASSERT_NE(controls.suppressing(ref(1), 350), nullptr);
  EXPECT_EQ(controls.find(ref(1))->reason, "second");
}

TEST(CardControls, ARemoveErasesAndARemoveOfNothingChangesNothing) {
  CardControls controls;
  controls.apply(ref(1), CardControl{});  // a remove, of a card with no control
  EXPECT_EQ(controls.size(), 0u);
  controls.apply(ref(1), suppress(0, 10));
  controls.apply(ref(2), suppress(0, 10));
  controls.apply(ref(1), CardControl{ControlAction::kRemove, 0, 0, "cleared", "a"});
  EXPECT_EQ(controls.find(ref(1)), nullptr);
  EXPECT_EQ(controls.suppressing(ref(1), 5), nullptr);
  EXPECT_NE(controls.suppressing(ref(2), 5), nullptr);
}

}  // namespace
}  // namespace fraud::detectors
