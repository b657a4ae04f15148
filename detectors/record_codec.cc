#include "detectors/record_codec.h"

#include <simdjson.h>

#include <array>

#include "detectors/record_fields.h"

namespace fraud::detectors {
namespace {

// UTF-8's encoding of U+FEFF.
constexpr std::string_view kByteOrderMark = "\xef\xbb\xbf";

constexpr size_t kMaxTxIdBytes = 64;
constexpr size_t kMinCardChars = 4;
constexpr size_t kMaxCardChars = 64;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isAsciiLetter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
char upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

// Parses exactly `count` digits at text[pos..]; nothing when any is not a digit.
std::optional<int> digits(std::string_view text, size_t pos, size_t count) {
  if (pos + count > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (!isDigit(text[i])) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

bool isLeapYear(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int daysInMonth(int y, int m) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && isLeapYear(y) ? 29 : kDays[static_cast<size_t>(m - 1)];
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t daysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::string_view rejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kInvalidJson:
      return "invalid_json";
    case RejectReason::kMissingField:
      return "missing_field";
    case RejectReason::kInvalidField:
      return "invalid_field";
    case RejectReason::kFutureEventTime:
      return "future_event_time";
  }
  return "unknown";
}

std::optional<EventTime> parseRfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS is 19 characters; the zone takes at least one more.
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') ||
      t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  const auto year = digits(t, 0, 4);
  const auto month = digits(t, 5, 2);
  const auto day = digits(t, 8, 2);
  const auto hour = digits(t, 11, 2);
  const auto minute = digits(t, 14, 2);
  const auto second = digits(t, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > daysInMonth(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 59) {
    return std::nullopt;
  }

  size_t pos = 19;
  int64_t millis = 0;
  if (t[pos] == '.') {
    ++pos;
    const size_t first = pos;
    int64_t scale = 100;
    while (pos < t.size() && isDigit(t[pos])) {
      millis += (t[pos] - '0') * scale;  // digits past the third add 0: truncation
      scale /= 10;
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }
  if (pos >= t.size()) return std::nullopt;

  int64_t offset_ms = 0;
  if (t[pos] == 'Z' || t[pos] == 'z') {
    ++pos;
  } else if (t[pos] == '+' || t[pos] == '-') {
    const auto off_hour = digits(t, pos + 1, 2);
    const auto off_minute = digits(t, pos + 4, 2);
    if (!off_hour || !off_minute || t[pos + 3] != ':' || *off_hour > 23 || *off_minute > 59) {
      return std::nullopt;
    }
    offset_ms = (int64_t{*off_hour} * 60 + *off_minute) * 60'000;
    if (t[pos] == '-') offset_ms = -offset_ms;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;

  const int64_t local_ms = daysFromCivil(*year, *month, *day) * 86'400'000 +
                           ((int64_t{*hour} * 60 + *minute) * 60 + *second) * 1000 + millis;
  const int64_t utc_ms = local_ms - offset_ms;
  if (utc_ms < 0 || utc_ms > kMaxEventTime) return std::nullopt;
  return utc_ms;
}

namespace fields {

bool parseObject(simdjson::dom::parser& parser, std::string_view record,
                 simdjson::dom::object& object) {
  // The DOM parser validates the whole text (UTF-8, grammar, escapes, trailing bytes), not only
  // the fields read after it. It copies the record into its own padded buffer.
  simdjson::dom::element root;
  // An empty record is no JSON value; it may also carry a null data pointer, which simdjson
  // would copy from (undefined behaviour), so it never reaches the parser. Nor does a leading
  // byte order mark, which is no JSON text (RFC 8259 §8.1): simdjson 3.12 (Debian 13) skips
  // one, 3.0.1 (Debian 12) rejects it.
  if (record.empty() || record.starts_with(kByteOrderMark) ||
      parser.parse(record.data(), record.size(), true).get(root) != simdjson::SUCCESS) {
    return false;
  }
  return root.get_object().get(object) == simdjson::SUCCESS;
}

bool isValidCard(std::string_view card) {
  if (card.size() < kMinCardChars || card.size() > kMaxCardChars) return false;
  for (char c : card) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x21 || b > 0x7E) return false;
  }
  return true;
}

bool hasControlCharacter(std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F) return true;
  }
  return false;
}

std::optional<EventTime> eventTimeOf(const simdjson::dom::element& value) {
  // A number counts only when written without fraction or exponent, which is exactly when the
  // parser types it as an integer.
  switch (value.type()) {
    case simdjson::dom::element_type::INT64: {
      const int64_t ms = value.get_int64().value_unsafe();
      if (ms < 0 || ms > kMaxEventTime) return std::nullopt;
      return ms;
    }
    case simdjson::dom::element_type::UINT64:  // only above INT64_MAX: out of range
      return std::nullopt;
    case simdjson::dom::element_type::STRING:
      return parseRfc3339(value.get_string().value_unsafe());
    default:
      return std::nullopt;
  }
}

}  // namespace fields

struct RecordDecoder::Parser {
  simdjson::dom::parser json;
};

RecordDecoder::RecordDecoder() : parser_(std::make_unique<Parser>()) {}
RecordDecoder::~RecordDecoder() = default;

DecodeResult RecordDecoder::decode(std::string_view record) {
  DecodeResult result;
  simdjson::dom::object object;
  if (!fields::parseObject(parser_->json, record, object)) {
    result.rejected = RejectReason::kInvalidJson;
    return result;
  }

  simdjson::dom::element tx_id;
  simdjson::dom::element card;
  simdjson::dom::element country;
  simdjson::dom::element event_time;
  if (object["tx_id"].get(tx_id) != simdjson::SUCCESS ||
      object["card"].get(card) != simdjson::SUCCESS ||
      object["country"].get(country) != simdjson::SUCCESS ||
      object["event_time"].get(event_time) != simdjson::SUCCESS) {
    result.rejected = RejectReason::kMissingField;
    return result;
  }

  result.rejected = RejectReason::kInvalidField;
  std::string_view text;
  if (tx_id.get_string().get(text) != simdjson::SUCCESS ||
      !fields::isValidText(text, 1, kMaxTxIdBytes))
    return result;
  result.tx.tx_id = text;

  if (card.get_string().get(text) != simdjson::SUCCESS || !fields::isValidCard(text)) return result;
  result.tx.card = text;

  if (country.get_string().get(text) != simdjson::SUCCESS || text.size() != 2 ||
      !isAsciiLetter(text[0]) || !isAsciiLetter(text[1])) {
    return result;
  }
  result.tx.country = Country::of(upper(text[0]), upper(text[1]));

  const auto ms = fields::eventTimeOf(event_time);
  if (!ms) return result;
  result.tx.event_time = *ms;
  result.rejected.reset();
  return result;
}

}  // namespace fraud::detectors
