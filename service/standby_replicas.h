#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "detectors/base/mutex.h"
#include "service/clock.h"
#include "service/restore_queue.h"

namespace fraud::service {

// Which partitions an instance keeps a warm copy of (Kafka Streams' standby tasks): with
// `replicas` copies, partition p owned by member O is copied by the `replicas` members that
// follow O in the sorted list of the members that own partitions (wrapping around; never O).
// With replicas >= members - 1 every member holds every partition it does not own: whichever
// survivor the cooperative-sticky assignor hands a dead member's partition to, it finds a copy.
// With fewer, a moved partition finds one only where the assignor's pick and the placement
// agree (about replicas / (members - 1) of the time); librdkafka has no custom assignor API to
// steer that. Partitions with no known owner are not copied.
[[nodiscard]] std::set<int32_t> standbyPlacement(const std::map<int32_t, std::string>& owners,
                                                 const std::string& self, int replicas);

// One warm copy, as /v1/partitions and /metrics show it.
struct StandbyStatus {
  int32_t partition = 0;
  int64_t changelog_offset = -1;  // the next changelog offset the copy lacks; -1 before any
  // Changelog records the copy lacked when its last catch-up began (it had them after it).
  int64_t lag_records = -1;
  std::optional<double> seconds_since_caught_up;  // none before the first catch-up
  uint64_t catchups = 0;                          // rounds completed
  uint64_t failures = 0;                          // rounds that failed (retried next round)
};

// Keeps warm copies of partitions owned elsewhere (--standby-replicas): every `interval` it
// asks the standby restorer to catch each placed partition up to the changelog's current end,
// from the copy's own checkpoint. A partition assigned here is released first (its catch-up
// cancelled, so that the active restore takes the lease), and becomes a copy again when it is
// revoked and the placement still names it.
//
// Thread-safety: tick(), release() from the ingest thread; statuses() from any thread.
class StandbyReplicas {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int replicas = 1;
    std::string self;  // this instance's id, as the owner map names members
    std::chrono::milliseconds interval{1000};
  };
  // `owners` gives the owner map (partition -> member) as last read from the group; `clock`
  // schedules the rounds and dates the catch-ups.
  StandbyReplicas(Options options, RestoreQueue& restorer,
                  std::function<std::map<int32_t, std::string>()> owners,
                  const service::Clock& clock = service::Clock::real());

  // Takes finished catch-ups and, when a round is due, starts the next one for every placed
  // partition that is not `owned` here and not still catching up.
  void tick(const std::vector<int32_t>& owned) FRAUD_EXCLUDES(mu_) { tick(owned, clock_.now()); }
  void tick(const std::vector<int32_t>& owned, Clock::time_point now) FRAUD_EXCLUDES(mu_);
  // These partitions are assigned here now: no copy of them is written any more.
  void release(const std::vector<int32_t>& partitions) FRAUD_EXCLUDES(mu_);

  [[nodiscard]] std::vector<StandbyStatus> statuses() const FRAUD_EXCLUDES(mu_) {
    return statuses(clock_.now());
  }
  [[nodiscard]] std::vector<StandbyStatus> statuses(Clock::time_point now) const
      FRAUD_EXCLUDES(mu_);
  // Whether every other member keeps a copy of each of these partitions (owned here): the owner
  // map names at least one member besides this one, and no more than `replicas`. Whichever of
  // them the assignor hands a partition to catches its copy up every interval, so the partition
  // restores only a short tail there.
  [[nodiscard]] bool copiedElsewhere(const std::vector<int32_t>& owned) const;
  // Partitions that stopped being copies since the last call (their gauges go).
  [[nodiscard]] std::vector<int32_t> takeDropped() FRAUD_EXCLUDES(mu_);
  // Changelog records the catch-ups found malformed since the last call (their cards dropped,
  // as a restore does).
  [[nodiscard]] uint64_t takeMalformedChangelogRecords() { return std::exchange(malformed_, 0); }

 private:
  struct Copy {
    StandbyStatus status;
    std::optional<Clock::time_point> caught_up_at;
    bool running = false;
    uint64_t ticket = 0;
  };
  void takeCompleted(Clock::time_point now) FRAUD_EXCLUDES(mu_);

  Options options_;
  RestoreQueue& restorer_;
  std::function<std::map<int32_t, std::string>()> owners_;
  const service::Clock& clock_;
  // The ingest thread's alone (tick() and takeMalformedChangelogRecords()): not under mu_.
  std::optional<Clock::time_point> last_round_;
  uint64_t next_ticket_ = 1;
  uint64_t malformed_ = 0;

  mutable base::Mutex mu_;  // written on the ingest thread, read anywhere
  std::map<int32_t, Copy> copies_ FRAUD_GUARDED_BY(mu_);
  std::vector<int32_t> dropped_ FRAUD_GUARDED_BY(mu_);
};

}  // namespace fraud::service
