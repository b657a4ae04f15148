#include "loadgen/record_format.h"

#include <charconv>
#include <cstring>

namespace fraud::loadgen {
namespace {

using detectors::RejectReason;

// Writes into memory reserved up front: a record is built without a capacity check per
// character (measured: std::string::push_back was a tenth of generation time).
struct Cursor {
  char* p;
  void push_back(char c) { *p++ = c; }
  void append(std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  }
  void append(const char* begin, const char* end) { append(std::string_view(begin, end - begin)); }
};

// Fills `out` through a Cursor writing at most `bound` bytes.
template <typename Write>
void appendBounded(std::string& out, size_t bound, Write&& write) {
  const size_t old_size = out.size();
  out.resize(old_size + bound);
  Cursor cursor{out.data() + old_size};
  write(cursor);
  out.resize(static_cast<size_t>(cursor.p - out.data()));
}

void appendRfc3339To(Cursor& out, detectors::EventTime ms, int offset_minutes);

void appendInt(Cursor& out, int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

void appendDigits(Cursor& out, int64_t value, int width) {
  char buf[8];
  for (int i = width - 1; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(std::string_view(buf, static_cast<size_t>(width)));
}

// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's civil_from_days).
void civilFromDays(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = yoe + era * 400 + (m <= 2 ? 1 : 0);
}

void appendQuoted(Cursor& out, std::string_view text) {
  out.push_back('"');
  out.append(text);
  out.push_back('"');
}

void appendCountry(Cursor& out, const TransactionFields& f) {
  out.push_back('"');
  for (char c : f.country.view()) {
    out.push_back(f.lowercase_country ? static_cast<char>(c - 'A' + 'a') : c);
  }
  out.push_back('"');
}

void appendEventTime(Cursor& out, const TransactionFields& f) {
  switch (f.time_format) {
    case TimeFormat::kEpochMillis:
      appendInt(out, f.event_time);
      return;
    case TimeFormat::kRfc3339Utc:
      out.push_back('"');
      appendRfc3339To(out, f.event_time, 0);
      out.push_back('"');
      return;
    case TimeFormat::kRfc3339Offset:
      out.push_back('"');
      appendRfc3339To(out, f.event_time, 60);
      out.push_back('"');
      return;
  }
}

void appendAmount(Cursor& out, int64_t cents) {
  appendInt(out, cents / 100);
  out.push_back('.');
  appendDigits(out, cents % 100, 2);
}

// Which required fields a malformation leaves out or replaces.
struct Edits {
  bool omit_tx_id = false;
  bool omit_card = false;
  bool omit_country = false;
  bool omit_event_time = false;
  std::string_view tx_id_raw;       // replaces the tx_id value when set
  std::string_view card_raw;        // replaces the card value when set
  std::string_view country_raw;     // replaces the country value when set
  std::string_view event_time_raw;  // replaces the event_time value when set
  std::string_view amount_raw;      // replaces the amount value when set
  std::string_view merchant_raw;    // replaces the merchant value when set
};

// Room for the names, punctuation and numbers (at most ~170 bytes) plus the variable texts.
size_t boundOf(const TransactionFields& f, const Edits& e) {
  return 256 + f.tx_id.size() + f.card.size() + f.currency.size() + e.tx_id_raw.size() +
         e.card_raw.size() + e.country_raw.size() + e.event_time_raw.size() + e.amount_raw.size() +
         e.merchant_raw.size();
}

void appendWithEdits(Cursor& out, const TransactionFields& f, const Edits& e) {
  out.push_back('{');
  bool first = true;
  auto field = [&](std::string_view name) {
    if (!first) out.push_back(',');
    first = false;
    out.push_back('"');
    out.append(name);
    out.append("\":");
  };
  // The edit's raw text where it has one, else the field's own value.
  const auto value = [&](std::string_view raw, const auto& append_own) {
    if (raw.empty()) {
      append_own();
    } else {
      out.append(raw);
    }
  };
  if (!e.omit_tx_id) {
    field("tx_id");
    value(e.tx_id_raw, [&] { appendQuoted(out, f.tx_id); });
  }
  if (!e.omit_card) {
    field("card");
    value(e.card_raw, [&] { appendQuoted(out, f.card); });
  }
  if (!e.omit_country) {
    field("country");
    value(e.country_raw, [&] { appendCountry(out, f); });
  }
  if (!e.omit_event_time) {
    field("event_time");
    value(e.event_time_raw, [&] { appendEventTime(out, f); });
  }
  field("amount");
  value(e.amount_raw, [&] { appendAmount(out, f.amount_cents); });
  field("currency");
  appendQuoted(out, f.currency);
  field("merchant");
  value(e.merchant_raw, [&] {
    out.append("\"m-");
    appendDigits(out, f.merchant, 6);
    out.push_back('"');
  });
  out.push_back('}');
}

}  // namespace

void appendRfc3339(std::string& out, detectors::EventTime ms, int offset_minutes) {
  appendBounded(out, 40, [&](Cursor& c) { appendRfc3339To(c, ms, offset_minutes); });
}

namespace {

void appendRfc3339To(Cursor& out, detectors::EventTime ms, int offset_minutes) {
  const int64_t local = ms + int64_t{offset_minutes} * 60'000;
  const int64_t days = local / 86'400'000;
  int64_t rest = local % 86'400'000;
  int64_t y = 0, m = 0, d = 0;
  civilFromDays(days, y, m, d);
  appendDigits(out, y, 4);
  out.push_back('-');
  appendDigits(out, m, 2);
  out.push_back('-');
  appendDigits(out, d, 2);
  out.push_back('T');
  appendDigits(out, rest / 3'600'000, 2);
  rest %= 3'600'000;
  out.push_back(':');
  appendDigits(out, rest / 60'000, 2);
  rest %= 60'000;
  out.push_back(':');
  appendDigits(out, rest / 1000, 2);
  out.push_back('.');
  appendDigits(out, rest % 1000, 3);
  if (offset_minutes == 0) {
    out.push_back('Z');
    return;
  }
  const int magnitude = offset_minutes < 0 ? -offset_minutes : offset_minutes;
  out.push_back(offset_minutes < 0 ? '-' : '+');
  appendDigits(out, magnitude / 60, 2);
  out.push_back(':');
  appendDigits(out, magnitude % 60, 2);
}

}  // namespace

void appendRecordJson(std::string& out, const TransactionFields& fields) {
  const Edits none;
  appendBounded(out, boundOf(fields, none), [&](Cursor& c) { appendWithEdits(c, fields, none); });
}

RejectReason rejectReasonOf(Malformation malformation) {
  switch (malformation) {
    case Malformation::kTruncated:
    case Malformation::kNanAmount:
    case Malformation::kLoneSurrogate:
    case Malformation::kTrailingBytes:
    case Malformation::kNotAnObject:
      return RejectReason::kInvalidJson;
    case Malformation::kMissingTxId:
    case Malformation::kMissingCard:
    case Malformation::kMissingCountry:
    case Malformation::kMissingEventTime:
      return RejectReason::kMissingField;
    case Malformation::kBadCountry:
    case Malformation::kFractionalTime:
    case Malformation::kShortCard:
    case Malformation::kImpossibleDate:
    case Malformation::kNullTxId:
      return RejectReason::kInvalidField;
  }
  return RejectReason::kInvalidJson;
}

void appendMalformedRecord(std::string& out, const TransactionFields& fields,
                           Malformation malformation, uint64_t cut) {
  Edits e;
  switch (malformation) {
    case Malformation::kTruncated: {
      // Any proper prefix of an object lacks its closing brace; keep at least the opening one.
      const size_t begin = out.size();
      appendBounded(out, boundOf(fields, e), [&](Cursor& c) { appendWithEdits(c, fields, e); });
      const size_t length = out.size() - begin;
      out.resize(begin + 1 + cut % (length - 1));
      return;
    }
    case Malformation::kNanAmount:
      e.amount_raw = "NaN";
      break;
    case Malformation::kLoneSurrogate:
      e.merchant_raw = "\"m-\\ud800\"";
      break;
    case Malformation::kTrailingBytes:
      appendBounded(out, boundOf(fields, e), [&](Cursor& c) { appendWithEdits(c, fields, e); });
      out.append(",{}");
      return;
    case Malformation::kNotAnObject:
      out.push_back('[');
      appendBounded(out, boundOf(fields, e), [&](Cursor& c) { appendWithEdits(c, fields, e); });
      out.push_back(']');
      return;
    case Malformation::kMissingTxId:
      e.omit_tx_id = true;
      break;
    case Malformation::kMissingCard:
      e.omit_card = true;
      break;
    case Malformation::kMissingCountry:
      e.omit_country = true;
      break;
    case Malformation::kMissingEventTime:
      e.omit_event_time = true;
      break;
    case Malformation::kBadCountry:
      e.country_raw = "\"D1\"";
      break;
    case Malformation::kFractionalTime:
      e.event_time_raw = "1700000000000.5";
      break;
    case Malformation::kShortCard:
      e.card_raw = "\"123\"";
      break;
    case Malformation::kImpossibleDate:
      e.event_time_raw = "\"2023-02-30T10:00:00Z\"";
      break;
    case Malformation::kNullTxId:
      e.tx_id_raw = "null";
      break;
  }
  appendBounded(out, boundOf(fields, e), [&](Cursor& c) { appendWithEdits(c, fields, e); });
}

}  // namespace fraud::loadgen
