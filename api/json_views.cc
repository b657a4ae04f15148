#include "api/json_views.h"

#include <string>
#include <utility>

namespace fraud::api::json_views {
namespace {

constexpr std::string_view kRetryAfterSeconds = "5";

Json quantiles(const std::optional<LatenessQuantiles>& q) {
  if (!q) return nullptr;
  Json body = Json::object();
  body["p50_ms"] = q->p50_ms;
  body["p99_ms"] = q->p99_ms;
  body["p999_ms"] = q->p999_ms;
  body["max_ms"] = q->max_ms;
  return body;
}

}  // namespace

HttpResponse json(int status, const Json& body) {
  HttpResponse response;
  response.status = status;
  response.content_type = std::string(kJson);
  // Text a view returns (tx_id) is UTF-8 by the codec's contract; replace rather than throw.
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

Json errorBody(std::string_view code, std::string_view message) {
  Json body = Json::object();
  body["error"] = code;
  body["message"] = message;
  return body;
}

HttpResponse error(int status, std::string_view code, std::string_view message) {
  return json(status, errorBody(code, message));
}

HttpResponse methodNotAllowed(std::string_view allowed) {
  HttpResponse response =
      error(405, "method_not_allowed", "this path answers only " + std::string(allowed));
  response.headers.emplace_back("Allow", allowed);
  return response;
}

HttpResponse retryLater(HttpResponse response) {
  response.headers.emplace_back("Retry-After", kRetryAfterSeconds);
  return response;
}

Json card(const CardSnapshot& card) {
  Json events = Json::array();
  for (const auto& e : card.state.events) {
    Json event = Json::object();
    event["tx_id"] = std::string(e.tx_id.view());
    event["country"] = e.country.view();
    event["event_time"] = e.time;
    events.push_back(std::move(event));
  }
  Json incident = nullptr;
  if (const auto& i = card.state.incident) {
    incident = Json::object();
    incident["start"] = i->start;
    incident["end"] = i->end;
    incident["revision"] = i->revision;
    Json countries = Json::array();
    for (const auto& c : i->countries) countries.push_back(c.view());
    incident["countries"] = std::move(countries);
  }
  Json body = Json::object();
  body["card_ref"] = card.card_ref.hex();
  body["partition"] = card.partition;
  body["stream_time"] = orNull(card.stream_time_ms);
  body["events"] = std::move(events);
  body["incident"] = std::move(incident);
  return body;
}

Json partition(const PartitionStatus& p) {
  Json entry = Json::object();
  entry["partition"] = p.partition;
  entry["phase"] = p.phase == PartitionPhase::kActive ? "active" : "restoring";
  entry["stream_time"] = orNull(p.stream_time_ms);
  entry["event_time_lag_seconds"] = orNull(p.event_time_lag_seconds);
  entry["next_offset"] = p.next_offset >= 0 ? Json(p.next_offset) : Json(nullptr);
  entry["high_watermark"] = orNull(p.high_watermark);
  entry["offset_lag"] = orNull(p.offset_lag);
  entry["cards"] = p.cards;
  entry["misrouted_records"] = p.misrouted_records;
  entry["restore_progress"] = p.restore_progress;
  entry["restored_records"] = p.restored_records;
  entry["lateness"] = p.lateness ? lateness(*p.lateness) : Json(nullptr);
  return entry;
}

Json standby(const StandbyCopy& copy) {
  Json entry = Json::object();
  entry["partition"] = copy.partition;
  entry["phase"] = "standby";
  entry["changelog_offset"] = orNull(copy.changelog_offset);
  entry["lag_records"] = orNull(copy.lag_records);
  entry["seconds_since_caught_up"] = orNull(copy.seconds_since_caught_up);
  entry["catchups"] = copy.catchups;
  entry["failures"] = copy.failures;
  return entry;
}

Json partitions(const ServiceStatus& status) {
  Json partitions = Json::array();
  for (const auto& p : status.partitions) partitions.push_back(partition(p));
  Json standbys = Json::array();
  for (const auto& copy : status.standbys) standbys.push_back(standby(copy));
  Json body = Json::object();
  body["instance_id"] = status.instance_id;
  body["consumer_joined"] = status.consumer_joined;
  body["outputs_blocked"] = status.outputs_blocked;
  body["state_bytes"] = status.state_bytes;
  body["partitions"] = std::move(partitions);
  body["standbys"] = std::move(standbys);
  return body;
}

Json heldPartitions(const ServiceStatus& status) {
  Json held = Json::array();
  for (const auto& p : status.partitions) held.push_back(p.partition);
  return held;
}

Json readiness(const ServiceStatus& status, int64_t max_lag) {
  Json reasons = Json::array();
  Json partitions = Json::array();
  if (!status.consumer_joined) reasons.push_back("consumer has not joined the group");
  // The service holds its input while alerts cannot be written: its answers are stale.
  if (status.outputs_blocked) reasons.push_back("alerts cannot be written; input is held");
  for (const auto& p : status.partitions) {
    std::string reason;
    if (p.phase != PartitionPhase::kActive) {
      reason = "restoring";
    } else if (p.offset_lag && *p.offset_lag > max_lag) {
      reason = "lagging: " + std::to_string(*p.offset_lag) + " > " + std::to_string(max_lag);
    }
    Json entry = Json::object();
    entry["partition"] = p.partition;
    entry["ready"] = reason.empty();
    entry["reason"] = reason.empty() ? Json(nullptr) : Json(reason);
    partitions.push_back(std::move(entry));
    if (!reason.empty())
      reasons.push_back("partition " + std::to_string(p.partition) + ": " + reason);
  }
  Json body = Json::object();
  body["ready"] = reasons.empty();
  body["consumer_joined"] = status.consumer_joined;
  body["outputs_blocked"] = status.outputs_blocked;
  body["max_lag"] = max_lag;
  body["reasons"] = std::move(reasons);
  body["partitions"] = std::move(partitions);
  return body;
}

Json lateness(const LatenessReport& report) {
  Json candidates = Json::array();
  for (const auto& c : report.candidates) {
    Json entry = Json::object();
    entry["grace_ms"] = c.grace_ms;
    entry["dropped"] = c.dropped;
    entry["dropped_share"] = c.dropped_share;
    entry["current"] = c.grace_ms == report.grace_ms;
    candidates.push_back(std::move(entry));
  }
  Json body = Json::object();
  body["interval_ms"] = report.interval_ms;
  body["grace_ms"] = report.grace_ms;
  body["records"] = report.records;
  body["late_dropped"] = report.late_dropped;
  body["late_dropped_share"] = report.late_dropped_share;
  body["timestamped_records"] = report.timestamped_records;
  body["vs_stream_time"] = quantiles(report.vs_stream_time);
  body["vs_record_timestamp"] = quantiles(report.vs_record_timestamp);
  Json advice = Json::object();
  advice["grace_p99_ms"] = orNull(report.advised_grace_p99_ms);
  advice["grace_p999_ms"] = orNull(report.advised_grace_p999_ms);
  body["advice"] = std::move(advice);
  body["candidates"] = std::move(candidates);
  return body;
}

Json recentAlerts(const std::vector<RecentAlert>& alerts, std::string_view instance) {
  Json list = Json::array();
  for (const auto& a : alerts) {
    Json entry = Json::object();
    entry["alert_id"] = a.alert_id;
    entry["idempotency_key"] = a.idempotency_key;
    entry["card_ref"] = a.card_ref.hex();
    entry["partition"] = a.partition;
    entry["revision"] = a.revision;
    entry["window_start"] = a.window_start_ms;
    entry["window_end"] = a.window_end_ms;
    entry["countries"] = a.countries;
    entry["trigger_event_time"] = a.trigger_event_time_ms;
    entry["detected_at"] = a.detected_at_ms;
    list.push_back(std::move(entry));
  }
  Json body = Json::object();
  body["instance_id"] = instance;
  body["alerts"] = std::move(list);
  return body;
}

}  // namespace fraud::api::json_views
