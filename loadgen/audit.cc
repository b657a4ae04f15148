#include "loadgen/audit.h"

#include <charconv>
#include <set>

namespace fraud::loadgen {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kDetectedAt = "detected_at";

std::string where(int32_t partition, int64_t offset) {
  return std::to_string(partition) + "/" + std::to_string(offset);
}

template <typename T>
std::optional<T> parseInteger(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  T value{};
  const auto* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// The first field (in name order) whose value differs; both are objects without detected_at.
std::string firstDifferingField(const json& expected, const json& actual) {
  std::set<std::string> names;
  for (const auto& [name, value] : expected.items()) names.insert(name);
  for (const auto& [name, value] : actual.items()) names.insert(name);
  for (const auto& name : names) {
    if (!expected.contains(name) || !actual.contains(name) || expected[name] != actual[name]) {
      return name;
    }
  }
  return {};
}

std::optional<AlertWindow> windowOf(const json& alert) {
  try {
    return AlertWindow{alert.at("card_ref").get<std::string>(),
                       alert.at("window_start").get<int64_t>(),
                       alert.at("window_end").get<int64_t>()};
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

template <typename Item, typename ToJson>
ordered_json limitedList(const std::vector<Item>& items, size_t limit, ToJson&& to_json) {
  ordered_json list = ordered_json::array();
  for (size_t i = 0; i < items.size() && i < limit; ++i) list.push_back(to_json(items[i]));
  return list;
}

ordered_json sourceJson(const std::pair<int32_t, int64_t>& at) {
  return ordered_json{{"partition", at.first}, {"offset", at.second}};
}

}  // namespace

void Audit::expectAlert(const detectors::AlertKey& key, std::string_view alert_json) {
  json value = json::parse(alert_json);
  value.erase(kDetectedAt);
  if (auto window = windowOf(value)) expected_windows_[window->card_ref].push_back(*window);
  expected_alerts_[key.idempotency_key] = std::move(value);
}

void Audit::expectAlert(const detectors::Alert& alert, const detectors::DetectorOptions& options) {
  const auto key = detectors::AlertKey::of(alert);
  std::string text;
  detectors::appendAlertJson(text, alert, key, options, 0);
  expectAlert(key, text);
}

void Audit::expectRejection(int32_t partition, int64_t offset, detectors::RejectReason reason) {
  expected_rejections_[{partition, offset}] = std::string(detectors::rejectReasonName(reason));
}

void Audit::observeAlert(const ObservedAlert& alert) {
  ++alert_records_;
  const std::string at = where(alert.partition, alert.offset);
  json value = json::parse(alert.value, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object() || !value.contains("idempotency_key") ||
      !value["idempotency_key"].is_string()) {
    malformed_alerts_.push_back(at + ": not an alert object with an idempotency_key");
    return;
  }
  const auto key = value["idempotency_key"].get<std::string>();
  if (alert.idempotency_header != key) {
    malformed_alerts_.push_back(at + ": header idempotency-key " +
                                alert.idempotency_header.value_or("(absent)") +
                                " differs from the field " + key);
  }
  if (!value.contains("card_ref") || value["card_ref"] != alert.record_key) {
    malformed_alerts_.push_back(at + ": record key is not the alert's card_ref");
  }
  value.erase(kDetectedAt);
  if (auto window = windowOf(value)) observed_windows_[window->card_ref].push_back(*window);
  observed_alerts_[key].push_back(std::move(value));
}

void Audit::observeRejection(const ObservedRejection& rejection, const std::string& input_topic) {
  ++dlq_records_;
  if (rejection.source_topic && *rejection.source_topic != input_topic) {
    ++dlq_other_topics_;
    return;
  }
  const auto partition = parseInteger<int32_t>(rejection.source_partition);
  const auto offset = parseInteger<int64_t>(rejection.source_offset);
  if (!rejection.source_topic || !partition || !offset || !rejection.reason) {
    malformed_rejections_.push_back(
        where(rejection.partition, rejection.offset) +
        ": lacks a valid reject-reason, source-topic, source-partition or source-offset header");
    return;
  }
  observed_rejections_[{*partition, *offset}].push_back(*rejection.reason);
}

void Audit::setTruth(std::vector<TruthScenario> scenarios) { truth_ = std::move(scenarios); }

Audit::AlertFindings Audit::compareAlerts() const {
  AlertFindings f;
  for (const auto& [key, expected] : expected_alerts_) {
    const auto found = observed_alerts_.find(key);
    if (found == observed_alerts_.end()) {
      f.missing.push_back(key);
      continue;
    }
    for (const auto& actual : found->second) {
      if (actual != expected) {
        const std::string field = firstDifferingField(expected, actual);
        f.differing.push_back(
            Differing{key, field, expected.value(field, json()), actual.value(field, json())});
        break;
      }
    }
  }
  for (const auto& [key, occurrences] : observed_alerts_) {
    if (!expected_alerts_.contains(key)) f.unexpected.push_back(key);
    if (occurrences.size() > 1) f.duplicates.emplace_back(key, occurrences.size());
  }
  return f;
}

Audit::RejectionFindings Audit::compareRejections() const {
  RejectionFindings f;
  for (const auto& [at, reason] : expected_rejections_) {
    const auto found = observed_rejections_.find(at);
    if (found == observed_rejections_.end()) {
      f.missing.push_back(at);
    } else if (found->second.front() != reason) {
      f.differing.emplace_back(at, found->second.front());
    }
  }
  for (const auto& [at, reasons] : observed_rejections_) {
    if (!expected_rejections_.contains(at)) f.unexpected.push_back(at);
    if (reasons.size() > 1) f.duplicates.emplace_back(at, reasons.size());
  }
  return f;
}

std::vector<uint64_t> Audit::unrecalled(bool offline) const {
  std::vector<uint64_t> missed;
  if (!truth_) return missed;
  const auto& windows = offline ? expected_windows_ : observed_windows_;
  static const std::vector<AlertWindow> kNone;
  for (const auto& scenario : *truth_) {
    const auto found = windows.find(scenario.card_ref);
    if (!isRecalled(scenario, found == windows.end() ? kNone : found->second)) {
      missed.push_back(scenario.scenario);
    }
  }
  return missed;
}

bool Audit::passed() const {
  const auto a = compareAlerts();
  const auto r = compareRejections();
  return a.missing.empty() && a.unexpected.empty() && a.differing.empty() &&
         (allow_exact_repeats_ || a.duplicates.empty()) && malformed_alerts_.empty() &&
         r.missing.empty() && r.unexpected.empty() && r.differing.empty() && r.duplicates.empty() &&
         malformed_rejections_.empty() && unrecalled(false).empty();
}

ordered_json Audit::report(size_t list_limit) const {
  const auto a = compareAlerts();
  const auto r = compareRejections();
  const auto asString = [](const std::string& s) { return ordered_json(s); };

  ordered_json alerts;
  alerts["expected"] = expected_alerts_.size();
  alerts["records"] = alert_records_;
  alerts["distinct_keys"] = observed_alerts_.size();
  alerts["missing"] = {{"count", a.missing.size()},
                       {"keys", limitedList(a.missing, list_limit, asString)}};
  alerts["unexpected"] = {{"count", a.unexpected.size()},
                          {"keys", limitedList(a.unexpected, list_limit, asString)}};
  alerts["differing"] = {
      {"count", a.differing.size()},
      {"items", limitedList(a.differing, list_limit, [](const Differing& d) {
         return ordered_json{
             {"key", d.key}, {"field", d.field}, {"expected", d.expected}, {"actual", d.actual}};
       })}};
  alerts["duplicates"] = {{"count", a.duplicates.size()},
                          {"items", limitedList(a.duplicates, list_limit, [](const auto& d) {
                             return ordered_json{{"key", d.first}, {"times", d.second}};
                           })}};
  if (allow_exact_repeats_) {
    // Each one is an exact repeat: a differing occurrence is listed under "differing".
    size_t extra = 0;
    for (const auto& d : a.duplicates) extra += d.second - 1;
    alerts["repeats"] = {{"allowed", "exact repeats only (--alert-delivery immediate)"},
                         {"keys", a.duplicates.size()},
                         {"extra_records", extra}};
  }
  alerts["malformed"] = {{"count", malformed_alerts_.size()},
                         {"items", limitedList(malformed_alerts_, list_limit, asString)}};

  ordered_json dlq;
  dlq["expected"] = expected_rejections_.size();
  dlq["records"] = dlq_records_;
  dlq["other_source_topics"] = dlq_other_topics_;
  dlq["missing"] = {{"count", r.missing.size()},
                    {"items", limitedList(r.missing, list_limit, sourceJson)}};
  dlq["unexpected"] = {{"count", r.unexpected.size()},
                       {"items", limitedList(r.unexpected, list_limit, sourceJson)}};
  dlq["differing"] = {{"count", r.differing.size()},
                      {"items", limitedList(r.differing, list_limit, [&](const auto& d) {
                         auto item = sourceJson(d.first);
                         item["expected_reason"] = expected_rejections_.at(d.first);
                         item["actual_reason"] = d.second;
                         return item;
                       })}};
  dlq["duplicates"] = {{"count", r.duplicates.size()},
                       {"items", limitedList(r.duplicates, list_limit, [](const auto& d) {
                          auto item = sourceJson(d.first);
                          item["times"] = d.second;
                          return item;
                        })}};
  dlq["malformed"] = {{"count", malformed_rejections_.size()},
                      {"items", limitedList(malformed_rejections_, list_limit, asString)}};

  ordered_json out;
  out["verdict"] = passed() ? "pass" : "fail";
  out["alerts"] = std::move(alerts);
  out["dlq"] = std::move(dlq);
  if (truth_) {
    const auto missed = unrecalled(false);
    const auto missed_offline = unrecalled(true);
    const auto asNumber = [](uint64_t id) { return ordered_json(id); };
    out["truth"] = {{"scenarios", truth_->size()},
                    {"recalled", truth_->size() - missed.size()},
                    {"missed", limitedList(missed, list_limit, asNumber)},
                    {"recalled_by_offline_engine", truth_->size() - missed_offline.size()}};
  }
  return out;
}

}  // namespace fraud::loadgen
