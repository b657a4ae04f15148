#pragma once

// The fixture of poison_kill_loop_test.cc: two `fraud-detector run` instances, the input in
// slices with poison records, a SIGKILL after each slice, and the checks of the alerts and
// dead-letter topics at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/service/live_service_fixture.h"
#include "tests/support/raw_producer.h"

namespace fraud::testing {

using Clock = std::chrono::steady_clock;

// Kafka's default message.max.bytes (broker) and max.message.bytes (topic): the largest record
// batch a topic accepts.
inline constexpr int kBrokerMaxMessageBytes = 1'048'588;
// librdkafka's default message.max.bytes, which `fraud-detector run` keeps unless --kafka sets
// it: the largest record (key + value + headers + framing) its producer sends.
inline constexpr size_t kServiceProducerMaxBytes = 1'000'000;
// The two oversized values: the one of issue 9 (just over the service producer's limit), and
// one just under what the broker takes (its batch framing included).
inline constexpr size_t kOversizedSmall = 1'000'100;
inline constexpr size_t kOversizedLarge = kBrokerMaxMessageBytes - 1024;

struct Produced {
  std::string key;
  std::optional<std::string> value;
  std::string kind;  // "valid", "malformed" (the stream's own) or the poison's name
  bool rejected = false;
};

struct KillLoopPlan {
  int slices = 6;
  int records_per_slice = 6'000;
  int broker_restart_after_slice = -1;  // -1: none
  std::chrono::seconds budget{300};     // the whole run
};

// The last `count` lines of `text`.
std::string tail(const std::string& text, size_t count);

class PoisonKillLoopTest : public LiveServiceTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The records of slice number `slice`: valid transactions with the poison records at random
  // places.
  std::vector<Produced> sliceRecords(const std::vector<TestRecord>& stream, size_t begin,
                                     size_t end, int slice);

  void produceSlice(const std::vector<Produced>& records);
  void start(const std::string& name);
  std::string url(const std::string& name, const std::string& path) const;

  // Fails the test (not fatally) if the instance exited on its own, and starts it again.
  void expectRunning(const std::string& name);
  void killAndRestart(const std::string& name);

  // Polls `condition` until it holds, `timeout` passes or the run's budget is spent.
  bool waitFor(const std::function<bool()>& condition, std::chrono::seconds timeout);
  std::string describe();

  // Whether every input partition's committed offset has reached its end offset; keeps both.
  bool caughtUp();

  // Runs scripts/kafka on the test command's broker; returns its exit status and output.
  std::pair<int, std::string> kafkaScript(const std::vector<std::string>& args);
  // Two instances through `plan`'s slices, one killed after each; then every check below.
  void runKillLoop(const KillLoopPlan& plan);
  // Produces slice number `slice` of `stream`, its second half once the first is being
  // committed. False (a failure added) when nothing was committed in time.
  bool runSlice(const KillLoopPlan& plan, const std::vector<TestRecord>& stream, int slice,
                int kills);
  void restartBroker(int slice);
  // Every partition committed to its end and both instances ready; `stalled`: a slice was not
  // committed, so the waits are short.
  void expectCaughtUpAndReady(bool stalled, int kills);

  // `replay` of each input partition (null and empty values become blank lines, which replay
  // skips: docs/rule.md §1). Also checks that replay rejects exactly the records this test calls
  // rejected, so the dead-letter expectations below are the contract's.
  AlertSet replayEachPartition();
  void expectAlertsEqualReplay();

  // `every_slice`: all slices were produced, so each kind of poison reached every partition.
  void expectEachRejectedRecordDeadLetteredOnce(bool every_slice);

  std::unique_ptr<RawProducer> raw_;
  std::vector<std::vector<Produced>> produced_;   // per input partition, in offset order
  std::map<std::string, ChildProcess*> current_;  // the running process of each instance
  std::map<std::string, uint16_t> ports_;
  Clock::time_point deadline_;
  std::vector<int64_t> last_ends_, last_committed_;  // as caughtUp() last saw them
  std::string kafka_dir_;
};

}  // namespace fraud::testing
