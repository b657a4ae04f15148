#include "detectors/alert.h"

#include <charconv>

namespace fraud::detectors {
namespace {

void appendInt(std::string& out, int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

void appendField(std::string& out, std::string_view name) {
  out.push_back(',');
  out.push_back('"');
  out.append(name);
  out.append("\":");
}

}  // namespace

AlertKey AlertKey::of(const Alert& alert) {
  AlertKey key;
  key.alert_id = alertId(alert.card_ref, alert.incident.start);
  key.idempotency_key = key.alert_id + ":" + std::to_string(alert.incident.revision);
  return key;
}

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (b < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0x0F]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void appendAlertJson(std::string& out, const Alert& alert, const AlertKey& key,
                     const DetectorOptions& options, int64_t detected_at_ms) {
  out.append("{\"alert_id\":\"");
  out.append(key.alert_id);
  out.append("\",\"idempotency_key\":\"");
  out.append(key.idempotency_key);
  out.append("\",\"card_ref\":\"");
  out.append(alert.card_ref.hex());
  out.append("\",\"rule\":\"distinct_countries\"");
  appendField(out, "revision");
  appendInt(out, alert.incident.revision);
  appendField(out, "threshold");
  appendInt(out, options.threshold);
  appendField(out, "window_ms");
  appendInt(out, options.window_ms);
  appendField(out, "grace_ms");
  appendInt(out, options.grace_ms);
  appendField(out, "window_start");
  appendInt(out, alert.incident.start);
  appendField(out, "window_end");
  appendInt(out, alert.incident.end);
  appendField(out, "countries");
  out.push_back('[');
  for (size_t i = 0; i < alert.incident.countries.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('"');
    out.append(alert.incident.countries[i].view());
    out.push_back('"');
  }
  out.push_back(']');
  appendField(out, "tx_ids");
  out.push_back('[');
  for (size_t i = 0; i < alert.tx_ids.size(); ++i) {
    if (i > 0) out.push_back(',');
    appendJsonString(out, alert.tx_ids[i]);
  }
  out.push_back(']');
  appendField(out, "trigger_tx_id");
  appendJsonString(out, alert.trigger_tx_id);
  appendField(out, "trigger_event_time");
  appendInt(out, alert.trigger_event_time);
  appendField(out, "detected_at");
  appendInt(out, detected_at_ms);
  out.push_back('}');
}

}  // namespace fraud::detectors
