#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "detectors/base/status.h"
#include "service/partition_task.h"
#include "service/rebalance_listener.h"
#include "service/task_manager.h"

namespace fraud::service {

// One answer of the consumer's poll: a record of the input topic, or an event. Its views point
// into the consumer's own buffer and stay valid until the consumer releases it.
struct PolledInput {
  enum class Kind {
    kRecord,
    kPartitionEnd,  // the end of a partition was reached (not an error)
    kFatal,         // the consumer met a fatal error: fatalError() says which
    kError,         // any other error event; `error` says what
  };
  Kind kind = Kind::kRecord;
  int32_t partition = -1;
  InputRecord record;        // kRecord
  bool create_time = false;  // record.timestamp_ms is the producer's CreateTime
  std::string_view error;    // kError
  void* handle = nullptr;    // the consumer's, for release()
};

// Everything the stream thread asks of the input consumer: records and events, the pauses,
// seeks and start offsets the task manager makes (InputControl), the rebalance's side
// (ConsumerAssignment), its fatal error, leaving and closing, and the watermarks it reads for the
// lag gauges. KafkaInput over librdkafka in the service; a scripted consumer in the unit tests
// (tests/unit/service/stream_thread_test.cc). Nothing here is a librdkafka type.
//
// The rebalance callback runs inside poll() and close() on the calling thread (librdkafka's
// contract): a poll may assign, revoke or rewind partitions before it returns.
//
// Thread-safety: the ingest thread only.
class InputConsumer : public InputControl, public ConsumerAssignment {
 public:
  // Fills `polled` with the next record or event, waiting up to `timeout_ms` for it; false when
  // none came (then `polled` is untouched). One call per record.
  [[nodiscard]] virtual bool poll(int timeout_ms, PolledInput& polled) = 0;
  // Gives back what poll() filled: their views end here.
  virtual void release(std::span<PolledInput> polled) = 0;
  // The consumer's fatal error ("NAME: reason"), if it has one (else ok): it cannot go on after
  // one.
  [[nodiscard]] virtual base::Status fatalError() const = 0;
  // Leaves the subscription: every partition is revoked in the following polls, then the group
  // is left. An error when refused.
  [[nodiscard]] virtual base::Status unsubscribe() = 0;
  // Closes the consumer: the revocation callback runs, and the group is left unless the
  // membership is static. Failures are logged. Nothing may be called after it.
  virtual void close() = 0;
  // The partition's high watermark as last fetched (no request to the cluster); none when not
  // known yet.
  [[nodiscard]] virtual std::optional<int64_t> cachedHighWatermark(int32_t partition) const = 0;
};

}  // namespace fraud::service
