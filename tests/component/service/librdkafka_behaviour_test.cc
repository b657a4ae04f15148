// The librdkafka bugs the code works around, probed on the library the test runs with
// (librdkafka's in-process mock cluster, no broker): each probe expects the bug, so a library
// upgrade that fixes it fails the probe and names the workaround that can go. Run on Debian 12's
// librdkafka 2.0.2 (scripts/test) and Debian 13's 2.8.0 (the image's test stage, scripts/image).
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/kafka/producer.h"
#include "tests/component/service/input_mock_cluster.h"

namespace fraud::kafka {
namespace {

using MockCluster = testing::InputMockCluster;

// Exit statuses of the coordinator-move probe's child process.
constexpr int kAnswered = 0;
constexpr int kFailed = 2;

// In a child process: commits an offset with metadata for group "g", makes the next two
// OffsetFetch requests answer NOT_COORDINATOR, then reads the metadata back through a
// producer-type client (no consumer group). Exits kAnswered when the metadata came back,
// kFailed on an error; librdkafka 2.0.2 and 2.8.0 take the process down instead.
[[noreturn]] void readOffsetsThroughAProducerAcrossACoordinatorMove() {
  constexpr int16_t kApiOffsetFetch = 9;
  MockCluster mock(2);
  if (!mock.commitWithMetadata("g", 1, 42, "instance-a").ok()) std::_Exit(kFailed);
  rd_kafka_mock_push_request_errors(mock.cluster(), kApiOffsetFetch, 2,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                    RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
  auto producer = makeKafkaClient(RD_KAFKA_PRODUCER,
                                  {{"bootstrap.servers", mock.bootstrap()}, {"log_level", "2"}});
  if (!producer) std::_Exit(kFailed);
  const auto owners = committedOffsetMetadata(producer->get(), "g", "input", {0, 1}, 10'000);
  const bool answered = owners.ok() && *owners == std::map<int32_t, std::string>{{1, "instance-a"}};
  std::_Exit(answered ? kAnswered : kFailed);
}

// librdkafka answers NOT_COORDINATOR to ListConsumerGroupOffsets' OffsetFetch by asking the
// client's own consumer group to look the coordinator up again; a producer has none, and its
// main thread dereferences a null one (rd_kafka_handle_OffsetFetch): the process dies, in 2.0.2
// and 2.8.0 alike. The workaround: makeGroupAdminClient(), a consumer-type client that never
// joins (kafka_client_test.cc reads the same offsets through it).
TEST(LibrdkafkaBehaviour, OffsetFetchThroughAProducerAcrossACoordinatorMoveCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A crash: a signal, or a sanitizer's report and exit status 1.
  const auto crashed = [](int status) {
    return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 1);
  };
  EXPECT_EXIT(readOffsetsThroughAProducerAcrossACoordinatorMove(), crashed, "")
      << "librdkafka " << rd_kafka_version_str()
      << " no longer crashes here: makeGroupAdminClient() can make a producer-type client on it";
}

}  // namespace
}  // namespace fraud::kafka
