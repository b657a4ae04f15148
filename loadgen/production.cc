#include "loadgen/production.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/alert_watcher.h"
#include "loadgen/kafka_clients.h"
#include "loadgen/lag_sampler.h"
#include "loadgen/latency_tracker.h"
#include "loadgen/pacing.h"
#include "loadgen/progress_line.h"
#include "loadgen/record_files.h"
#include "loadgen/run_series.h"
#include "loadgen/run_summary.h"
#include "loadgen/service_metrics.h"
#include "loadgen/topic_detector.h"
#include "loadgen/truth_writer.h"
#include "service/kafka/admin.h"
#include "service/kafka/producer.h"
#include "service/kafka/wall_clock.h"

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

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time (user + system) this process has used, in seconds.
double cpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
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
  if (!service_metrics.empty() && brokers.empty()) {
    problems.emplace_back("--service-metrics needs --brokers (the service reads the topic)");
  }
  for (const auto& url : service_metrics) {
    if (const auto parsed = parseHttpUrl(url); !parsed) {
      problems.push_back("--service-metrics " + parsed.message());
    }
  }
  return problems;
}

namespace {

// One production run, step by step: connect, open the outputs, start measuring, produce the
// records (paced or not), drain, then the summary. Lives on the calling thread; the alert
// watcher and the lag sampler run threads of their own.
class ProductionRun {
 public:
  ProductionRun(const ProductionOptions& o, const detectors::CardHasher* hasher)
      : o_(o),
        hasher_(hasher),
        partitions_(o.partitions.value_or(kDefaultPartitions)),
        watcher_(tracker_),
        pacer_(o.rate.value_or(1)),
        model_(o.traffic),
        last_clock_(o.traffic.start_time) {}

  // Every step before production; an error on a setup error.
  [[nodiscard]] base::Status setUp() {
    if (!o_.brokers.empty()) {
      if (auto e = connect(); !e.ok()) return e;
    }
    if (auto e = files_.open(o_.output_dir, o_.output_single, partitions_); !e.ok()) return e;
    truth_.emplace(o_.truth_path, o_.traffic.detector, o_.partitioner, partitions_, hasher_);
    if (auto e = truth_->open(); !e.ok()) return e;
    startLatencyMeasurement();
    if (producer_ && !o_.service_metrics.empty()) {
      service_.emplace(o_.service_metrics);
      if (auto e = service_->start(); !e.ok()) return e.withPrefix("--service-metrics ");
    }
    if (producer_ == nullptr || o_.lag_group.empty()) return {};
    return lag_.start(consumers(), o_.lag_group, o_.topic, partitions_);
  }

  void produce(const std::atomic<bool>& stop);
  void drain();
  [[nodiscard]] ordered_json summary() const;
  void fillSeries(ordered_json summary) const;

  [[nodiscard]] int exitStatus() const {
    const bool all_delivered =
        !producer_ || (deliveries_.failed == 0 && deliveries_.acked == sent_);
    return io_failed_ || !all_delivered ? 1 : 0;
  }

 private:
  // The producer and the topic's partition count from the broker.
  [[nodiscard]] base::Status connect() {
    auto producer = makeProducer(producerProperties(o_.brokers, o_.kafka_properties), deliveries_);
    if (!producer) return producer.status();
    producer_ = std::move(*producer);
    const auto count = kafka::topicPartitionCount(producer_.get(), o_.topic, kMetadataTimeoutMs);
    if (!count) return count.status();
    if (o_.partitions && *o_.partitions != *count) {
      return base::Status::failed("--partitions " + std::to_string(*o_.partitions) + " but topic " +
                                  o_.topic + " has " + std::to_string(*count));
    }
    partitions_ = *count;
    topic_ = kafka::TopicHandle(rd_kafka_topic_new(producer_.get(), o_.topic.c_str(), nullptr));
    return {};
  }

  // The alerts watcher and the offline engine that says which record triggers which alert;
  // without them, the reason in latency_note_.
  void startLatencyMeasurement() {
    if (producer_ && o_.measure_latency) {
      if (hasher_ == nullptr) {
        latency_note_ = "not measured: no card-hash key";
      } else if (const auto watching = watcher_.start(consumers(), o_.alerts_topic);
                 !watching.ok()) {
        latency_note_ = "not measured: " + watching.message();
      } else {
        mirror_ = std::make_unique<TopicDetector>(partitions_, o_.traffic.detector, *hasher_,
                                                  o_.max_future_skew_ms);
      }
    } else if (producer_) {
      latency_note_ = "not measured: --no-latency";
    }
    if (!latency_note_.empty() && o_.progress) {
      std::fprintf(stderr, "fraud-loadgen: latency %s\n", latency_note_.c_str());
    }
  }

  [[nodiscard]] kafka::KafkaProperties consumers() const {
    return consumerProperties(o_.brokers, o_.kafka_properties);
  }

  // How many records the run may produce at most (a count, or a file-only duration).
  [[nodiscard]] uint64_t recordLimit() const {
    if (o_.count) return *o_.count;
    if (!producer_ && o_.duration_s) {
      return static_cast<uint64_t>(*o_.duration_s * o_.traffic.model_rate);
    }
    return UINT64_MAX;
  }

  // Counts an I/O error (the last one is reported); whether `result` is ok.
  bool ioResult(const base::Status& result) {
    if (result.ok()) return true;
    io_error_ = result.message();
    io_failed_ = true;
    return false;
  }
  void produceOne(const GeneratedRecord& record);
  void sendToKafka(int32_t partition, const GeneratedRecord& record);

  const ProductionOptions& o_;
  const detectors::CardHasher* hasher_;
  std::string io_error_;  // the last I/O error
  Deliveries deliveries_;
  kafka::KafkaHandle producer_;
  kafka::TopicHandle topic_;  // declared after the producer: destroyed before it
  int32_t partitions_;
  RecordFiles files_;
  std::optional<TruthWriter> truth_;  // once the partition count is known
  LatencyTracker tracker_;
  AlertWatcher watcher_;
  std::unique_ptr<TopicDetector> mirror_;
  std::string latency_note_;
  LagSampler lag_;
  std::optional<ServiceTally> service_;  // with --service-metrics
  const Pacer pacer_;
  RateHistory history_;
  TrafficModel model_;
  std::array<uint64_t, kRecordKindCount> kinds_{};
  uint64_t sent_ = 0;
  uint64_t queue_full_waits_ = 0;
  std::optional<detectors::EventTime> first_event_time_;
  detectors::EventTime last_clock_;
  bool io_failed_ = false;
  Clock::time_point t0_;
  std::optional<ProgressLine> progress_;  // from the start of production
  Clock::duration production_elapsed_{};
  Clock::duration acked_elapsed_{};
  std::optional<int64_t> lag_at_production_end_;
  double cpu_s_ = 0;
};

void ProductionRun::produce(const std::atomic<bool>& stop) {
  const bool paced = producer_ && o_.rate.has_value();
  const uint64_t limit = recordLimit();
  GeneratedRecord record;
  t0_ = Clock::now();
  const Clock::time_point deadline = producer_ && o_.duration_s
                                         ? t0_ + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(*o_.duration_s))
                                         : Clock::time_point::max();
  progress_.emplace(o_.progress, t0_);
  while (sent_ < limit && !stop && !io_failed_) {
    auto now = Clock::now();
    if (now >= deadline) break;
    const uint64_t burst_end =
        paced ? std::min(limit, pacer_.dueBy(now - t0_)) : std::min(limit, sent_ + kUnpacedBurst);
    const uint64_t burst_start = sent_;
    while (sent_ < burst_end && !io_failed_) {
      model_.next(record);
      produceOne(record);
    }
    history_.add(now - t0_, sent_ - burst_start);
    if (producer_) rd_kafka_poll(producer_.get(), 0);
    now = Clock::now();
    progress_->maybePrint(now, sent_, deliveries_, producer_.get(), lag_.latest());
    if (paced && sent_ < limit) {
      const auto next_due = t0_ + pacer_.dueAt(sent_);
      if (next_due > now) std::this_thread::sleep_until(std::min(next_due, now + kMaxSleep));
    }
  }
  production_elapsed_ = Clock::now() - t0_;
  lag_at_production_end_ = lag_.latest();
}

void ProductionRun::produceOne(const GeneratedRecord& record) {
  ++kinds_[static_cast<size_t>(record.kind)];
  if (!first_event_time_) first_event_time_ = record.event_time;
  last_clock_ = record.sent_at;
  const int32_t partition = detectors::partitionFor(o_.partitioner, record.key, partitions_);
  ioResult(files_.append(partition, record.value));
  if (producer_) sendToKafka(partition, record);
  ++sent_;
  for (const auto& scenario : model_.takeCompletedScenarios()) {
    ioResult(truth_->add(scenario));
  }
}

void ProductionRun::sendToKafka(int32_t partition, const GeneratedRecord& record) {
  const int64_t timestamp = kafka::wallClockMs();
  if (mirror_) {
    const auto outcome = mirror_->process(partition, record.value, timestamp);
    if (outcome.alert_key) tracker_.expect(outcome.alert_key->idempotency_key, steadyClockNs());
  }
  while (true) {
    const rd_kafka_resp_err_t err = kafka::produce(producer_.get(), topic_.get(), partition,
                                                   record.key, record.value, timestamp);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      deliveries_.fail(rd_kafka_err2name(err));
      return;
    }
    ++queue_full_waits_;
    rd_kafka_poll(producer_.get(), 5);
  }
}

// Closes the files and the truth file, waits for the broker's acknowledgements, for the
// trailing alerts and for the service to count the records, and stops the measuring threads.
void ProductionRun::drain() {
  for (const auto& scenario : model_.takeOpenScenarios()) {
    ioResult(truth_->add(scenario));
  }
  // The truth file is closed only when the record files closed (as before).
  if (ioResult(files_.close())) ioResult(truth_->close());
  if (io_failed_) std::fprintf(stderr, "fraud-loadgen: %s\n", io_error_.c_str());

  if (producer_) {
    const auto flush_start = Clock::now();
    while (rd_kafka_outq_len(producer_.get()) > 0 && Clock::now() - flush_start < kFlushLimit) {
      rd_kafka_flush(producer_.get(), 1000);
      progress_->maybePrint(Clock::now(), sent_, deliveries_, producer_.get(), lag_.latest());
    }
  }
  acked_elapsed_ = Clock::now() - t0_;
  cpu_s_ = cpuSeconds();
  if (mirror_) {
    const auto wait_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o_.latency_wait_s));
    while (!tracker_.allArrived() && Clock::now() < wait_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    watcher_.stop();
  }
  if (service_) service_->finish(deliveries_.acked, o_.latency_wait_s);
  lag_.stop();
}

ordered_json ProductionRun::summary() const {
  ordered_json summary;
  summary["records"] = sent_;
  ordered_json by_kind;
  for (size_t k = 0; k < kRecordKindCount; ++k) {
    by_kind[std::string(recordKindName(static_cast<RecordKind>(k)))] = kinds_[k];
  }
  summary["kinds"] = by_kind;
  summary["scenarios"] = {{"injected", truth_->injected()},
                          {"must_alert", truth_->guaranteed()},
                          {"skipped_no_free_card", model_.scenariosSkipped()}};
  summary["partitions"] = partitions_;
  summary["partitioner"] = std::string(detectors::partitionerName(o_.partitioner));
  summary["seed"] = o_.traffic.seed;
  // The lateness generated (model clock minus event time of every valid record): the truth for
  // the service's lateness figures (GET /v1/lateness).
  summary["lateness"] =
      latenessJson(model_.latenessTruth(), o_.traffic.mixture ? "mixture" : "classic");
  if (service_) summary["lateness"]["service"] = service_->summary();
  summary["model_clock"] = {{"start", o_.traffic.start_time},
                            {"end", last_clock_},
                            {"first_event_time", first_event_time_.value_or(0)}};
  const double elapsed = seconds(production_elapsed_);
  summary["elapsed_s"] = elapsed;
  summary["cpu_s"] = cpu_s_;
  if (!producer_) {
    summary["generation_rate"] = elapsed > 0 ? static_cast<double>(sent_) / elapsed : 0.0;
    return summary;
  }
  summary["topic"] = o_.topic;
  summary["target_rate"] = o_.rate ? ordered_json(*o_.rate) : ordered_json("max");
  summary["achieved_rate"] = elapsed > 0 ? static_cast<double>(sent_) / elapsed : 0.0;
  const auto complete = static_cast<size_t>(elapsed);
  const auto deviation =
      o_.rate ? history_.maxDeviation(*o_.rate, 10, complete) : std::optional<double>();
  summary["rate_max_deviation_10s"] = deviation ? ordered_json(*deviation) : ordered_json();
  summary["acked"] = deliveries_.acked;
  summary["errors"] = deliveries_.failed;
  summary["error_reasons"] = deliveries_.failures;
  summary["acked_rate"] = static_cast<double>(deliveries_.acked) / seconds(acked_elapsed_);
  summary["queue_full_waits"] = queue_full_waits_;
  summary["latency"] = mirror_ ? latencyJson(tracker_.summary()) : ordered_json(latency_note_);
  if (!o_.lag_group.empty()) {
    summary["consumer_lag"] = lagJson(o_.lag_group, lag_.summary(), lag_at_production_end_);
  }
  if (mirror_) summary["latency"]["alerts_consumer_errors"] = watcher_.consumeErrors();
  return summary;
}

void ProductionRun::fillSeries(ordered_json summary) const {
  if (o_.series == nullptr) return;
  o_.series->start_ns = std::chrono::nanoseconds(t0_.time_since_epoch()).count();
  o_.series->production_s = seconds(production_elapsed_);
  o_.series->sent_per_second = history_.perSecond();
  o_.series->lag = lag_.timedSamples();
  if (mirror_) o_.series->latencies = tracker_.samples();
  o_.series->lateness = model_.latenessTruth();
  o_.series->summary = std::move(summary);
}

}  // namespace

int runProduction(const ProductionOptions& o, const detectors::CardHasher* hasher,
                  const std::atomic<bool>& stop) {
  ProductionRun run(o, hasher);
  if (const auto set_up = run.setUp(); !set_up.ok()) {
    std::fprintf(stderr, "fraud-loadgen: %s\n", set_up.message().c_str());
    return 2;
  }
  run.produce(stop);
  run.drain();
  auto summary = run.summary();
  std::printf("%s\n", summary.dump(2).c_str());
  std::fflush(stdout);
  run.fillSeries(std::move(summary));
  return run.exitStatus();
}

}  // namespace fraud::loadgen
