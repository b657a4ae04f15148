#include "api/card_lookups.h"

#include <algorithm>

#include "api/http_text.h"
#include "api/json_views.h"
#include "api/lookup_audit.h"

namespace fraud::api {
namespace {

using http_text::pathOf;
using json_views::error;
using json_views::errorBody;
using json_views::json;
using json_views::Json;
using json_views::methodNotAllowed;
using json_views::orNull;
using json_views::retryLater;

// docs/rule.md §1: a card is 4..64 printable ASCII characters other than space.
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
  return http_text::equalsIgnoreCase(
      http_text::trim(content_type.substr(0, content_type.find(';'))), json_views::kJson);
}

}  // namespace

CardLookups::CardLookups(const ApiOptions& options, const ServiceView& view,
                         const LookupAudit& audit)
    : options_(options), view_(view), audit_(audit) {}

std::optional<HttpResponse> CardLookups::answer(const HttpRequest& request,
                                                std::string_view matched, Access access) const {
  if (matched == kRouteCardLookup) {
    if (request.method != "POST") return methodNotAllowed("POST");
    return byCard(request, access);
  }
  if (request.method != "GET") return methodNotAllowed("GET");
  const std::string_view path = pathOf(request.target);
  return byRef(request, path.substr(path.rfind('/') + 1), access);
}

std::optional<HttpResponse> CardLookups::byCard(const HttpRequest& request, Access access) const {
  const auto invalid = [&](int status, std::string_view code, std::string_view message) {
    audit_.record(request, "-", std::nullopt, "invalid", status);
    return error(status, code, message);
  };
  const auto content_type = request.header("content-type");
  if (!content_type || !isJsonMediaType(*content_type)) {
    return invalid(415, "unsupported_media_type", "the body must be application/json");
  }
  // The one value the header may have (the OpenAPI document's enum): anything else is refused,
  // not read as its absence.
  const auto redirect = request.header("x-fraud-redirect");
  if (redirect && *redirect != "manual") {
    return invalid(400, "invalid_redirect_mode", "X-Fraud-Redirect may only be manual");
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
    audit_.record(request, ref, std::nullopt, "partitions_unknown", 503);
    return retryLater(
        error(503, "partitions_unknown", "the input topic's partition count is not known yet"));
  }
  const std::optional<CardLookup> found = access == Access::kInline
                                              ? view_.tryLookupCached(*partition, card_ref)
                                              : view_.lookup(*partition, card_ref);
  if (!found) return std::nullopt;  // declined: the blocking lookup answers (and audits) it
  return byCardAnswer(request, *found, ref, *partition, redirect.has_value());
}

HttpResponse CardLookups::byCardAnswer(const HttpRequest& request, const CardLookup& found,
                                       const std::string& ref, int32_t partition,
                                       bool manual) const {
  HttpResponse response;
  std::string_view outcome;
  switch (found.outcome) {
    case CardLookupOutcome::kFound:
      response = json(200, json_views::card(*found.card));
      outcome = "found";
      break;
    case CardLookupOutcome::kNotFound: {
      Json body = errorBody("card_not_found", "the card has no state in its partition");
      body["card_ref"] = ref;
      body["partition"] = partition;
      response = json(404, body);
      outcome = "not_found";
      break;
    }
    case CardLookupOutcome::kRestoring: {
      Json body = errorBody("restoring", "the card's partition is being restored here");
      body["partition"] = partition;
      response = retryLater(json(503, body));
      outcome = "restoring";
      break;
    }
    case CardLookupOutcome::kNotHeld: {
      response = notHeld(partition, manual);
      outcome = response.status == 307 ? "redirected" : "not_held";
      break;
    }
  }
  audit_.record(request, ref, partition, outcome, response.status);
  return response;
}

HttpResponse CardLookups::notHeld(int32_t partition, bool manual) const {
  const std::optional<std::string> owner = view_.ownerOf(partition);
  if (owner && *owner == view_.instanceId()) {
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
    if (manual) {
      Json body = errorBody("misdirected", "another instance owns the card's partition");
      body["partition"] = partition;
      body["owner"] = *owner;
      body["location"] = location;
      return json(421, body);
    }
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

std::optional<HttpResponse> CardLookups::byRef(const HttpRequest& request,
                                               std::string_view ref_text, Access access) const {
  const auto ref = detectors::CardRef::fromHex(ref_text);
  if (!ref) {
    audit_.record(request, "-", std::nullopt, "invalid", 400);
    return error(400, "invalid_card_ref", "card_ref must be 64 lowercase hex characters");
  }
  const std::string hex = ref->hex();
  const std::optional<CardLookup> found =
      access == Access::kInline ? view_.tryLookupHeldCached(*ref) : view_.lookupHeld(*ref);
  if (found && found->outcome == CardLookupOutcome::kFound) {
    audit_.record(request, hex, found->card->partition, "found", 200);
    return json(200, json_views::card(*found->card));
  }
  // The other answers list partitions from status(), which may wait: not inline.
  if (!found || access == Access::kInline) return std::nullopt;
  const ServiceStatus status = view_.status();
  if (found->outcome == CardLookupOutcome::kRestoring) {
    Json body = errorBody("restoring", "some partitions held here are still being restored");
    Json restoring = Json::array();
    for (const auto& p : status.partitions) {
      if (p.phase != PartitionPhase::kActive) restoring.push_back(p.partition);
    }
    body["partitions"] = std::move(restoring);
    audit_.record(request, hex, std::nullopt, "restoring", 503);
    return retryLater(json(503, body));
  }
  Json body = errorBody("card_not_found", "no partition held here has state for the card");
  body["card_ref"] = hex;
  body["partitions"] = json_views::heldPartitions(status);
  audit_.record(request, hex, std::nullopt, "not_found", 404);
  return json(404, body);
}

}  // namespace fraud::api
