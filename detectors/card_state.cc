#include "detectors/card_state.h"

#include <algorithm>
#include <limits>

namespace fraud::detectors {

EventTime CardState::lastRelevantTime() const {
  EventTime last = std::numeric_limits<EventTime>::min();
  if (!events.empty()) last = events.back().time;
  if (incident) last = std::max(last, incident->end);
  return last;
}

}  // namespace fraud::detectors
