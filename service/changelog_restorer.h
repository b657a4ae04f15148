#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "service/kafka.h"
#include "state/state_db.h"

namespace fraud::service {

// Key of the changelog record that carries a partition's checkpoint (input offset, stream time).
// Card records are keyed by the 32 raw bytes of card_ref, so no card key can equal it.
inline constexpr std::string_view kChangelogCheckpointKey = "__checkpoint";

struct RestoreResult {
  int32_t partition = 0;
  std::optional<state::PartitionCheckpoint> checkpoint;  // none: the partition has no state yet
  uint64_t records = 0;                                  // changelog records applied
  std::chrono::duration<double> duration{};
  std::optional<std::string> error;  // the restore failed; retry it
};

// Brings partitions' local state up to what the changelog topic holds (read_committed), from
// each local checkpoint onward, on its own thread and its own consumer. Partitions queued
// together are read together (one assignment), and each is reported as soon as it is done.
// The changelog partition of an input partition has the same number.
class ChangelogRestorer {
 public:
  ChangelogRestorer(const KafkaProperties& kafka, std::string changelog_topic, state::StateDb& db);
  ~ChangelogRestorer();

  // Starts the thread; an error message when the consumer cannot be created.
  [[nodiscard]] std::optional<std::string> start();
  void stop();

  void enqueue(int32_t partition);
  // Stops restoring `partition` (revoked): it is dropped from the queue, or abandoned soon.
  void cancel(int32_t partition);
  [[nodiscard]] std::vector<RestoreResult> takeCompleted();
  // 0..1 for a queued or running restore; nothing for a partition not being restored.
  [[nodiscard]] std::optional<double> progress(int32_t partition) const;

 private:
  struct Job;
  void loop();
  void restore(std::vector<int32_t> partitions);
  void finish(Job& job, std::optional<std::string> error);
  [[nodiscard]] bool cancelled(int32_t partition) const;

  KafkaProperties kafka_;
  std::string topic_;
  state::StateDb& db_;
  KafkaHandle consumer_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<int32_t> queue_;
  std::vector<RestoreResult> completed_;
  std::map<int32_t, double> progress_;
  std::map<int32_t, bool> cancelled_;
};

}  // namespace fraud::service
