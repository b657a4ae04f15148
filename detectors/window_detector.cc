#include "detectors/window_detector.h"

#include <algorithm>
#include <iterator>

namespace fraud::detectors {

bool WindowDetector::isDuplicate(const CardState& state, std::string_view tx_id,
                                 EventTime live_from) {
  return std::any_of(state.events.begin(), state.events.end(),
                     [&](const Event& e) { return e.time >= live_from && e.tx_id == tx_id; });
}

WindowDetector::Accepted WindowDetector::accept(CardState& state, const CardRef& card_ref,
                                                const Transaction& tx, EventTime live_from) {
  auto& events = state.events;
  // Dead events and a dead incident never take part again (SPEC §2, §4): drop them now.
  const auto first_live =
      std::lower_bound(events.begin(), events.end(), live_from,
                       [](const Event& e, EventTime horizon) { return e.time < horizon; });
  events.erase(events.begin(), first_live);
  if (state.incident && state.incident->end < live_from) state.incident.reset();

  if (events.capacity() == 0) events.reserve(4);  // most cards hold a few events: one allocation
  // After every event with the same time: ties keep their order of acceptance.
  const auto slot = std::upper_bound(events.begin(), events.end(), tx.event_time,
                                     [](EventTime time, const Event& e) { return time < e.time; });
  events.insert(slot, Event{tx.event_time, tx.country, TxId(tx.tx_id)});

  Accepted result;
  if (events.size() > options_.max_events) {
    const size_t excess = events.size() - options_.max_events;
    events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(excess));
    result.overflow_evicted = static_cast<uint32_t>(excess);
  }

  const auto window = smallestQualifyingWindow(state, tx.event_time);
  if (!window) return result;

  const EventTime s_star = events[window->begin].time;
  std::vector<Country> countries;
  std::vector<std::string> tx_ids;
  tx_ids.reserve(window->end - window->begin);
  for (size_t i = window->begin; i < window->end; ++i) {
    countries.push_back(events[i].country);
    tx_ids.emplace_back(events[i].tx_id.view());
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
  result.alert =
      Alert{card_ref, *incident, std::move(tx_ids), std::string(tx.tx_id), tx.event_time};
  return result;
}

std::optional<WindowDetector::Window> WindowDetector::smallestQualifyingWindow(
    const CardState& state, EventTime t) {
  const auto& events = state.events;
  const size_t n = events.size();
  const EventTime from = t - options_.window_ms;
  size_t begin = static_cast<size_t>(
      std::lower_bound(events.begin(), events.end(), from,
                       [](const Event& e, EventTime time) { return e.time < time; }) -
      events.begin());
  size_t end = begin;
  uint32_t distinct = 0;
  auto add = [&](const Event& e) { distinct += tally_[e.country.index()]++ == 0 ? 1 : 0; };
  auto remove = [&](const Event& e) { distinct -= --tally_[e.country.index()] == 0 ? 1 : 0; };

  std::optional<Window> found;
  // Two pointers over the sorted events: each candidate s is a distinct event time in
  // [t - W, t]; S(s) is [begin, end) once end has taken in every event up to s + W.
  while (begin < n && events[begin].time <= t) {
    const EventTime s = events[begin].time;
    while (end < n && events[end].time <= s + options_.window_ms) add(events[end++]);
    if (distinct >= options_.threshold) {
      found = Window{begin, end};
      break;
    }
    while (begin < n && events[begin].time == s) remove(events[begin++]);
  }
  for (size_t i = begin; i < end; ++i) remove(events[i]);  // leave the tally all zero
  return found;
}

}  // namespace fraud::detectors
