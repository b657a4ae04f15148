#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "api/service_view.h"
#include "detectors/base/mutex.h"
#include "service/lateness_histogram.h"

namespace fraud::service {

// What the lateness figures are measured over and compared with (docs/operations.md, "Choosing
// the grace").
struct LatenessOptions {
  int64_t interval_ms = 3'600'000;  // the sliding interval; whole minutes, 1 min .. 24 h
  int64_t grace_ms = 120'000;       // the configured grace G
  // Graces whose drops are estimated besides G (ascending; G is added where it falls).
  std::vector<int64_t> candidate_graces_ms = {0,       1'000,   5'000,   30'000,   60'000,
                                              120'000, 300'000, 600'000, 1'800'000};
};

// Every figure of one interval, summed over its minutes (and over partitions when merged).
struct LatenessWindow {
  LatenessHistogram vs_stream_time;
  LatenessHistogram vs_record_timestamp;
  uint64_t records = 0;
  uint64_t late_dropped = 0;
  uint64_t timestamped = 0;
  int64_t max_vs_stream_time = 0;
  int64_t max_vs_record_timestamp = 0;

  void merge(const LatenessWindow& other);
};

// The report of a window: quantiles, the share dropped, the advice and the candidates.
[[nodiscard]] api::LatenessReport reportOf(const LatenessWindow& window,
                                           const LatenessOptions& options);

// One partition's lateness over a sliding interval: a ring of one-minute slots, each with two
// log-bucketed histograms (against stream time, against the record timestamp). Memory is fixed
// at construction (about 3.7 KiB a minute); observe() is O(1) and never allocates: it bumps one
// bucket of each histogram, and clears a slot when a new minute first reuses it.
//
// Thread-safety: observe() from the ingest thread; window() from any thread (one mutex, held
// for a bucket increment by the writer).
class LatenessTracker {
 public:
  explicit LatenessTracker(int64_t interval_ms);

  // One valid record: ST(p) as it stood before it, its event time, its record timestamp,
  // whether the grace dropped it, and the wall clock that places it in a minute.
  void observe(std::optional<int64_t> stream_time_before, int64_t event_time,
               std::optional<int64_t> record_timestamp, bool late_dropped, int64_t now_ms)
      FRAUD_EXCLUDES(mu_);
  // Adds the minutes within the interval that ends at `now_ms` to `into`.
  void window(int64_t now_ms, LatenessWindow& into) const FRAUD_EXCLUDES(mu_);
  // Forgets every record observed (the ingest thread; allocates nothing).
  void clear() FRAUD_EXCLUDES(mu_);

 private:
  struct Slot {
    int64_t minute = -1;
    MinuteLatenessHistogram vs_stream_time;
    MinuteLatenessHistogram vs_record_timestamp;
    uint32_t records = 0;
    uint32_t late_dropped = 0;
    uint32_t timestamped = 0;
    int64_t max_vs_stream_time = 0;
    int64_t max_vs_record_timestamp = 0;

    void reset(int64_t new_minute);
  };

  mutable base::Mutex mu_;
  std::vector<Slot> slots_ FRAUD_GUARDED_BY(mu_);  // slot of minute m: m % size()
};

}  // namespace fraud::service
