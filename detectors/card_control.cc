#include "detectors/card_control.h"

#include <simdjson.h>

#include <utility>

#include "detectors/record_fields.h"

namespace fraud::detectors {
namespace {

ControlDecodeResult rejectedWith(ControlRejectReason reason) {
  ControlDecodeResult result;
  result.rejected = reason;
  return result;
}

// A present field's text under the §9 text rule, or nothing (null, not a string, out of bounds,
// a control character).
std::optional<std::string_view> textOf(const simdjson::dom::element& value, size_t max_bytes) {
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  if (!fields::isValidText(text, 1, max_bytes)) return std::nullopt;
  return text;
}

}  // namespace

std::string_view controlRejectReasonName(ControlRejectReason reason) {
  switch (reason) {
    case ControlRejectReason::kInvalidJson:
      return rejectReasonName(RejectReason::kInvalidJson);
    case ControlRejectReason::kMissingField:
      return rejectReasonName(RejectReason::kMissingField);
    case ControlRejectReason::kInvalidField:
      return rejectReasonName(RejectReason::kInvalidField);
    case ControlRejectReason::kCardMismatch:
      return "card_mismatch";
    case ControlRejectReason::kMisrouted:
      return "misrouted";
  }
  return "unknown";
}

struct ControlDecoder::Parser {
  simdjson::dom::parser json;
};

ControlDecoder::ControlDecoder() : parser_(std::make_unique<Parser>()) {}
ControlDecoder::~ControlDecoder() = default;

ControlDecodeResult ControlDecoder::decode(std::string_view key,
                                           std::optional<std::string_view> value) {
  if (value) return decodeValue(key, *value);
  // A tombstone: a remove of the key's card, without reason or author. Its key is the only
  // place the card is named, so it must be one.
  if (!fields::isValidCard(key)) return rejectedWith(ControlRejectReason::kInvalidField);
  ControlDecodeResult result;
  result.card = key;
  result.control.action = ControlAction::kRemove;
  return result;
}

ControlDecodeResult ControlDecoder::decodeKeyless(std::string_view value) {
  return decodeValue(std::nullopt, value);
}

ControlDecodeResult ControlDecoder::decodeValue(std::optional<std::string_view> key,
                                                std::string_view value) {
  simdjson::dom::object object;
  if (!fields::parseObject(parser_->json, value, object)) {
    return rejectedWith(ControlRejectReason::kInvalidJson);
  }

  // missing_field is decided before any field's rule, as §1 does; which fields are required
  // depends on the action, so `until` is required only when the action is the string "suppress"
  // (an action of any other value is invalid_field below, whatever else is missing).
  simdjson::dom::element card;
  simdjson::dom::element action;
  simdjson::dom::element reason;
  simdjson::dom::element author;
  if (object["card"].get(card) != simdjson::SUCCESS ||
      object["action"].get(action) != simdjson::SUCCESS ||
      object["reason"].get(reason) != simdjson::SUCCESS ||
      object["author"].get(author) != simdjson::SUCCESS) {
    return rejectedWith(ControlRejectReason::kMissingField);
  }
  std::string_view action_text;
  const bool is_text = action.get_string().get(action_text) == simdjson::SUCCESS;
  const bool suppress = is_text && action_text == "suppress";
  const bool remove = is_text && action_text == "remove";
  simdjson::dom::element until;
  simdjson::dom::element from;
  const bool has_until = object["until"].get(until) == simdjson::SUCCESS;
  const bool has_from = object["from"].get(from) == simdjson::SUCCESS;
  if (suppress && !has_until) return rejectedWith(ControlRejectReason::kMissingField);

  ControlDecodeResult result;
  result.rejected = ControlRejectReason::kInvalidField;
  if (card.get_string().get(result.card) != simdjson::SUCCESS ||
      !fields::isValidCard(result.card)) {
    return result;
  }
  if (!suppress && !remove) return result;
  const auto reason_text = textOf(reason, kMaxControlReasonBytes);
  const auto author_text = textOf(author, kMaxControlAuthorBytes);
  if (!reason_text || !author_text) return result;
  if (suppress) {
    // `from` and `until` belong to a suppress; a remove ignores them, like any other field.
    const auto until_ms = fields::eventTimeOf(until);
    const auto from_ms = has_from ? fields::eventTimeOf(from) : std::optional<EventTime>(0);
    if (!until_ms || !from_ms || *from_ms >= *until_ms) return result;
    result.control.action = ControlAction::kSuppress;
    result.control.from = *from_ms;
    result.control.until = *until_ms;
  } else {
    result.control.action = ControlAction::kRemove;
  }
  // A well-formed control about another card than its key would sit with the key's task: it is
  // checked last, so that every other reason names what is wrong with the control itself.
  if (key && *key != result.card) {
    result.rejected = ControlRejectReason::kCardMismatch;
    return result;
  }
  result.control.reason.assign(*reason_text);
  result.control.author.assign(*author_text);
  result.rejected.reset();
  return result;
}

std::string ControlCounts::json() const {
  std::string out = "{\"applied\":" + std::to_string(applied) + ",\"rejected\":{";
  bool first = true;
  for (size_t i = 0; i < rejected.size(); ++i) {
    if (rejected[i] == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    out += '"';
    out += controlRejectReasonName(static_cast<ControlRejectReason>(i));
    out += "\":" + std::to_string(rejected[i]);
  }
  out += "}}";
  return out;
}

void CardControls::apply(const CardRef& card_ref, CardControl control) {
  if (control.action == ControlAction::kRemove) {
    controls_.erase(card_ref);
    return;
  }
  controls_.insert_or_assign(card_ref, std::move(control));
}

const CardControl* CardControls::find(const CardRef& card_ref) const {
  const auto it = controls_.find(card_ref);
  return it == controls_.end() ? nullptr : &it->second;
}

const CardControl* CardControls::suppressing(const CardRef& card_ref,
                                             EventTime trigger_event_time) const {
  const CardControl* control = find(card_ref);
  return control != nullptr && control->suppresses(trigger_event_time) ? control : nullptr;
}

}  // namespace fraud::detectors
