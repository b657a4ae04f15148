package fraud.kstreams;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * docs/rule.md §1 on one record's bytes: the four fields, validated, or the reason it is
 * rejected. A streaming parse (no tree): every token is read, so bytes after the object and
 * malformed JSON anywhere are invalid_json.
 */
final class TransactionCodec {
  static final long MAX_EVENT_TIME = 253402300799999L;

  enum Reject { INVALID_JSON, MISSING_FIELD, INVALID_FIELD, FUTURE_EVENT_TIME }

  static final class Transaction {
    String txId;
    String card;
    String country;
    long eventTime;
    Reject rejected;
  }

  // Repeated names are outside the rule (§1): not checked, as the service does not promise either.
  private static final JsonFactory FACTORY = new JsonFactory();
  private static final Pattern RFC3339 = Pattern.compile(
      "(\\d{4})-(\\d{2})-(\\d{2})[Tt](\\d{2}):(\\d{2}):(\\d{2})(\\.\\d+)?([Zz]|([+-])(\\d{2}):(\\d{2}))");
  private static final Pattern LONE_SURROGATE = Pattern.compile(
      "\\\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\\\u[dD][c-fC-F][0-9a-fA-F]{2})"
          + "|(?<!\\\\u[dD][89abAB][0-9a-fA-F]{2})\\\\u[dD][c-fC-F][0-9a-fA-F]{2}");

  private TransactionCodec() {}

  static Transaction decode(byte[] value) {
    Transaction tx = new Transaction();
    if (value == null || value.length == 0) return reject(tx, Reject.INVALID_JSON);
    // Field values as parsed: a String, a Long, Boolean.FALSE for null, another Object for a
    // value of the wrong type; absent when never seen.
    Object txId = null, card = null, country = null, eventTime = null;
    try (JsonParser p = FACTORY.createParser(value)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        drain(p);
        return reject(tx, Reject.INVALID_JSON);
      }
      JsonToken token;
      while ((token = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        Object parsed;
        if (v == JsonToken.VALUE_NULL) {
          parsed = Boolean.FALSE;
        } else if (v == JsonToken.VALUE_STRING) {
          parsed = p.getText();
        } else if (v == JsonToken.VALUE_NUMBER_INT) {
          parsed = p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? new Object()
              : (Object) p.getLongValue();
        } else {
          p.skipChildren();
          parsed = new Object();
        }
        switch (name) {
          case "tx_id": txId = parsed; break;
          case "card": card = parsed; break;
          case "country": country = parsed; break;
          case "event_time": eventTime = parsed; break;
          default: break;
        }
      }
      if (token != JsonToken.END_OBJECT || p.nextToken() != null) {
        return reject(tx, Reject.INVALID_JSON);
      }
    } catch (IOException | RuntimeException e) {
      return reject(tx, Reject.INVALID_JSON);
    }
    // Escapes that are no Unicode scalar value: Jackson lets a lone surrogate through.
    if (containsEscapedSurrogate(value) && LONE_SURROGATE.matcher(
        new String(value, StandardCharsets.UTF_8)).find()) {
      return reject(tx, Reject.INVALID_JSON);
    }
    if (txId == null || card == null || country == null || eventTime == null) {
      return reject(tx, Reject.MISSING_FIELD);
    }
    if (!(txId instanceof String t) || !validTxId(t)) return reject(tx, Reject.INVALID_FIELD);
    if (!(card instanceof String c) || !validCard(c)) return reject(tx, Reject.INVALID_FIELD);
    if (!(country instanceof String k) || !validCountry(k)) {
      return reject(tx, Reject.INVALID_FIELD);
    }
    long time;
    if (eventTime instanceof Long l) {
      time = l;
    } else if (eventTime instanceof String s) {
      time = parseRfc3339(s);
    } else {
      return reject(tx, Reject.INVALID_FIELD);
    }
    if (time < 0 || time > MAX_EVENT_TIME) return reject(tx, Reject.INVALID_FIELD);
    tx.txId = t;
    tx.card = c;
    tx.country = k.toUpperCase(java.util.Locale.ROOT);
    tx.eventTime = time;
    return tx;
  }

  private static void drain(JsonParser p) throws IOException {
    while (p.nextToken() != null) {
      // Reading on only to find malformed JSON: either way the record is invalid_json.
    }
  }

  private static Transaction reject(Transaction tx, Reject reason) {
    tx.rejected = reason;
    return tx;
  }

  private static boolean containsEscapedSurrogate(byte[] value) {
    for (int i = 0; i + 2 < value.length; ++i) {
      if (value[i] == '\\' && value[i + 1] == 'u' && (value[i + 2] == 'd' || value[i + 2] == 'D')) {
        return true;
      }
    }
    return false;
  }

  private static boolean validTxId(String s) {
    int bytes = s.getBytes(StandardCharsets.UTF_8).length;
    if (bytes < 1 || bytes > 64) return false;
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c < 0x20 || c == 0x7f) return false;
    }
    return true;
  }

  private static boolean validCard(String s) {
    if (s.length() < 4 || s.length() > 64) return false;
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c < 0x21 || c > 0x7e) return false;
    }
    return true;
  }

  private static boolean validCountry(String s) {
    if (s.length() != 2) return false;
    for (int i = 0; i < 2; ++i) {
      char c = s.charAt(i);
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return false;
    }
    return true;
  }

  /** RFC 3339 as §1 reads it, to epoch ms (fraction cut); -1 when it breaks the rule. */
  static long parseRfc3339(String s) {
    Matcher m = RFC3339.matcher(s);
    if (!m.matches()) return -1;
    int year = Integer.parseInt(m.group(1));
    int month = Integer.parseInt(m.group(2));
    int day = Integer.parseInt(m.group(3));
    int hour = Integer.parseInt(m.group(4));
    int minute = Integer.parseInt(m.group(5));
    int second = Integer.parseInt(m.group(6));
    if (hour > 23 || minute > 59 || second > 59) return -1;
    long days;
    try {
      days = LocalDate.of(year, month, day).toEpochDay();
    } catch (DateTimeException e) {
      return -1;
    }
    long ms = ((days * 24 + hour) * 60 + minute) * 60_000L + second * 1000L;
    String fraction = m.group(7);
    if (fraction != null) {
      String digits = (fraction.substring(1) + "00").substring(0, 3);
      ms += Integer.parseInt(digits);
    }
    if (m.group(9) != null) {
      int offsetHours = Integer.parseInt(m.group(10));
      int offsetMinutes = Integer.parseInt(m.group(11));
      if (offsetHours > 23 || offsetMinutes > 59) return -1;
      long offset = (offsetHours * 60L + offsetMinutes) * 60_000L;
      ms -= m.group(9).equals("+") ? offset : -offset;
    }
    return ms;
  }
}
