// The records the model writes decode as docs/rule.md §1 says: valid ones to their fields, each
// malformation to its reject reason.
#include "loadgen/record_format.h"

#include <gtest/gtest.h>

#include <string>

#include "detectors/record_codec.h"
#include "loadgen/random.h"

namespace fraud::loadgen {
namespace {

using detectors::Country;
using detectors::RecordDecoder;
using detectors::RejectReason;

TransactionFields sampleFields() {
  TransactionFields f;
  f.tx_id = "tx-0123456789abcdef";
  f.card = "5105105105105100";
  f.country = Country::of('D', 'E');
  f.event_time = 1'700'000'000'123;
  f.amount_cents = 1234;
  f.currency = "EUR";
  f.merchant = 42;
  return f;
}

TEST(RecordFormat, ValidRecordDecodesToItsFields) {
  RecordDecoder decoder;
  for (const auto format :
       {TimeFormat::kEpochMillis, TimeFormat::kRfc3339Utc, TimeFormat::kRfc3339Offset}) {
    auto f = sampleFields();
    f.time_format = format;
    f.lowercase_country = format == TimeFormat::kRfc3339Offset;
    std::string record;
    appendRecordJson(record, f);
    const auto decoded = decoder.decode(record);
    ASSERT_TRUE(decoded.ok()) << record;
    EXPECT_EQ(decoded.tx.tx_id, f.tx_id);
    EXPECT_EQ(decoded.tx.card, f.card);
    EXPECT_EQ(decoded.tx.country, f.country);
    EXPECT_EQ(decoded.tx.event_time, f.event_time) << record;
  }
}

TEST(RecordFormat, WritesTheDocumentedLayout) {
  std::string record;
  appendRecordJson(record, sampleFields());
  EXPECT_EQ(record,
            "{\"tx_id\":\"tx-0123456789abcdef\",\"card\":\"5105105105105100\",\"country\":\"DE\","
            "\"event_time\":1700000000123,\"amount\":12.34,\"currency\":\"EUR\","
            "\"merchant\":\"m-000042\"}");
}

TEST(RecordFormat, Rfc3339AgreesWithTheDecoderAcrossTheRange) {
  Xoshiro256 random(7);
  for (int i = 0; i < 100'000; ++i) {
    const auto ms =
        static_cast<detectors::EventTime>(random.below64(253'402'300'799'999 - 3'600'000));
    for (const int offset : {0, 60, -330}) {
      std::string text;
      appendRfc3339(text, ms, offset);
      ASSERT_EQ(detectors::parseRfc3339(text), ms) << text;
    }
  }
  std::string text;
  appendRfc3339(text, 951'782'400'000, 0);  // a leap day
  EXPECT_EQ(text, "2000-02-29T00:00:00.000Z");
  text.clear();
  appendRfc3339(text, 1'700'000'000'123, 60);
  EXPECT_EQ(text, "2023-11-14T23:13:20.123+01:00");
}

TEST(RecordFormat, EachMalformationIsRejectedWithItsReason) {
  RecordDecoder decoder;
  for (size_t m = 0; m < kMalformationCount; ++m) {
    const auto malformation = static_cast<Malformation>(m);
    for (uint64_t cut = 0; cut < 200; ++cut) {
      std::string record;
      appendMalformedRecord(record, sampleFields(), malformation, cut);
      ASSERT_FALSE(record.empty());
      ASSERT_EQ(record.find_first_of("\r\n"), std::string::npos);
      const auto decoded = decoder.decode(record);
      ASSERT_FALSE(decoded.ok()) << record;
      ASSERT_EQ(*decoded.rejected, rejectReasonOf(malformation)) << record;
    }
  }
}

TEST(RecordFormat, MalformationsCoverEveryReasonOfTheCodec) {
  bool seen[3] = {};
  for (size_t m = 0; m < kMalformationCount; ++m) {
    const auto reason = rejectReasonOf(static_cast<Malformation>(m));
    ASSERT_NE(reason, RejectReason::kFutureEventTime);
    seen[static_cast<size_t>(reason)] = true;
  }
  EXPECT_TRUE(seen[0] && seen[1] && seen[2]);
}

}  // namespace
}  // namespace fraud::loadgen
