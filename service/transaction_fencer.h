#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "detectors/base/mutex.h"
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

// What the fencer asks of the cluster. KafkaFencingCluster is the Kafka edge; tests use fakes.
// Called on the fencer's thread only.
class FencingCluster {
 public:
  virtual ~FencingCluster() = default;
  // The instance id that committed each partition's input offset last (its commit metadata).
  [[nodiscard]] virtual base::Result<std::map<int32_t, std::string>> committers(
      const std::vector<int32_t>& partitions) = 0;
  // The group's current members.
  [[nodiscard]] virtual base::Result<std::vector<kafka::GroupMember>> members() = 0;
  // init_transactions under `transactional_id`: ok when the coordinator confirmed it.
  [[nodiscard]] virtual base::Status fence(const std::string& transactional_id) = 0;
  // Any thread: the call in progress and every later one end soon (within about
  // kafka::kStopPollMs), with an error. The fencer is being destroyed.
  virtual void cancel() {}
};

// FencingCluster over a client with the group's id (kafka::makeGroupAdminClient: reading the
// committed offsets needs one) and short-lived producers for the fences.
//
// A fence asks with up to `FencePatience::producers` producers in turn. While the coordinator
// aborts the departed owner's open transaction (a few milliseconds) it answers
// CONCURRENT_TRANSACTIONS, and librdkafka asks again only after a fixed 500 ms; a producer not
// confirmed within `first_wait_ms` is therefore dropped and a new one asks at once. The last
// waits for what is left of `timeout_ms`.
struct FencePatience {
  int first_wait_ms = 150;
  int producers = 4;
};

class KafkaFencingCluster final : public FencingCluster {
 public:
  // `admin` must outlive this object. `producer_properties` configure the fencing producers
  // (brokers, TLS, SASL).
  KafkaFencingCluster(rd_kafka_t* admin, kafka::KafkaProperties producer_properties,
                      std::string group_id, std::string input_topic, int timeout_ms,
                      FencePatience patience = {});
  [[nodiscard]] base::Result<std::map<int32_t, std::string>> committers(
      const std::vector<int32_t>& partitions) override;
  [[nodiscard]] base::Result<std::vector<kafka::GroupMember>> members() override;
  [[nodiscard]] base::Status fence(const std::string& transactional_id) override;
  void cancel() override { stop_.request_stop(); }

 private:
  rd_kafka_t* admin_;
  kafka::KafkaProperties producer_properties_;
  std::string group_id_;
  std::string input_topic_;
  int timeout_ms_;
  FencePatience patience_;
  std::stop_source stop_;
};

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
// group's membership is read after the assignment; a candidate still a member is left alone.
// The membership is read once more just before each fence, and a candidate that has joined
// since is left alone too: a process that restarted under its old id initialises its producer
// before it joins the group, and fencing it then would cost it a recovery.
//
// A member that was only paused (a long GC, a network partition) and has been removed from the
// group is fenced too: its next transactional call fails as fenced, and it rejoins the group
// with nothing reopened (StreamThread), taking only what the new assignment gives it.
//
// Thread-safety: fenceOwnersOf() from any thread (it returns at once; the work runs on the
// fencer's own thread); the destructor stops that thread, cancelling the cluster call in
// progress (FencingCluster::cancel()): a round can wait up to its timeout (30 s) on a coordinator
// that moved, and the process's stop must not wait for it.
class TransactionFencer {
 public:
  struct Options {
    std::string group_id;
    std::string input_topic;
    std::string self;  // this instance's id
  };
  // What became of one departed owner: fenced, the fence failed, or not fenced because it has
  // joined the group again since the first read.
  enum class Result { kFenced, kFailed, kRejoined };
  // Called on the fencer's thread for every departed owner found.
  using Observer = std::function<void(const std::string& instance_id, Result result)>;

  // `previous_owner` gives the owner map's last known owner of a partition (may be empty).
  TransactionFencer(Options options, std::unique_ptr<FencingCluster> cluster,
                    std::function<std::optional<std::string>(int32_t)> previous_owner,
                    Observer observer);
  ~TransactionFencer();
  TransactionFencer(const TransactionFencer&) = delete;
  TransactionFencer& operator=(const TransactionFencer&) = delete;

  // Fences the departed previous owners of these newly assigned partitions, in the background.
  void fenceOwnersOf(const std::vector<int32_t>& partitions) FRAUD_EXCLUDES(mu_);
  // Every fencing asked for so far is done (tests).
  void waitIdle() FRAUD_EXCLUDES(mu_);

 private:
  void loop() FRAUD_EXCLUDES(mu_);
  void fenceRound(const std::vector<int32_t>& partitions);
  // The fence of one departed owner, after a last look at the membership.
  [[nodiscard]] Result fenceIfStillAbsent(const std::string& instance_id);

  Options options_;
  std::unique_ptr<FencingCluster> cluster_;
  std::function<std::optional<std::string>(int32_t)> previous_owner_;
  Observer observer_;

  base::Mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;
  bool busy_ FRAUD_GUARDED_BY(mu_) = false;
  std::deque<int32_t> queue_ FRAUD_GUARDED_BY(mu_);
  std::thread thread_;  // started last
};

}  // namespace fraud::service
