#include "loadgen/production.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/alert_watcher.h"
#include "loadgen/lag_sampler.h"
#include "loadgen/latency_tracker.h"
#include "loadgen/pacing.h"
#include "loadgen/record_files.h"
#include "loadgen/topic_detector.h"
#include "loadgen/truth_file.h"
#include "service/kafka/admin.h"
#include "service/kafka/producer.h"

namespace fraud::loadgen {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::ordered_json;

constexpr int32_t kDefaultPartitions = 12;
constexpr int kMetadataTimeoutMs = 10'000;
constexpr uint64_t kUnpacedBurst = 4096;
// The pacer sleeps at most this long between bursts: short against the 10-second span the rate
// must hold over, long enough not to wake the producer threads for every few records.
constexpr auto kMaxSleep = std::chrono::milliseconds(5);
constexpr auto kFlushLimit = std::chrono::seconds(300);

// Delivery reports, counted on the thread that polls the producer (this one).
struct Deliveries {
  uint64_t acked = 0;
  uint64_t failed = 0;
  std::map<std::string, uint64_t> failures;  // by librdkafka error name
};

void onDelivery(rd_kafka_t* /*producer*/, const rd_kafka_message_t* message, void* opaque) {
  auto& deliveries = *static_cast<Deliveries*>(opaque);
  if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++deliveries.acked;
  } else {
    ++deliveries.failed;
    ++deliveries.failures[rd_kafka_err2name(message->err)];
  }
}

int64_t wallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t monotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time (user + system) this process has used, in seconds.
double cpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

kafka::KafkaProperties producerProperties(const ProductionOptions& o) {
  kafka::KafkaProperties properties = {
      {"bootstrap.servers", o.brokers},
      {"client.id", "fraud-loadgen"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "5"},
      {"batch.num.messages", "10000"},
      {"batch.size", "1000000"},
      {"compression.type", "lz4"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
  };
  for (const auto& [key, value] : o.kafka_properties) properties[key] = value;
  return properties;
}

kafka::KafkaProperties consumerProperties(const ProductionOptions& o) {
  kafka::KafkaProperties properties = {{"bootstrap.servers", o.brokers},
                                       {"client.id", "fraud-loadgen-alerts"}};
  for (const auto& [key, value] : o.kafka_properties) properties[key] = value;
  return properties;
}

kafka::KafkaHandle makeProducer(const ProductionOptions& o, Deliveries& deliveries,
                                std::string& error) {
  auto conf = kafka::makeKafkaConf(producerProperties(o), error);
  if (!conf) {
    error = "Kafka producer configuration: " + error;
    return nullptr;
  }
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &onDelivery);
  rd_kafka_conf_set_opaque(conf.get(), &deliveries);
  auto producer = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(conf), error);
  if (!producer) error = "cannot create the Kafka producer: " + error;
  return producer;
}

// A one-line report on stderr at most once a second.
class ProgressLine {
 public:
  ProgressLine(bool enabled, Clock::time_point start)
      : enabled_(enabled), start_(start), last_(start) {}

  void maybePrint(Clock::time_point now, uint64_t sent, const Deliveries& deliveries,
                  rd_kafka_t* producer, std::optional<int64_t> lag) {
    if (!enabled_ || now - last_ < std::chrono::seconds(1)) return;
    const double rate = static_cast<double>(sent - last_sent_) / seconds(now - last_);
    last_ = now;
    last_sent_ = sent;
    if (producer == nullptr) {
      std::fprintf(stderr, "fraud-loadgen: %.0f s, %llu records written (%.0f/s)\n",
                   seconds(now - start_), static_cast<unsigned long long>(sent), rate);
      return;
    }
    const std::string lag_text = lag ? ", lag " + std::to_string(*lag) : std::string();
    std::fprintf(stderr,
                 "fraud-loadgen: %.0f s, %llu sent (%.0f/s), %llu acked, %llu errors, "
                 "queue %d%s\n",
                 seconds(now - start_), static_cast<unsigned long long>(sent), rate,
                 static_cast<unsigned long long>(deliveries.acked),
                 static_cast<unsigned long long>(deliveries.failed), rd_kafka_outq_len(producer),
                 lag_text.c_str());
  }

 private:
  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_;
  uint64_t last_sent_ = 0;
};

std::vector<std::string> sortedCountries(const FraudScenario& scenario) {
  std::vector<detectors::Country> distinct = scenario.sent_countries;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<std::string> names;
  for (const auto& c : distinct) names.emplace_back(c.view());
  return names;
}

// Writes the scenarios that SPEC guarantees an alert to the truth file.
class TruthWriter {
 public:
  TruthWriter(const ProductionOptions& options, const detectors::CardHasher* hasher,
              int32_t partitions)
      : options_(options), hasher_(hasher), partitions_(partitions) {}

  [[nodiscard]] bool open(std::string& error) {
    return options_.truth_path.empty() || file_.open(options_.truth_path, error);
  }
  [[nodiscard]] bool add(const FraudScenario& scenario, std::string& error) {
    ++injected_;
    if (!scenario.mustAlert(options_.traffic.detector)) return true;
    ++guaranteed_;
    if (options_.truth_path.empty()) return true;
    TruthScenario truth;
    truth.scenario = scenario.id;
    truth.card_ref = hasher_->hash(scenario.card).hex();
    truth.partition = detectors::partitionFor(options_.partitioner, scenario.card, partitions_);
    truth.countries = sortedCountries(scenario);
    truth.event_times = scenario.event_times;
    truth.tx_ids = scenario.tx_ids;
    return file_.appendLine(truthLine(truth), error);
  }
  [[nodiscard]] bool close(std::string& error) { return file_.close(error); }
  [[nodiscard]] uint64_t injected() const { return injected_; }
  [[nodiscard]] uint64_t guaranteed() const { return guaranteed_; }

 private:
  const ProductionOptions& options_;
  const detectors::CardHasher* hasher_;
  int32_t partitions_;
  BufferedFile file_;
  uint64_t injected_ = 0;
  uint64_t guaranteed_ = 0;
};

ordered_json latencyJson(const LatencyTracker::Summary& s) {
  ordered_json out;
  out["expected_alerts"] = s.expected;
  out["matched"] = s.matched;
  out["unexpected_arrivals"] = s.unexpected;
  out["repeated_arrivals"] = s.repeated;
  const auto ms = [](const std::optional<double>& v) {
    return v ? ordered_json(*v) : ordered_json();
  };
  out["p50_ms"] = ms(s.p50_ms);
  out["p95_ms"] = ms(s.p95_ms);
  out["p99_ms"] = ms(s.p99_ms);
  out["max_ms"] = ms(s.max_ms);
  return out;
}

}  // namespace

std::vector<std::string> ProductionOptions::validate(bool have_key) const {
  std::vector<std::string> problems = traffic.validate();
  if (rate && !(*rate > 0)) problems.push_back("--rate must be > 0 or 'max'");
  if (duration_s && !(*duration_s > 0)) problems.push_back("--duration must be > 0");
  if (brokers.empty() && output_dir.empty() && output_single.empty()) {
    problems.push_back("nothing to do: give --brokers, --output or --output-single");
  }
  if (brokers.empty() && !count && !duration_s) {
    problems.push_back("without --brokers, give --count or --duration");
  }
  if (partitions && (*partitions < 1 || *partitions > 100'000)) {
    problems.push_back("--partitions must lie in 1..100000");
  }
  if (!truth_path.empty() && !have_key) {
    problems.push_back(
        "--truth names cards by card_ref: give --card-hash-key-file or FRAUD_CARD_HASH_KEY");
  }
  if (latency_wait_s < 0) problems.push_back("--latency-wait must be >= 0");
  if (max_future_skew_ms < 0) problems.push_back("--max-future-skew-ms must be >= 0");
  return problems;
}

int runProduction(const ProductionOptions& o, const detectors::CardHasher* hasher,
                  const std::atomic<bool>& stop) {
  std::string error;
  const auto fail = [&](int status) {
    std::fprintf(stderr, "fraud-loadgen: %s\n", error.c_str());
    return status;
  };

  Deliveries deliveries;
  kafka::KafkaHandle producer;
  rd_kafka_topic_t* topic = nullptr;
  int32_t partitions = o.partitions.value_or(kDefaultPartitions);
  if (!o.brokers.empty()) {
    producer = makeProducer(o, deliveries, error);
    if (!producer) return fail(2);
    const auto count =
        kafka::topicPartitionCount(producer.get(), o.topic, kMetadataTimeoutMs, error);
    if (!count) return fail(2);
    if (o.partitions && *o.partitions != *count) {
      error = "--partitions " + std::to_string(*o.partitions) + " but topic " + o.topic + " has " +
              std::to_string(*count);
      return fail(2);
    }
    partitions = *count;
    topic = rd_kafka_topic_new(producer.get(), o.topic.c_str(), nullptr);
  }
  // Destroyed before the producer (declared after it).
  const kafka::TopicHandle topic_guard(topic);

  RecordFiles files;
  if (!files.open(o.output_dir, o.output_single, partitions, error)) return fail(2);
  TruthWriter truth(o, hasher, partitions);
  if (!truth.open(error)) return fail(2);

  LatencyTracker tracker;
  AlertWatcher watcher(tracker);
  std::unique_ptr<TopicDetector> mirror;
  std::string latency_note;
  if (producer && o.measure_latency) {
    if (hasher == nullptr) {
      latency_note = "not measured: no card-hash key";
    } else if (std::string watch_error;
               !watcher.start(consumerProperties(o), o.alerts_topic, watch_error)) {
      latency_note = "not measured: " + watch_error;
    } else {
      mirror = std::make_unique<TopicDetector>(partitions, o.traffic.detector, *hasher,
                                               o.max_future_skew_ms);
    }
  } else if (producer) {
    latency_note = "not measured: --no-latency";
  }
  if (!latency_note.empty() && o.progress) {
    std::fprintf(stderr, "fraud-loadgen: latency %s\n", latency_note.c_str());
  }

  LagSampler lag;
  if (producer && !o.lag_group.empty() &&
      !lag.start(consumerProperties(o), o.lag_group, o.topic, partitions, error)) {
    return fail(2);
  }

  const bool paced = producer && o.rate.has_value();
  uint64_t limit = UINT64_MAX;
  if (o.count) {
    limit = *o.count;
  } else if (!producer && o.duration_s) {
    limit = static_cast<uint64_t>(*o.duration_s * o.traffic.model_rate);
  }
  const Pacer pacer(o.rate.value_or(1));
  RateHistory history;
  TrafficModel model(o.traffic);
  GeneratedRecord record;
  std::array<uint64_t, kRecordKindCount> kinds{};
  uint64_t sent = 0;
  uint64_t queue_full_waits = 0;
  std::optional<detectors::EventTime> first_event_time;
  detectors::EventTime last_clock = o.traffic.start_time;
  bool io_failed = false;

  const auto t0 = Clock::now();
  const Clock::time_point deadline = producer && o.duration_s
                                         ? t0 + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(*o.duration_s))
                                         : Clock::time_point::max();
  ProgressLine progress(o.progress, t0);

  while (sent < limit && !stop && !io_failed) {
    auto now = Clock::now();
    if (now >= deadline) break;
    const uint64_t burst_end =
        paced ? std::min(limit, pacer.dueBy(now - t0)) : std::min(limit, sent + kUnpacedBurst);
    const uint64_t burst_start = sent;
    while (sent < burst_end && !io_failed) {
      model.next(record);
      ++kinds[static_cast<size_t>(record.kind)];
      if (!first_event_time) first_event_time = record.event_time;
      last_clock = record.sent_at;
      const int32_t partition = detectors::partitionFor(o.partitioner, record.key, partitions);
      if (!files.append(partition, record.value, error)) io_failed = true;
      if (producer) {
        const int64_t timestamp = wallClockMs();
        if (mirror) {
          const auto outcome = mirror->process(partition, record.value, timestamp);
          if (outcome.alert_key) tracker.expect(outcome.alert_key->idempotency_key, monotonicNs());
        }
        while (true) {
          const rd_kafka_resp_err_t err =
              kafka::produce(producer.get(), topic, partition, record.key, record.value, timestamp);
          if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
          if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            ++deliveries.failed;
            ++deliveries.failures[rd_kafka_err2name(err)];
            break;
          }
          ++queue_full_waits;
          rd_kafka_poll(producer.get(), 5);
        }
      }
      ++sent;
      for (const auto& scenario : model.takeCompletedScenarios()) {
        if (!truth.add(scenario, error)) io_failed = true;
      }
    }
    history.add(now - t0, sent - burst_start);
    if (producer) rd_kafka_poll(producer.get(), 0);
    now = Clock::now();
    progress.maybePrint(now, sent, deliveries, producer.get(), lag.latest());
    if (paced && sent < limit) {
      const auto next_due = t0 + pacer.dueAt(sent);
      if (next_due > now) std::this_thread::sleep_until(std::min(next_due, now + kMaxSleep));
    }
  }
  const auto production_elapsed = Clock::now() - t0;
  const std::optional<int64_t> lag_at_production_end = lag.latest();

  for (const auto& scenario : model.takeOpenScenarios()) {
    if (!truth.add(scenario, error)) io_failed = true;
  }
  if (!files.close(error) || !truth.close(error)) io_failed = true;
  if (io_failed) std::fprintf(stderr, "fraud-loadgen: %s\n", error.c_str());

  if (producer) {
    const auto flush_start = Clock::now();
    while (rd_kafka_outq_len(producer.get()) > 0 && Clock::now() - flush_start < kFlushLimit) {
      rd_kafka_flush(producer.get(), 1000);
      progress.maybePrint(Clock::now(), sent, deliveries, producer.get(), lag.latest());
    }
  }
  const auto acked_elapsed = Clock::now() - t0;
  const double cpu = cpuSeconds();
  if (mirror) {
    const auto wait_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o.latency_wait_s));
    while (!tracker.allArrived() && Clock::now() < wait_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    watcher.stop();
  }
  lag.stop();

  ordered_json summary;
  summary["records"] = sent;
  ordered_json by_kind;
  for (size_t k = 0; k < kRecordKindCount; ++k) {
    by_kind[std::string(recordKindName(static_cast<RecordKind>(k)))] = kinds[k];
  }
  summary["kinds"] = by_kind;
  summary["scenarios"] = {{"injected", truth.injected()},
                          {"must_alert", truth.guaranteed()},
                          {"skipped_no_free_card", model.scenariosSkipped()}};
  summary["partitions"] = partitions;
  summary["partitioner"] = std::string(detectors::partitionerName(o.partitioner));
  summary["seed"] = o.traffic.seed;
  summary["model_clock"] = {{"start", o.traffic.start_time},
                            {"end", last_clock},
                            {"first_event_time", first_event_time.value_or(0)}};
  const double elapsed = seconds(production_elapsed);
  summary["elapsed_s"] = elapsed;
  summary["cpu_s"] = cpu;
  if (producer) {
    summary["topic"] = o.topic;
    summary["target_rate"] = o.rate ? ordered_json(*o.rate) : ordered_json("max");
    summary["achieved_rate"] = elapsed > 0 ? static_cast<double>(sent) / elapsed : 0.0;
    const auto complete = static_cast<size_t>(elapsed);
    const auto deviation =
        o.rate ? history.maxDeviation(*o.rate, 10, complete) : std::optional<double>();
    summary["rate_max_deviation_10s"] = deviation ? ordered_json(*deviation) : ordered_json();
    summary["acked"] = deliveries.acked;
    summary["errors"] = deliveries.failed;
    summary["error_reasons"] = deliveries.failures;
    summary["acked_rate"] = static_cast<double>(deliveries.acked) / seconds(acked_elapsed);
    summary["queue_full_waits"] = queue_full_waits;
    summary["latency"] = mirror ? latencyJson(tracker.summary()) : ordered_json(latency_note);
    if (!o.lag_group.empty()) {
      const auto l = lag.summary();
      summary["consumer_lag"] = {{"group", o.lag_group}, {"samples", l.samples}, {"max", l.max},
                                 {"p50", l.p50},         {"p99", l.p99},         {"last", l.last}};
      summary["consumer_lag"]["at_production_end"] =
          lag_at_production_end ? ordered_json(*lag_at_production_end) : ordered_json();
    }
    if (mirror) summary["latency"]["alerts_consumer_errors"] = watcher.consumeErrors();
  } else {
    summary["generation_rate"] = elapsed > 0 ? static_cast<double>(sent) / elapsed : 0.0;
  }
  std::printf("%s\n", summary.dump(2).c_str());
  std::fflush(stdout);
  if (o.series != nullptr) {
    o.series->start_ns = std::chrono::nanoseconds(t0.time_since_epoch()).count();
    o.series->production_s = elapsed;
    o.series->sent_per_second = history.perSecond();
    o.series->lag = lag.timedSamples();
    if (mirror) o.series->latencies = tracker.samples();
    o.series->summary = std::move(summary);
  }

  const bool all_delivered = !producer || (deliveries.failed == 0 && deliveries.acked == sent);
  return io_failed || !all_delivered ? 1 : 0;
}

}  // namespace fraud::loadgen
