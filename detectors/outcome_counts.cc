#include "detectors/outcome_counts.h"

namespace fraud::detectors {

void OutcomeCounts::count(const PartitionDetector::Result& result) {
  ++records;
  switch (result.outcome) {
    case Outcome::kAccepted:
      ++accepted;
      break;
    case Outcome::kLateDropped:
      ++late_dropped;
      break;
    case Outcome::kDuplicate:
      ++duplicate;
      break;
  }
  overflow_evicted += result.overflow_evicted;
  if (result.alert) {
    ++alerts;
    if (result.alert->incident.revision == 1) ++incidents;
  }
}

void OutcomeCounts::count(const RecordOutcome& outcome) {
  if (outcome.rejected) {
    countRejected(*outcome.rejected);
  } else {
    count(outcome.detected);
  }
}

void OutcomeCounts::countRejected(RejectReason reason) {
  ++records;
  ++rejected[static_cast<size_t>(reason)];
}

void OutcomeCounts::add(const OutcomeCounts& other) {
  records += other.records;
  accepted += other.accepted;
  late_dropped += other.late_dropped;
  duplicate += other.duplicate;
  overflow_evicted += other.overflow_evicted;
  alerts += other.alerts;
  incidents += other.incidents;
  for (size_t i = 0; i < rejected.size(); ++i) rejected[i] += other.rejected[i];
}

std::string OutcomeCounts::summaryJson() const {
  std::string out = "{\"records\":" + std::to_string(records) +
                    ",\"accepted\":" + std::to_string(accepted) +
                    ",\"late_dropped\":" + std::to_string(late_dropped) +
                    ",\"duplicate\":" + std::to_string(duplicate) +
                    ",\"overflow_evicted\":" + std::to_string(overflow_evicted) +
                    ",\"alerts\":" + std::to_string(alerts) +
                    ",\"incidents\":" + std::to_string(incidents) + ",\"rejected\":{";
  bool first = true;
  for (size_t i = 0; i < rejected.size(); ++i) {
    if (rejected[i] == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    out += '"';
    out += rejectReasonName(static_cast<RejectReason>(i));
    out += "\":" + std::to_string(rejected[i]);
  }
  out += "}}";
  return out;
}

}  // namespace fraud::detectors
