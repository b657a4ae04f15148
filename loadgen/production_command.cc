#include "loadgen/production_command.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/partitioner.h"
#include "loadgen/report.h"
#include "service/cli/detector_flags.h"
#include "service/kafka/wall_clock.h"

namespace fraud::loadgen {
namespace {

using fraud::cli::addDetectorFlags;

std::atomic<bool> g_stop{false};

void onSignal(int /*signal*/) { g_stop = true; }

void installSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool reportDirectoryExists(const std::string& path) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() || std::filesystem::is_directory(parent, ec);
}

void addRunFlags(CLI::App& app, ProductionFlags& f) {
  auto& run = f.run;
  app.add_option("--brokers", run.brokers,
                 "Kafka bootstrap servers HOST:PORT[,...]; without it, only files are written")
      ->envname("FRAUD_BROKERS");
  app.add_option("--topic", run.topic, "Topic to produce to")->capture_default_str();
  app.add_option("--rate", f.rate_text,
                 "Target records per second, or 'max' for as fast as possible (the model clock "
                 "then runs at 20000/s)")
      ->capture_default_str();
  app.add_option("--duration", f.duration_text,
                 "How long to produce: seconds, or with a unit (90s, 5m, 1h). Without --brokers: "
                 "that much model time of records");
  app.add_option("--count", run.count,
                 "How many records to produce (the first of --duration "
                 "and --count to be reached ends the run)");
  app.add_option("--seed", run.traffic.seed, "Seed of the traffic model")->capture_default_str();
  app.add_option("--start-time", f.start_time,
                 "Model clock (epoch ms) of the first record; default now. With --seed it makes a "
                 "run byte-for-byte repeatable");
  app.add_option("--truth", run.truth_path,
                 "Write the injected scenarios that must alert here (JSONL, by card_ref)");
  app.add_option("--output", run.output_dir,
                 "Write DIR/partition-<n>.jsonl: each partition's records in partition order (the "
                 "input of `fraud-detector replay` for that partition)");
  app.add_option("--output-single", run.output_single,
                 "Write every record to this JSONL file, in production order");
  app.add_option("--partitions", run.partitions,
                 "Partition count without a broker (default 12); with one, checked against the "
                 "topic");
  app.add_option("--partitioner", f.partitioner_text,
                 "How keys map to partitions: crc32 (librdkafka's default) or murmur2 (Java's)")
      ->capture_default_str();
  app.add_option("--card-hash-key-file", f.key_file,
                 "File holding the card-hash key (less one trailing newline); wins over "
                 "FRAUD_CARD_HASH_KEY. Needed for --truth and latency");
}

void addTrafficModelFlags(CLI::App& app, ProductionFlags& f) {
  auto& traffic = f.run.traffic;
  app.add_option("--cards", traffic.cards, "Card population")->capture_default_str();
  app.add_option("--fraud-rate", traffic.fraud_rate,
                 "Injected fraud scenarios per second of model time")
      ->capture_default_str();
  app.add_option("--escalation-fraction", traffic.escalation_fraction,
                 "Share of scenarios going on to 1 or 2 more countries")
      ->capture_default_str();
  app.add_option("--travel-fraction", traffic.travel_fraction,
                 "Share of cards abroad at any time (ordinary travel, never alerting)")
      ->capture_default_str();
  app.add_option("--max-lateness", f.max_lateness_text,
                 "Longest lateness of ordinary records: milliseconds, or with a unit (2m)")
      ->capture_default_str();
  app.add_option("--late-tail-fraction", traffic.late_tail_fraction,
                 "Share of records more than 1 s late (a long tail up to --max-lateness)")
      ->capture_default_str();
  app.add_option("--lateness-model", f.lateness_model,
                 "classic: most records under a second, a Pareto tail of --late-tail-fraction. "
                 "mixture: on time, a log-normal body (--late-body-*), stragglers "
                 "(--straggler-fraction) up to --max-lateness")
      ->check(CLI::IsMember({"classic", "mixture"}))
      ->capture_default_str();
  app.add_option("--late-body-fraction", f.mixture.body_fraction,
                 "mixture: share of records in the log-normal body")
      ->capture_default_str();
  app.add_option("--late-body-median-ms", f.mixture.body_median_ms,
                 "mixture: median lateness of the body (ms)")
      ->capture_default_str();
  app.add_option("--late-body-sigma", f.mixture.body_sigma,
                 "mixture: sigma of the body's underlying normal (0..3)")
      ->capture_default_str();
  app.add_option("--straggler-fraction", f.mixture.straggler_fraction,
                 "mixture: share of stragglers, Pareto from 1 s up to --max-lateness")
      ->capture_default_str();
  app.add_option("--beyond-grace-fraction", traffic.beyond_grace_fraction,
                 "Share of records stamped further back than the grace (late-dropped)")
      ->capture_default_str();
  app.add_option("--duplicate-fraction", traffic.duplicate_fraction,
                 "Share of records that re-send a recent record byte for byte")
      ->capture_default_str();
  app.add_option("--malformed-fraction", traffic.malformed_fraction,
                 "Share of invalid records (invalid JSON, a missing or an invalid field)")
      ->capture_default_str();
  app.add_option("--rfc3339-fraction", traffic.rfc3339_fraction,
                 "Share of records with an RFC 3339 event_time")
      ->capture_default_str();
  addDetectorFlags(app, traffic.detector);
}

void addMeasurementFlags(CLI::App& app, ProductionFlags& f) {
  auto& run = f.run;
  app.add_option("--max-future-skew-ms", run.max_future_skew_ms,
                 "The service's future_event_time skew (to expect its rejections)")
      ->capture_default_str();
  app.add_option("--alerts-topic", run.alerts_topic, "Alerts topic watched for latency")
      ->capture_default_str();
  app.add_flag("--no-latency", f.no_latency,
               "Do not measure end-to-end latency (it runs the detector on every record)");
  app.add_option("--latency-wait", run.latency_wait_s,
                 "Seconds to wait for trailing alerts (and, with --service-metrics, for the "
                 "service to count the records) after production")
      ->capture_default_str();
  app.add_option("--lag-group", run.lag_group,
                 "Sample this consumer group's lag on --topic every second (the service's group: "
                 "fraud-detector); reported in the progress line and the summary");
  app.add_option("--service-metrics", run.service_metrics,
                 "The service's /metrics URL, http://HOST:PORT/metrics (the probe port; "
                 "repeatable, one per instance): read before and after the run, so the summary "
                 "and the report set the share the service dropped as too late beside the share "
                 "stamped beyond --grace-ms");
  app.add_flag("--no-progress", f.no_progress, "No progress line on stderr");
  app.add_option("--report", f.report_path,
                 "Write a self-contained HTML report of the run to this file: achieved rate, "
                 "consumer lag and latency over time, the latency distribution, the lateness "
                 "against the grace, the injected scenarios, the parameters (`fraud-loadgen "
                 "report` adds verify's verdict)");
  addKafkaFlags(app, f.kafka);
}

// Turns the flags' texts into f.run; every problem found, none when the run may start.
std::vector<std::string> resolveProductionFlags(ProductionFlags& f) {
  auto& run = f.run;
  auto& traffic = run.traffic;
  std::vector<std::string> problems;
  if (f.rate_text == "max") {
    run.rate.reset();
  } else if (const auto rate = parseNumber(f.rate_text); rate && *rate > 0) {
    run.rate = *rate;
  } else {
    problems.push_back("--rate must be a positive number or 'max', not '" + f.rate_text + "'");
  }
  traffic.model_rate = run.rate.value_or(20'000);
  if (f.duration_text) {
    if (const auto ms = parseDurationMs(*f.duration_text, 1000)) {
      run.duration_s = *ms / 1000;
    } else {
      problems.emplace_back("--duration must be seconds or a number with a unit (90s, 5m, 1h)");
    }
  }
  if (const auto ms = parseDurationMs(f.max_lateness_text, 1)) {
    traffic.max_lateness_ms = static_cast<int64_t>(*ms);
  } else {
    problems.emplace_back("--max-lateness must be milliseconds or a number with a unit (2m)");
  }
  if (f.lateness_model == "mixture") {
    traffic.mixture = f.mixture;
    traffic.mixture->max_ms = traffic.max_lateness_ms;
  }
  traffic.start_time = f.start_time.value_or(kafka::wallClockMs());
  if (const auto partitioner = detectors::parsePartitioner(f.partitioner_text)) {
    run.partitioner = *partitioner;
  } else {
    problems.emplace_back("--partitioner must be crc32 or murmur2");
  }
  run.progress = !f.no_progress;
  run.measure_latency = !f.no_latency;
  parseKafkaProperties(f.kafka, run.kafka_properties, problems);
  if (f.report_path && !reportDirectoryExists(*f.report_path)) {
    problems.push_back("--report " + *f.report_path + ": its directory does not exist");
  }
  return problems;
}

}  // namespace

void addProductionFlags(CLI::App& app, ProductionFlags& flags) {
  addRunFlags(app, flags);
  addTrafficModelFlags(app, flags);
  addMeasurementFlags(app, flags);
}

int runProductionCommand(ProductionFlags& f) {
  std::vector<std::string> problems = resolveProductionFlags(f);
  const auto key = loadKey(f.key_file, /*required=*/false, problems);
  for (auto& problem : f.run.validate(key.has_value())) problems.push_back(std::move(problem));
  if (!problems.empty()) return reportProblems("fraud-loadgen", problems);

  std::optional<detectors::CardHasher> hasher;
  if (key) hasher.emplace(key->bytes);
  installSignalHandlers();
  RunSeries series;
  if (f.report_path) f.run.series = &series;
  const int status = runProduction(f.run, hasher ? &*hasher : nullptr, g_stop);
  if (!f.report_path || series.summary.is_null()) return status;
  if (const auto written = writeRunReport(*f.report_path, f.run, series); !written.ok()) {
    std::fprintf(stderr, "fraud-loadgen: report: %s\n", written.message().c_str());
    return status == 0 ? 1 : status;
  }
  std::fprintf(stderr, "fraud-loadgen: report written to %s\n", f.report_path->c_str());
  return status;
}

}  // namespace fraud::loadgen
