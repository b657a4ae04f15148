#include "detectors/window_detector.h"

#include <algorithm>
#include <iterator>

namespace fraud::detectors {

bool WindowDetector::isDuplicate(const CardState& state, std::string_view tx_id,
                                 EventTime live_from) {
  return state.events.containsTxIdFrom(tx_id, live_from);
}

WindowDetector::Accepted WindowDetector::accept(CardState& state, const CardRef& card_ref,
                                                const Transaction& tx, EventTime live_from) {
  auto& events = state.events;
  // Dead events and a dead incident never take part again (docs/rule.md §2, §4): drop them now.
  events.eraseBefore(live_from);
  if (state.incident && state.incident->end < live_from) state.incident.reset();

  // After every event with the same time: ties keep their order of acceptance.
  events.add(tx.event_time, tx.country, tx.tx_id);

  Accepted result;
  if (events.size() > options_.max_events) {
    const size_t excess = events.size() - options_.max_events;
    events.eraseFirst(excess);
    result.overflow_evicted = static_cast<uint32_t>(excess);
  }

  const auto window = smallestQualifyingWindow(state, tx.event_time);
  if (!window) return result;

  const EventTime s_star = window->begin.time();
  std::vector<Country> countries;
  for (auto c = window->begin; c.offset() != window->end_offset; c.next()) {
    countries.push_back(c.country());
  }
  std::sort(countries.begin(), countries.end());
  countries.erase(std::unique(countries.begin(), countries.end()), countries.end());

  auto& incident = state.incident;
  if (!incident || s_star > incident->end) {
    incident = Incident{s_star, s_star + options_.window_ms, 1, std::move(countries)};
  } else {
    incident->end = std::max(incident->end, s_star + options_.window_ms);
    std::vector<Country> merged;
    std::set_union(incident->countries.begin(), incident->countries.end(), countries.begin(),
                   countries.end(), std::back_inserter(merged));
    if (merged.size() == incident->countries.size()) return result;
    incident->countries = std::move(merged);
    ++incident->revision;
  }
  std::vector<std::string> tx_ids;
  for (auto c = window->begin; c.offset() != window->end_offset; c.next()) {
    tx_ids.emplace_back(c.txId());
  }
  result.alert =
      Alert{card_ref, *incident, std::move(tx_ids), std::string(tx.tx_id), tx.event_time};
  return result;
}

std::optional<WindowDetector::Window> WindowDetector::smallestQualifyingWindow(
    const CardState& state, EventTime t) {
  // Fewer events than the threshold hold fewer distinct countries: nothing can qualify.
  if (state.events.size() < options_.threshold) return std::nullopt;
  const EventTime from = t - options_.window_ms;
  auto begin = state.events.cursor();
  while (!begin.done() && begin.time() < from) begin.next();
  auto end = begin;
  uint32_t distinct = 0;
  auto add = [&](unsigned country) { distinct += tally_[country]++ == 0 ? 1 : 0; };
  auto remove = [&](unsigned country) { distinct -= --tally_[country] == 0 ? 1 : 0; };

  std::optional<Window> found;
  // Two cursors over the sorted events: each candidate s is a distinct event time in
  // [t - W, t]; S(s) is [begin, end) once end has taken in every event up to s + W.
  while (!begin.done() && begin.time() <= t) {
    const EventTime s = begin.time();
    while (!end.done() && end.time() <= s + options_.window_ms) {
      add(end.countryIndex());
      end.next();
    }
    if (distinct >= options_.threshold) {
      found = Window{begin, end.offset()};
      break;
    }
    while (!begin.done() && begin.time() == s) {
      remove(begin.countryIndex());
      begin.next();
    }
  }
  // Leave the tally all zero.
  for (auto c = begin; c.offset() != end.offset(); c.next()) remove(c.countryIndex());
  return found;
}

}  // namespace fraud::detectors
