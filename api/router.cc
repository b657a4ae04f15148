#include "api/router.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/openapi.h"

namespace fraud::api {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kRetryAfterSeconds = "5";

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::string_view pathOf(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

std::array<unsigned char, 32> sha256(std::string_view data) {
  std::array<unsigned char, 32> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return digest;
}

// SPEC §1: a card is 4..64 printable ASCII characters other than space.
bool isCard(std::string_view card) {
  return card.size() >= 4 && card.size() <= 64 &&
         std::all_of(card.begin(), card.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// An instance id that can stand in a URL's host without escaping.
bool isUrlSafeMember(std::string_view id) {
  return !id.empty() && id.size() <= 253 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  });
}

bool isJsonMediaType(std::string_view content_type) {
  return equalsIgnoreCase(trim(content_type.substr(0, content_type.find(';'))), kJson);
}

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

template <class T>
Json orNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// Event::tx_id's text, whether it is held as a std::string or as an inline id with view().
template <class Id>
std::string_view idText(const Id& id) {
  if constexpr (requires { id.view(); }) {
    return id.view();
  } else {
    return std::string_view(id);
  }
}

Json cardJson(const CardSnapshot& card) {
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

Json heldPartitions(const ServiceStatus& status) {
  Json held = Json::array();
  for (const auto& p : status.partitions) held.push_back(p.partition);
  return held;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (equalsIgnoreCase(field, name)) return std::string_view(value);
  }
  return std::nullopt;
}

Router::Router(ApiOptions options, const ServiceView& view, prometheus::Registry& registry)
    : options_(std::move(options)), view_(view), registry_(registry), metrics_(registry) {
  if (options_.api_token)
    token_digest_ = std::make_shared<const Digest>(sha256(*options_.api_token));
  // The service may register an "audit" logger with its own sink; else audit lines go to the
  // default logger's sinks under the name "audit".
  audit_ = spdlog::get("audit");
  if (!audit_) audit_ = spdlog::default_logger()->clone("audit");
  log_ = spdlog::get("http");
  if (!log_) log_ = spdlog::default_logger()->clone("http");
}

Router::~Router() = default;

void Router::replaceToken(const std::string& token) {
  auto digest = std::make_shared<const Digest>(sha256(token));
  std::lock_guard lock(token_mutex_);
  token_digest_ = std::move(digest);
}

std::string_view Router::routeOf(std::string_view target) {
  const std::string_view path = pathOf(target);
  for (const std::string_view route : kRoutes) {
    if (path == route) return route;
  }
  constexpr std::string_view kCards = "/v1/cards/";
  if (path.starts_with(kCards) && path.size() > kCards.size() &&
      path.find('/', kCards.size()) == std::string_view::npos) {
    return kRouteCardByRef;
  }
  return kRouteUnmatched;
}

bool Router::readsView(std::string_view target) {
  return routeOf(target) == kRouteReady || pathOf(target).starts_with("/v1/");
}

HttpResponse Router::handle(const HttpRequest& request) const {
  double seconds = 0;
  HttpResponse response = handleUncounted(request, seconds);
  count(response, seconds);
  return response;
}

void Router::count(const HttpResponse& response, double seconds) const {
  metrics_.countRequest(response.route, response.status, seconds);
}

HttpResponse Router::handleUncounted(const HttpRequest& request, double& seconds) const {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse response;
  try {
    response = route(request);
  } catch (const std::exception& e) {
    log_->error("{} {} failed: {}", request.method, routeOf(request.target), e.what());
    response = error(500, "internal", "the server failed to answer; see its log");
  } catch (...) {
    response = error(500, "internal", "the server failed to answer; see its log");
  }
  response.route = routeOf(request.target);
  response.headers.emplace_back("Cache-Control", "no-store");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  seconds = took.count();
  return response;
}

HttpResponse Router::reject(std::string_view target, int status, std::string_view code,
                            std::string_view message) const {
  HttpResponse response = error(status, code, message);
  response.route = routeOf(target);
  response.headers.emplace_back("Cache-Control", "no-store");
  metrics_.countRequest(response.route, status, 0);
  return response;
}

HttpResponse Router::route(const HttpRequest& request) const {
  const std::string_view target = request.target;
  if (!target.starts_with('/')) {
    return error(400, "invalid_target", "the request target must be a path starting with /");
  }
  const std::string_view path = pathOf(target);
  const std::string_view matched = routeOf(target);
  const bool get = request.method == "GET";
  if (path.starts_with("/v1/")) {
    if (auto denied = checkToken(request)) {
      if (matched == kRouteCardLookup || matched == kRouteCardByRef) {
        audit(request, "-", std::nullopt, "unauthorized", denied->status);
      }
      return *std::move(denied);
    }
  }
  if (matched == kRouteHealth) {
    if (!get) return methodNotAllowed("GET");
    Json body = Json::object();
    body["status"] = "ok";
    return json(200, body);
  }
  if (matched == kRouteReady) return get ? ready() : methodNotAllowed("GET");
  if (matched == kRouteMetrics) return get ? metricsText() : methodNotAllowed("GET");
  if (matched == kRouteOpenApi) {
    if (!get) return methodNotAllowed("GET");
    HttpResponse response;
    response.content_type = std::string(kJson);
    response.body = std::string(openApiDocument());
    return response;
  }
  if (matched == kRoutePartitions) return get ? partitions() : methodNotAllowed("GET");
  if (matched == kRouteCardLookup) {
    return request.method == "POST" ? cardLookup(request) : methodNotAllowed("POST");
  }
  if (matched == kRouteCardByRef) {
    if (!get) return methodNotAllowed("GET");
    return cardByRef(request, path.substr(path.rfind('/') + 1));
  }
  return error(404, "not_found", "no such endpoint; see /openapi.json");
}

std::optional<HttpResponse> Router::checkToken(const HttpRequest& request) const {
  std::shared_ptr<const Digest> expected;
  {
    std::lock_guard lock(token_mutex_);
    expected = token_digest_;
  }
  if (!expected) return std::nullopt;
  const auto authorization = request.header("authorization");
  std::string_view error_code;
  if (!authorization) {
    error_code = "";
  } else {
    const std::string_view value = trim(*authorization);
    const size_t space = value.find(' ');
    const bool bearer =
        space != std::string_view::npos && equalsIgnoreCase(value.substr(0, space), "bearer");
    if (bearer) {
      const auto presented = sha256(trim(value.substr(space)));
      // Constant time: comparing digests hides the token's length and content.
      if (CRYPTO_memcmp(presented.data(), expected->data(), presented.size()) == 0) {
        return std::nullopt;
      }
    }
    error_code = bearer ? "invalid_token" : "invalid_request";
  }
  HttpResponse response = error(401, "unauthorized", "this endpoint needs a bearer token");
  std::string challenge = "Bearer realm=\"fraud-detector\"";
  if (!error_code.empty()) challenge += ", error=\"" + std::string(error_code) + "\"";
  response.headers.emplace_back("WWW-Authenticate", std::move(challenge));
  return response;
}

HttpResponse Router::ready() const {
  const ServiceStatus status = view_.status();
  Json reasons = Json::array();
  Json partitions = Json::array();
  if (!status.consumer_joined) reasons.push_back("consumer has not joined the group");
  // The service holds its input while alerts cannot be written: its answers are stale.
  if (status.outputs_blocked) reasons.push_back("alerts cannot be written; input is held");
  for (const auto& p : status.partitions) {
    std::string reason;
    if (p.phase != PartitionPhase::kActive) {
      reason = "restoring";
    } else if (p.offset_lag && *p.offset_lag > options_.ready_max_lag) {
      reason = "lagging: " + std::to_string(*p.offset_lag) + " > " +
               std::to_string(options_.ready_max_lag);
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
  body["max_lag"] = options_.ready_max_lag;
  body["reasons"] = std::move(reasons);
  body["partitions"] = std::move(partitions);
  return json(body["ready"].get<bool>() ? 200 : 503, body);
}

HttpResponse Router::metricsText() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_.Collect());
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = std::move(out).str();
  return response;
}

HttpResponse Router::partitions() const {
  const ServiceStatus status = view_.status();
  Json partitions = Json::array();
  for (const auto& p : status.partitions) {
    Json entry = Json::object();
    entry["partition"] = p.partition;
    entry["phase"] = p.phase == PartitionPhase::kActive ? "active" : "restoring";
    entry["stream_time"] = orNull(p.stream_time_ms);
    entry["event_time_lag_seconds"] = orNull(p.event_time_lag_seconds);
    entry["next_offset"] = p.next_offset >= 0 ? Json(p.next_offset) : Json(nullptr);
    entry["high_watermark"] = orNull(p.high_watermark);
    entry["offset_lag"] = orNull(p.offset_lag);
    entry["cards"] = p.cards;
    entry["restore_progress"] = p.restore_progress;
    entry["restored_records"] = p.restored_records;
    partitions.push_back(std::move(entry));
  }
  Json body = Json::object();
  body["instance_id"] = status.instance_id;
  body["consumer_joined"] = status.consumer_joined;
  body["outputs_blocked"] = status.outputs_blocked;
  body["state_bytes"] = status.state_bytes;
  body["partitions"] = std::move(partitions);
  return json(200, body);
}

HttpResponse Router::cardLookup(const HttpRequest& request) const {
  const auto invalid = [&](int status, std::string_view code, std::string_view message) {
    audit(request, "-", std::nullopt, "invalid", status);
    return error(status, code, message);
  };
  const auto content_type = request.header("content-type");
  if (!content_type || !isJsonMediaType(*content_type)) {
    return invalid(415, "unsupported_media_type", "the body must be application/json");
  }
  const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return invalid(400, "invalid_json", "the body is not valid JSON");
  const auto card = body.is_object() ? body.find("card") : body.end();
  if (!body.is_object() || card == body.end() || !card->is_string()) {
    return invalid(400, "invalid_request", "the body must be an object with a string field card");
  }
  const auto& clear = card->get_ref<const std::string&>();
  if (!isCard(clear)) {
    return invalid(400, "invalid_card", "card must be 4..64 printable ASCII characters, no space");
  }
  const detectors::CardRef card_ref = view_.cardRef(clear);
  const std::string ref = card_ref.hex();
  const std::optional<int32_t> partition = view_.partitionOf(clear);
  if (!partition) {
    audit(request, ref, std::nullopt, "partitions_unknown", 503);
    return retryLater(
        error(503, "partitions_unknown", "the input topic's partition count is not known yet"));
  }
  const CardLookup found = view_.lookup(*partition, card_ref);
  HttpResponse response;
  std::string_view outcome;
  switch (found.outcome) {
    case CardLookupOutcome::kFound:
      response = json(200, cardJson(*found.card));
      outcome = "found";
      break;
    case CardLookupOutcome::kNotFound: {
      Json body404 = errorBody("card_not_found", "the card has no state in its partition");
      body404["card_ref"] = ref;
      body404["partition"] = *partition;
      response = json(404, body404);
      outcome = "not_found";
      break;
    }
    case CardLookupOutcome::kRestoring: {
      Json body503 = errorBody("restoring", "the card's partition is being restored here");
      body503["partition"] = *partition;
      response = retryLater(json(503, body503));
      outcome = "restoring";
      break;
    }
    case CardLookupOutcome::kNotHeld:
      response = notHeld(*partition);
      outcome = response.status == 307 ? "redirected" : "not_held";
      break;
  }
  audit(request, ref, partition, outcome, response.status);
  return response;
}

HttpResponse Router::notHeld(int32_t partition) const {
  const std::optional<std::string> owner = view_.ownerOf(partition);
  if (owner && *owner == view_.status().instance_id) {
    // The group says this instance owns it but it is not assigned yet: a rebalance is running.
    Json body = errorBody("rebalancing", "the card's partition is being assigned here");
    body["partition"] = partition;
    return retryLater(json(503, body));
  }
  if (owner && isUrlSafeMember(*owner) && !options_.peer_url_template.empty()) {
    std::string location = options_.peer_url_template;
    location.replace(location.find("{member}"), 8, *owner);
    while (location.ends_with('/')) location.pop_back();
    location += kRouteCardLookup;
    Json body = Json::object();
    body["partition"] = partition;
    body["owner"] = *owner;
    body["location"] = location;
    HttpResponse response = json(307, body);
    response.headers.emplace_back("Location", std::move(location));
    return response;
  }
  Json body = errorBody("misdirected", "another instance owns the card's partition");
  body["partition"] = partition;
  body["owner"] = orNull(owner);
  return json(421, body);
}

HttpResponse Router::cardByRef(const HttpRequest& request, std::string_view ref_text) const {
  const auto ref = detectors::CardRef::fromHex(ref_text);
  if (!ref) {
    audit(request, "-", std::nullopt, "invalid", 400);
    return error(400, "invalid_card_ref", "card_ref must be 64 lowercase hex characters");
  }
  const std::string hex = ref->hex();
  const CardLookup found = view_.lookupHeld(*ref);
  if (found.outcome == CardLookupOutcome::kFound) {
    audit(request, hex, found.card->partition, "found", 200);
    return json(200, cardJson(*found.card));
  }
  const ServiceStatus status = view_.status();
  if (found.outcome == CardLookupOutcome::kRestoring) {
    Json body = errorBody("restoring", "some partitions held here are still being restored");
    Json restoring = Json::array();
    for (const auto& p : status.partitions) {
      if (p.phase != PartitionPhase::kActive) restoring.push_back(p.partition);
    }
    body["partitions"] = std::move(restoring);
    audit(request, hex, std::nullopt, "restoring", 503);
    return retryLater(json(503, body));
  }
  Json body = errorBody("card_not_found", "no partition held here has state for the card");
  body["card_ref"] = hex;
  body["partitions"] = heldPartitions(status);
  audit(request, hex, std::nullopt, "not_found", 404);
  return json(404, body);
}

void Router::audit(const HttpRequest& request, const std::string& card_ref,
                   std::optional<int32_t> partition, std::string_view outcome, int status) const {
  audit_->info("card_lookup client={} route={} card_ref={} partition={} outcome={} status={}",
               request.client, routeOf(request.target), card_ref,
               partition ? std::to_string(*partition) : "-", outcome, status);
}

}  // namespace fraud::api
