#include "detectors/record_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fraud::detectors {
namespace {

std::optional<RejectReason> rejection(std::string_view record) {
  RecordDecoder decoder;
  return decoder.decode(record).rejected;
}

std::string withEventTime(const std::string& event_time) {
  return R"({"tx_id":"t1","card":"4000123412341234","country":"de","event_time":)" + event_time +
         "}";
}

std::optional<EventTime> eventTimeOf(const std::string& event_time) {
  RecordDecoder decoder;
  const auto result = decoder.decode(withEventTime(event_time));
  if (!result.ok()) return std::nullopt;
  return result.tx.event_time;
}

TEST(RecordDecoder, DecodesAValidRecordAndUpperCasesTheCountry) {
  RecordDecoder decoder;
  const auto result = decoder.decode(
      R"({"tx_id":"tx-1","card":"tok_ABC123","country":"fr","event_time":1700000000000,)"
      R"("amount":12.5,"merchant":{"id":[1,2,null]}})");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.tx.tx_id, "tx-1");
  EXPECT_EQ(result.tx.card, "tok_ABC123");
  EXPECT_EQ(result.tx.country.view(), "FR");
  EXPECT_EQ(result.tx.event_time, 1700000000000);
}

TEST(RecordDecoder, AcceptsSurroundingWhitespaceAndCrlf) {
  EXPECT_EQ(rejection(" \t" + withEventTime("5") + "\r"), std::nullopt);
}

TEST(RecordDecoder, DecodesEscapesInNamesAndValues) {
  RecordDecoder decoder;
  const auto result =
      decoder.decode(R"({"tx\u005fid":"a\"b\u00e9","card":"abc\/d","country":"\u0044E",)"
                     R"("event_time":1})");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.tx.tx_id, "a\"b\xc3\xa9");
  EXPECT_EQ(result.tx.card, "abc/d");
  EXPECT_EQ(result.tx.country.view(), "DE");
}

TEST(RecordDecoder, RejectsInvalidJsonAnywhereInTheRecord) {
  for (const std::string& bad : std::vector<std::string>{
           std::string(""),
           std::string("   "),
           std::string("not json"),
           withEventTime("1") + " x",  // bytes after the object
           withEventTime("1") + "{}",  // a second value
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":NaN})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":01})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":1.})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":"\ud800"})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":"\udc00\ud800"})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,"x":"\q"})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,)",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":1,})",
           "{\"tx_id\":\"t\x01\",\"card\":\"abcd\",\"country\":\"DE\",\"event_time\":1}",
           "{\"tx_id\":\"t\",\"card\":\"abcd\",\"country\":\"DE\",\"event_time\":1,\"x\":\"\xff\"}",
           "{\"tx_id\":\"\xed\xa0\x80\",\"card\":\"abcd\",\"country\":\"DE\",\"event_time\":1}",
           "{\"tx_id\":\"\xc0\xaf\",\"card\":\"abcd\",\"country\":\"DE\",\"event_time\":1}",
           "\xef\xbb\xbf" + withEventTime("1"),          // a byte order mark is not JSON text
           withEventTime("1") + "\v",                    // not JSON whitespace
           std::string("[") + withEventTime("1") + "]",  // valid JSON, not an object
           std::string("\"text\""),
           std::string("null"),
       }) {
    EXPECT_EQ(rejection(bad), RejectReason::kInvalidJson) << bad;
  }
}

TEST(RecordDecoder, RejectsEmptyRecordsWithOrWithoutABuffer) {
  // A tombstone's or an empty record's view may have a null data pointer: it must be rejected
  // before the parser copies from it (UBSan reported the copy from null).
  RecordDecoder decoder;
  EXPECT_EQ(decoder.decode(std::string_view()).rejected, RejectReason::kInvalidJson);
  EXPECT_EQ(decoder.decode(std::string_view("", 0)).rejected, RejectReason::kInvalidJson);
  EXPECT_EQ(decoder.decode(std::string_view(" ")).rejected, RejectReason::kInvalidJson);
}

TEST(RecordDecoder, RejectsAbsentRequiredFieldsAsMissingBeforeInvalid) {
  EXPECT_EQ(rejection(R"({"card":"abcd","country":"DE","event_time":1})"),
            RejectReason::kMissingField);
  EXPECT_EQ(rejection(R"({"tx_id":"t","country":"DE","event_time":1})"),
            RejectReason::kMissingField);
  EXPECT_EQ(rejection(R"({"tx_id":"t","card":"abcd","event_time":1})"),
            RejectReason::kMissingField);
  EXPECT_EQ(rejection(R"({"tx_id":"t","card":"abcd","country":"DE"})"),
            RejectReason::kMissingField);
  // Another field is invalid too: the first reason that applies wins.
  EXPECT_EQ(rejection(R"({"tx_id":5,"card":"abcd","country":"DE"})"), RejectReason::kMissingField);
  // Names are matched exactly, case included.
  EXPECT_EQ(rejection(R"({"TX_ID":"t","card":"abcd","country":"DE","event_time":1})"),
            RejectReason::kMissingField);
  EXPECT_EQ(rejection("{}"), RejectReason::kMissingField);
}

TEST(RecordDecoder, RejectsNullAndWrongTypesAsInvalidField) {
  for (const std::string& bad : std::vector<std::string>{
           R"({"tx_id":null,"card":"abcd","country":"DE","event_time":1})",
           R"({"tx_id":7,"card":"abcd","country":"DE","event_time":1})",
           R"({"tx_id":"t","card":1234,"country":"DE","event_time":1})",
           R"({"tx_id":"t","card":"abcd","country":["DE"],"event_time":1})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":null})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":true})",
           R"({"tx_id":"t","card":"abcd","country":"DE","event_time":{}})",
       }) {
    EXPECT_EQ(rejection(bad), RejectReason::kInvalidField) << bad;
  }
}

TEST(RecordDecoder, EnforcesTxIdRule) {
  auto record = [](const std::string& tx_id) {
    return R"({"tx_id":)" + tx_id + R"(,"card":"abcd","country":"DE","event_time":1})";
  };
  EXPECT_EQ(rejection(record("\"\"")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record("\"" + std::string(64, 'x') + "\"")), std::nullopt);
  EXPECT_EQ(rejection(record("\"" + std::string(65, 'x') + "\"")), RejectReason::kInvalidField);
  // 32 two-byte characters are 64 bytes; 33 are 66. Lengths are decoded UTF-8 bytes.
  std::string two_byte;
  for (int i = 0; i < 32; ++i) two_byte += "\xc3\xa9";
  EXPECT_EQ(rejection(record("\"" + two_byte + "\"")), std::nullopt);
  EXPECT_EQ(rejection(record("\"" + two_byte + "\xc3\xa9\"")), RejectReason::kInvalidField);
  // 64 escaped ASCII characters are 64 bytes once decoded.
  std::string escaped;
  for (int i = 0; i < 64; ++i) escaped += "\\u0041";
  EXPECT_EQ(rejection(record("\"" + escaped + "\"")), std::nullopt);
  EXPECT_EQ(rejection(record(R"("a\u001fb")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("a\nb")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("a\u007fb")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record("\"a\x7f"
                             "b\"")),
            RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("a\u0080b")")), std::nullopt);  // C1 controls are allowed
  EXPECT_EQ(rejection(record(R"("a b")")), std::nullopt);
  EXPECT_EQ(rejection(record(R"("\ud83d\ude00")")), std::nullopt);
}

TEST(RecordDecoder, EnforcesCardRule) {
  auto record = [](const std::string& card) {
    return R"({"tx_id":"t","card":)" + card + R"(,"country":"DE","event_time":1})";
  };
  EXPECT_EQ(rejection(record(R"("abc")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("abcd")")), std::nullopt);
  EXPECT_EQ(rejection(record("\"" + std::string(64, '9') + "\"")), std::nullopt);
  EXPECT_EQ(rejection(record("\"" + std::string(65, '9') + "\"")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("ab cd")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("abc\u007e")")), std::nullopt);  // '~' is 0x7E
  EXPECT_EQ(rejection(record(R"("abc\u007f")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("abc\u00e9")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("!!!!")")), std::nullopt);
}

TEST(RecordDecoder, EnforcesCountryRule) {
  auto record = [](const std::string& country) {
    return R"({"tx_id":"t","card":"abcd","country":)" + country + R"(,"event_time":1})";
  };
  EXPECT_EQ(rejection(record(R"("De")")), std::nullopt);
  EXPECT_EQ(rejection(record(R"("XX")")), std::nullopt);  // assigned codes are not checked
  EXPECT_EQ(rejection(record(R"("D")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("DEU")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("D1")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("D ")")), RejectReason::kInvalidField);
  EXPECT_EQ(rejection(record(R"("\u00c9S")")), RejectReason::kInvalidField);
}

TEST(RecordDecoder, AcceptsIntegerEventTimesInRange) {
  EXPECT_EQ(eventTimeOf("0"), 0);
  EXPECT_EQ(eventTimeOf("-0"), 0);
  EXPECT_EQ(eventTimeOf("253402300799999"), 253402300799999);
  EXPECT_EQ(eventTimeOf("253402300800000"), std::nullopt);
  EXPECT_EQ(eventTimeOf("-1"), std::nullopt);
  EXPECT_EQ(eventTimeOf("9223372036854775807"), std::nullopt);
  EXPECT_EQ(eventTimeOf("18446744073709551615"), std::nullopt);
}

TEST(RecordDecoder, RejectsEventTimeNumbersWithFractionOrExponent) {
  EXPECT_EQ(eventTimeOf("1.0"), std::nullopt);
  EXPECT_EQ(eventTimeOf("1e12"), std::nullopt);
  EXPECT_EQ(eventTimeOf("1E3"), std::nullopt);
  EXPECT_EQ(eventTimeOf("-0.0"), std::nullopt);
  EXPECT_EQ(rejection(withEventTime("1.0")), RejectReason::kInvalidField);
}

TEST(RecordDecoder, ParsesRfc3339EventTimes) {
  EXPECT_EQ(eventTimeOf(R"("1970-01-01T00:00:00Z")"), 0);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T22:13:20Z")"), 1700000000000);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14t22:13:20z")"), 1700000000000);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T22:13:20.5Z")"), 1700000000500);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T22:13:20.123456789Z")"), 1700000000123);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T22:13:20.999999Z")"), 1700000000999);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T23:13:20+01:00")"), 1700000000000);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T16:43:20.042-05:30")"), 1700000000042);
  EXPECT_EQ(eventTimeOf(R"("2023-11-14T22:13:20-00:00")"), 1700000000000);
  EXPECT_EQ(eventTimeOf(R"("2024-02-29T00:00:00Z")"), 1709164800000);
  EXPECT_EQ(eventTimeOf(R"("2000-02-29T00:00:00Z")"), 951782400000);
  EXPECT_EQ(eventTimeOf(R"("9999-12-31T23:59:59.999Z")"), 253402300799999);
  EXPECT_EQ(eventTimeOf(R"("1970-01-01T01:00:00+01:00")"), 0);
}

TEST(RecordDecoder, RejectsRfc3339TimesThatBreakTheRule) {
  for (const std::string& bad : std::vector<std::string>{
           R"("2023-02-29T00:00:00Z")",  // not a leap year
           R"("1900-02-29T00:00:00Z")",  // century, not a leap year
           R"("2023-04-31T00:00:00Z")",
           R"("2023-13-01T00:00:00Z")",
           R"("2023-00-01T00:00:00Z")",
           R"("2023-01-00T00:00:00Z")",
           R"("2023-01-01T24:00:00Z")",
           R"("2023-01-01T00:60:00Z")",
           R"("2023-01-01T00:00:60Z")",  // no leap seconds
           R"("2023-01-01T00:00:00+24:00")",
           R"("2023-01-01T00:00:00+01:60")",
           R"("2023-01-01T00:00:00")",    // no zone
           R"("2023-01-01 00:00:00Z")",   // space separator
           R"("2023-01-01T00:00:00.Z")",  // empty fraction
           R"("2023-01-01T00:00:00,5Z")",
           R"("2023-01-01T00:00Z")",
           R"("2023-1-01T00:00:00Z")",
           R"("+2023-01-01T00:00:00Z")",
           R"("2023-01-01T00:00:00+0100")",
           R"("2023-01-01T00:00:00+01")",
           R"("2023-01-01T00:00:00Z ")",
           R"(" 2023-01-01T00:00:00Z")",
           R"("2023-01-01T00:00:00ZZ")",
           R"("1969-12-31T23:59:59.999Z")",       // before the epoch
           R"("1970-01-01T00:59:59+01:00")",      // before the epoch once the offset applies
           R"("9999-12-31T23:59:59.999-00:01")",  // past the maximum
           R"("")",
       }) {
    EXPECT_EQ(eventTimeOf(bad), std::nullopt) << bad;
  }
}

TEST(RejectReason, NamesMatchTheSpec) {
  EXPECT_EQ(rejectReasonName(RejectReason::kInvalidJson), "invalid_json");
  EXPECT_EQ(rejectReasonName(RejectReason::kMissingField), "missing_field");
  EXPECT_EQ(rejectReasonName(RejectReason::kInvalidField), "invalid_field");
  EXPECT_EQ(rejectReasonName(RejectReason::kFutureEventTime), "future_event_time");
}

TEST(FutureEventTime, AllowsUpToTheSkewInclusive) {
  EXPECT_FALSE(isFutureEventTime(1300, 1000, 300));
  EXPECT_TRUE(isFutureEventTime(1301, 1000, 300));
}

}  // namespace
}  // namespace fraud::detectors
