#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/card_state.h"

namespace fraud::api {

// What the API reads from the running service. `service/` implements ServiceView; the API never
// sees Kafka, RocksDB or the service's threads. Every method is safe to call from the HTTP
// threads while the service ingests, and returns a snapshot (never a reference into live state).

enum class PartitionPhase { kRestoring, kActive };

struct PartitionStatus {
  int32_t partition = 0;
  PartitionPhase phase = PartitionPhase::kRestoring;
  std::optional<int64_t> stream_time_ms;         // ST(p); none before the first record
  std::optional<double> event_time_lag_seconds;  // wall clock minus ST(p)
  int64_t next_offset = -1;                      // next input offset to process; -1 unknown
  std::optional<int64_t> high_watermark;         // input partition's end offset, when known
  std::optional<int64_t> offset_lag;             // high_watermark - next_offset
  uint64_t cards = 0;                            // cards held in state
  double restore_progress = 0;                   // 0..1; 1 once active
  uint64_t restored_records = 0;                 // changelog records applied by the restore
};

struct ServiceStatus {
  bool consumer_joined = false;             // the consumer is a member of the group
  bool outputs_blocked = false;             // alerts cannot be written: input is held
  std::string instance_id;                  // this instance, as peers name it
  std::vector<PartitionStatus> partitions;  // the partitions assigned here, by number
  uint64_t state_bytes = 0;                 // RocksDB SST and memtable bytes
};

struct CardSnapshot {
  detectors::CardRef card_ref;
  int32_t partition = 0;
  std::optional<int64_t> stream_time_ms;  // the partition's stream time
  detectors::CardState state;
};

enum class CardLookupOutcome {
  kFound,
  kNotFound,   // the partition is held here and the card has no state
  kRestoring,  // the partition is held here but is still being restored
  kNotHeld,    // the partition is not assigned to this instance
};

struct CardLookup {
  CardLookupOutcome outcome = CardLookupOutcome::kNotFound;
  std::optional<CardSnapshot> card;  // set when kFound
};

class ServiceView {
 public:
  virtual ~ServiceView() = default;

  [[nodiscard]] virtual ServiceStatus status() const = 0;
  // The input partition the producers' partitioner gives this card (the Kafka key); nothing
  // while the topic's partition count is unknown.
  [[nodiscard]] virtual std::optional<int32_t> partitionOf(std::string_view card) const = 0;
  [[nodiscard]] virtual detectors::CardRef cardRef(std::string_view card) const = 0;
  // The card's state in one partition.
  [[nodiscard]] virtual CardLookup lookup(int32_t partition,
                                          const detectors::CardRef& card_ref) const = 0;
  // The card's state in whichever partition held here has it (kNotFound when none has it,
  // kRestoring when none has it and some are still restoring).
  [[nodiscard]] virtual CardLookup lookupHeld(const detectors::CardRef& card_ref) const = 0;
  // The instance id of the group member that owns `partition`, when known.
  [[nodiscard]] virtual std::optional<std::string> ownerOf(int32_t partition) const = 0;
};

}  // namespace fraud::api
