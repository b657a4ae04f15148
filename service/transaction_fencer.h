#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"

namespace fraud::service {

// The transactional id of an instance of a group: `<group>-<instance id>`. Two processes with
// one instance id fence each other; a process that starts again under its own id aborts the
// transaction its predecessor left open (init_transactions).
[[nodiscard]] std::string transactionalIdOf(const std::string& group_id,
                                            const std::string& instance_id);

// Which of a partition's possible previous owners (instance ids) have left the group and may be
// fenced: every candidate that is neither `self` nor a current member. A member is known by its
// group.instance.id when it has one, else by its client.id (the service sets it to the instance
// id). Never a live member: fencing one would end it.
[[nodiscard]] std::vector<std::string> departedOwners(
    const std::set<std::string>& candidates, const std::vector<kafka::GroupMember>& members,
    const std::string& self);

// Aborts at once the transaction that a departed owner of newly assigned partitions left open
// (EOS "fencing", as Flink's Kafka sink does on recovery and Kafka Streams' eos-alpha per task):
// a short-lived producer with the departed owner's transactional id calls init_transactions,
// which makes the coordinator abort that id's open transaction and bump its epoch.
//
// Without it, a dead owner killed in the middle of a commit leaves the changelog's last stable
// offset and the input's committed offset pinned until the broker times the transaction out
// (transaction.timeout.ms): the new owner's restore waits for it, and the partition stays dark.
//
// Who owned a partition comes from two places: the metadata of its committed input offset (every
// commit writes its instance id there) and the owner map of the last group description. The
// group's membership is read again after the assignment; a candidate still a member is left
// alone. A member that was only paused (a long GC, a network partition) and has been removed
// from the group is fenced too: its next transactional call fails as fenced and it exits 1.
//
// Thread-safety: fenceOwnersOf() from any thread (it returns at once; the work runs on the
// fencer's own thread); the destructor stops that thread.
class TransactionFencer {
 public:
  struct Options {
    std::string group_id;
    std::string input_topic;
    std::string self;  // this instance's id
    int timeout_ms = 30'000;
  };
  // Called on the fencer's thread for every fencing attempt: the instance id and whether the
  // coordinator confirmed it.
  using Observer = std::function<void(const std::string& instance_id, bool fenced)>;

  // `admin` (any client handle, for DescribeConsumerGroups and ListConsumerGroupOffsets) must
  // outlive this object. `producer_properties` configure the fencing producers (brokers, TLS,
  // SASL). `previous_owner` gives the owner map's last known owner of a partition.
  TransactionFencer(Options options, rd_kafka_t* admin, kafka::KafkaProperties producer_properties,
                    std::function<std::optional<std::string>(int32_t)> previous_owner,
                    Observer observer);
  ~TransactionFencer();
  TransactionFencer(const TransactionFencer&) = delete;
  TransactionFencer& operator=(const TransactionFencer&) = delete;

  // Fences the departed previous owners of these newly assigned partitions, in the background.
  void fenceOwnersOf(const std::vector<int32_t>& partitions);
  // Every fencing asked for so far is done (tests).
  void waitIdle();

 private:
  void loop();
  void fenceRound(const std::vector<int32_t>& partitions);
  [[nodiscard]] bool fence(const std::string& instance_id);

  Options options_;
  rd_kafka_t* admin_;
  kafka::KafkaProperties producer_properties_;
  std::function<std::optional<std::string>(int32_t)> previous_owner_;
  Observer observer_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool stopping_ = false;
  bool busy_ = false;
  std::deque<int32_t> queue_;
  std::thread thread_;  // started last
};

}  // namespace fraud::service
