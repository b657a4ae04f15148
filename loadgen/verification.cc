#include "loadgen/verification.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "detectors/record_headers.h"
#include "loadgen/audit.h"
#include "loadgen/topic_detector.h"
#include "loadgen/truth_file.h"
#include "service/kafka/admin.h"
#include "service/kafka/reader.h"

namespace fraud::loadgen {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::ordered_json;
namespace headers = detectors::headers;

constexpr int kTimeoutMs = 10'000;

kafka::KafkaProperties clientProperties(const VerifyOptions& o, const std::string& group) {
  kafka::KafkaProperties properties = {{"bootstrap.servers", o.brokers},
                                       {"client.id", "fraud-loadgen-verify"}};
  if (!group.empty()) properties["group.id"] = group;
  for (const auto& [key, value] : o.kafka_properties) properties[key] = value;
  return properties;
}

// The input read: where each partition's first and last records are.
struct InputScan {
  std::vector<int64_t> data_start;  // per partition: offset of the first record read, or -1
  std::vector<int64_t> data_end;    // per partition: offset after the last record read
};

// Waits until the group has committed, on every partition, an offset at or past its last
// record. Returns the report's "group" object; an error when the group cannot be read.
base::Result<ordered_json> waitForGroup(const VerifyOptions& o,
                                        const std::vector<int64_t>& data_end) {
  ordered_json out;
  out["id"] = o.group;
  if (o.wait_seconds <= 0) {
    out["caught_up"] = nullptr;
    return out;
  }
  auto made = kafka::makeReader(clientProperties(o, o.group), /*read_committed=*/true);
  if (!made) return made.status();
  const kafka::KafkaHandle client = std::move(*made);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.wait_seconds));
  std::vector<int64_t> committed;
  bool caught_up = false;
  while (true) {
    // A failed query is asked again until the deadline.
    const auto offsets = kafka::committedOffsets(client.get(), o.topic,
                                                 static_cast<int32_t>(data_end.size()), kTimeoutMs);
    if (offsets) {
      committed = *offsets;
      caught_up = true;
      for (size_t p = 0; p < data_end.size(); ++p) {
        if (data_end[p] > 0 && committed[p] < data_end[p]) caught_up = false;
      }
    }
    if (caught_up || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  out["caught_up"] = caught_up;
  out["waited_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t lag = 0;
  for (size_t p = 0; p < data_end.size() && p < committed.size(); ++p) {
    lag += std::max<int64_t>(0, data_end[p] - std::max<int64_t>(0, committed[p]));
  }
  out["lag"] = committed.empty() ? ordered_json() : ordered_json(lag);
  return out;
}

// Reads a topic that may not exist (no alerts, no rejections yet): a missing topic reads as
// empty and is noted in `notes`.
base::Status readOptionalTopic(rd_kafka_t* consumer, const std::string& topic, double stall_seconds,
                               const std::function<void(const rd_kafka_message_t&)>& visit,
                               ordered_json& notes) {
  const auto partitions = kafka::topicPartitionCount(consumer, topic, kTimeoutMs);
  if (!partitions) {
    notes.push_back(partitions.message() + " (read as empty)");
    return {};
  }
  const auto ends = kafka::highWatermarks(consumer, topic, *partitions, kTimeoutMs);
  if (!ends) return ends.status();
  return kafka::readToEnd(consumer, topic, *ends, visit, static_cast<int>(stall_seconds * 1000));
}

}  // namespace

std::vector<std::string> VerifyOptions::validate() const {
  std::vector<std::string> problems = detector.validate();
  if (brokers.empty()) problems.push_back("--brokers is required");
  if (topic.empty() || alerts_topic.empty() || dlq_topic.empty()) {
    problems.push_back("topic names must not be empty");
  }
  if (max_future_skew_ms < 0) problems.push_back("--max-future-skew-ms must be >= 0");
  if (wait_seconds < 0) problems.push_back("--wait-seconds must be >= 0");
  if (!(stall_seconds > 0)) problems.push_back("--stall-seconds must be > 0");
  if (alert_delivery != "transactional" && alert_delivery != "immediate") {
    problems.push_back("--alert-delivery must be 'transactional' or 'immediate'");
  }
  return problems;
}

namespace {

// Reads the input topic to `input_end` through the offline engine, telling `audit` what the
// service must have written.
base::Result<InputScan> readInput(rd_kafka_t* consumer, const VerifyOptions& o,
                                  const std::vector<int64_t>& input_end, TopicDetector& engine,
                                  Audit& audit) {
  InputScan scan{std::vector<int64_t>(input_end.size(), -1),
                 std::vector<int64_t>(input_end.size(), 0)};
  const auto read = kafka::readToEnd(
      consumer, o.topic, input_end,
      [&](const rd_kafka_message_t& m) {
        // A record without a timestamp is not checked for future_event_time, as in the service.
        const auto outcome =
            engine.process(m.partition, kafka::payloadOf(&m), kafka::timestampOf(&m));
        if (outcome.rejected) audit.expectRejection(m.partition, m.offset, *outcome.rejected);
        if (outcome.alert_key) audit.expectAlert(*outcome.alert_key, outcome.alert_json);
        scan.data_end[static_cast<size_t>(m.partition)] = m.offset + 1;
        auto& start = scan.data_start[static_cast<size_t>(m.partition)];
        if (start < 0) start = m.offset;
      },
      static_cast<int>(o.stall_seconds * 1000));
  if (!read.ok()) return read;
  return scan;
}

// Retention deleted the start of a partition: the engine cannot replay what the service saw,
// so dead letters and alerts caused by those records show up as unexpected.
void noteDeletedStarts(const std::vector<int64_t>& data_start, ordered_json& notes) {
  for (size_t p = 0; p < data_start.size(); ++p) {
    if (data_start[p] > 0) {
      notes.push_back("input partition " + std::to_string(p) + " starts at offset " +
                      std::to_string(data_start[p]) +
                      ": earlier records were deleted, so they cannot be audited");
    }
  }
}

// Reads the alerts and dead-letter topics into `audit`.
base::Status readOutputs(rd_kafka_t* consumer, const VerifyOptions& o, Audit& audit,
                         ordered_json& notes) {
  base::Status alerts_read = readOptionalTopic(
      consumer, o.alerts_topic, o.stall_seconds,
      [&](const rd_kafka_message_t& m) {
        audit.observeAlert(ObservedAlert{m.partition, m.offset, std::string(kafka::keyOf(&m)),
                                         kafka::headerValue(&m, headers::kIdempotencyKey),
                                         std::string(kafka::payloadOf(&m))});
      },
      notes);
  if (!alerts_read.ok()) return alerts_read;
  return readOptionalTopic(
      consumer, o.dlq_topic, o.stall_seconds,
      [&](const rd_kafka_message_t& m) {
        audit.observeRejection(
            ObservedRejection{m.partition, m.offset, kafka::headerValue(&m, headers::kRejectReason),
                              kafka::headerValue(&m, headers::kSourceTopic),
                              kafka::headerValue(&m, headers::kSourcePartition),
                              kafka::headerValue(&m, headers::kSourceOffset)},
            o.topic);
      },
      notes);
}

}  // namespace

int runVerify(const VerifyOptions& o, const detectors::CardHasher& hasher) {
  std::string error;
  const auto fail = [&]() {
    std::fprintf(stderr, "fraud-loadgen verify: %s\n", error.c_str());
    return 2;
  };
  Audit audit;
  audit.allowExactAlertRepeats(o.alert_delivery == "immediate");
  if (!o.truth_path.empty()) {
    auto truth = readTruthFile(o.truth_path);
    if (!truth) {
      error = truth.message();
      return fail();
    }
    audit.setTruth(std::move(*truth));
  }

  auto made = kafka::makeReader(clientProperties(o, ""), /*read_committed=*/true);
  if (!made) {
    error = made.message();
    return fail();
  }
  const kafka::KafkaHandle consumer = std::move(*made);
  const auto partitions = kafka::topicPartitionCount(consumer.get(), o.topic, kTimeoutMs);
  if (!partitions) {
    error = partitions.message();
    return fail();
  }
  const auto input_end = kafka::highWatermarks(consumer.get(), o.topic, *partitions, kTimeoutMs);
  if (!input_end) {
    error = input_end.message();
    return fail();
  }

  TopicDetector engine(*partitions, o.detector, hasher, o.max_future_skew_ms);
  const auto scan = readInput(consumer.get(), o, *input_end, engine, audit);
  if (!scan) {
    error = scan.message();
    return fail();
  }
  const auto group = waitForGroup(o, scan->data_end);
  if (!group) {
    error = group.message();
    return fail();
  }
  ordered_json notes = ordered_json::array();
  noteDeletedStarts(scan->data_start, notes);
  if (auto read = readOutputs(consumer.get(), o, audit, notes); !read.ok()) {
    error = read.message();
    return fail();
  }

  ordered_json report = audit.report(o.list_limit);
  ordered_json out;
  out["verdict"] = report["verdict"];
  out["input"] = {{"topic", o.topic},
                  {"partitions", *partitions},
                  {"offline_engine", ordered_json::parse(engine.counts().summaryJson())}};
  out["group"] = *group;
  out["alert_delivery"] = o.alert_delivery;
  out["alerts"] = report["alerts"];
  out["dlq"] = report["dlq"];
  if (report.contains("truth")) out["truth"] = report["truth"];
  if (!notes.empty()) out["notes"] = notes;
  std::printf("%s\n", out.dump(2).c_str());
  std::fflush(stdout);
  return audit.passed() ? 0 : 1;
}

}  // namespace fraud::loadgen
