// fraud-loadgen: the load generator (no subcommand) and the end-to-end verifier (`verify`).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "detectors/card_ref.h"
#include "detectors/partitioner.h"
#include "loadgen/production.h"
#include "loadgen/report.h"
#include "loadgen/verification.h"
#include "service/cli/detector_flags.h"
#include "service/cli/logging.h"
#include "service/cli/suggestions.h"
#include "service/kafka/properties.h"
#include "service/kafka/secret.h"
#include "service/kafka/wall_clock.h"

namespace {

using fraud::cli::addDetectorFlags;
namespace loadgen = fraud::loadgen;

std::atomic<bool> g_stop{false};

void onSignal(int /*signal*/) { g_stop = true; }

void installSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// The whole text as a number; nothing otherwise.
std::optional<double> parseNumber(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// "120000", "250ms", "30s", "2m", "1h": a duration in milliseconds; a bare number is in
// `bare_unit_ms` units. Nothing for anything else.
std::optional<double> parseDurationMs(const std::string& text, double bare_unit_ms) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data() || value < 0) return std::nullopt;
  const std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  if (unit.empty()) return value * bare_unit_ms;
  if (unit == "ms") return value;
  if (unit == "s") return value * 1e3;
  if (unit == "m") return value * 60e3;
  if (unit == "h") return value * 3600e3;
  return std::nullopt;
}

// The librdkafka properties given by --kafka-config (a file, so SASL secrets can be mounted)
// and the --kafka flags, which win.
struct KafkaFlags {
  std::optional<std::string> config_file;
  std::vector<std::string> properties;
};

void addKafkaFlags(CLI::App& cmd, KafkaFlags& flags) {
  cmd.add_option(
         "--kafka-config", flags.config_file,
         "A properties file of librdkafka settings (e.g. SASL/TLS): key=value or key: value "
         "lines, # and ! comments (Java properties syntax)")
      ->envname("FRAUD_KAFKA_CONFIG");
  cmd.add_option("--kafka", flags.properties,
                 "A librdkafka property KEY=VALUE for every client (repeatable; TLS, SASL, "
                 "tuning; wins over --kafka-config)");
}

bool parseKafkaProperties(const KafkaFlags& flags, fraud::kafka::KafkaProperties& out,
                          std::vector<std::string>& problems) {
  const size_t before = problems.size();
  if (flags.config_file) {
    auto file = fraud::kafka::readPropertiesFile(*flags.config_file);
    for (auto& problem : file.problems) problems.push_back("--kafka-config: " + problem);
    out = std::move(file.properties);
  }
  for (const auto& text : flags.properties) {
    const auto property = fraud::kafka::parseProperty(text);
    if (!property) {
      problems.push_back("--kafka expects KEY=VALUE, not '" + text + "'");
      continue;
    }
    out[property->first] = property->second;
  }
  return problems.size() == before;
}

// Loads the key; a given but unusable source is a problem, an absent one only when `required`.
std::optional<fraud::kafka::Secret> loadKey(const std::optional<std::string>& key_file,
                                            bool required, std::vector<std::string>& problems) {
  if (!required && fraud::kafka::cardHashKeyAbsent(key_file)) return std::nullopt;
  std::string error;
  auto key = fraud::kafka::loadCardHashKey(key_file, error);
  if (!key) problems.push_back(error);
  return key;
}

bool reportDirectoryExists(const std::string& path) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() || std::filesystem::is_directory(parent, ec);
}

int reportProblems(const char* prefix, const std::vector<std::string>& problems) {
  for (const auto& problem : problems) std::fprintf(stderr, "%s: %s\n", prefix, problem.c_str());
  return 2;
}

// What the production run's flags hold before they are checked: the texts that need parsing
// (a rate that may be 'max', durations with units) and the options they resolve to.
struct ProductionFlags {
  loadgen::ProductionOptions run;
  std::string rate_text = "20000";
  std::optional<std::string> duration_text;
  std::optional<int64_t> start_time;
  std::string max_lateness_text = "120000";
  std::string lateness_model = "classic";
  loadgen::LatenessMixture mixture;
  std::string partitioner_text = "crc32";
  std::optional<std::string> key_file;
  KafkaFlags kafka;
  bool no_progress = false;
  bool no_latency = false;
  std::optional<std::string> report_path;
};

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
                 "Seconds to wait for trailing alerts after production")
      ->capture_default_str();
  app.add_option("--lag-group", run.lag_group,
                 "Sample this consumer group's lag on --topic every second (the service's group: "
                 "fraud-detector); reported in the progress line and the summary");
  app.add_flag("--no-progress", f.no_progress, "No progress line on stderr");
  app.add_option("--report", f.report_path,
                 "Write a self-contained HTML report of the run to this file: achieved rate, "
                 "consumer lag and latency over time, the latency distribution, the injected "
                 "scenarios, the parameters (`fraud-loadgen report` adds verify's verdict)");
  addKafkaFlags(app, f.kafka);
}

struct VerifyFlags {
  loadgen::VerifyOptions verify;
  std::optional<std::string> key_file;
  KafkaFlags kafka;
};

CLI::App* addVerifyCommand(CLI::App& app, VerifyFlags& f) {
  auto& verify = f.verify;
  auto* cmd = app.add_subcommand(
      "verify",
      "Audit: run the detection engine offline over every partition of --topic (read_committed) "
      "and compare with --alerts-topic by idempotency key (every field but detected_at: "
      "missing, unexpected, differing, duplicated), check the rejected records are on "
      "--dlq-topic, and that every scenario of --truth was alerted. Prints a JSON report; exits "
      "0 on pass, 1 on any mismatch, 2 on a usage or connection error.");
  cmd->add_option("--brokers", verify.brokers, "Kafka bootstrap servers")->envname("FRAUD_BROKERS");
  cmd->add_option("--topic", verify.topic, "Input topic")->capture_default_str();
  cmd->add_option("--alerts-topic", verify.alerts_topic, "Alerts topic")->capture_default_str();
  cmd->add_option("--dlq-topic", verify.dlq_topic, "Dead-letter topic")->capture_default_str();
  cmd->add_option("--truth", verify.truth_path, "Truth file of `fraud-loadgen --truth`");
  cmd->add_option("--group", verify.group,
                  "The service's consumer group, whose commits say it has caught up")
      ->capture_default_str();
  cmd->add_option("--card-hash-key-file", f.key_file,
                  "File holding the card-hash key; wins over FRAUD_CARD_HASH_KEY");
  addDetectorFlags(*cmd, verify.detector);
  cmd->add_option("--max-future-skew-ms", verify.max_future_skew_ms,
                  "The service's future_event_time skew")
      ->capture_default_str();
  cmd->add_option("--wait-seconds", verify.wait_seconds,
                  "Wait this long for the group's committed offsets to reach the input's "
                  "last records; 0 skips the wait")
      ->capture_default_str();
  cmd->add_option("--stall-seconds", verify.stall_seconds,
                  "Fail a topic read that gets no record for this long short of its end")
      ->capture_default_str();
  cmd->add_option("--list-limit", verify.list_limit, "Entries per list in the report")
      ->capture_default_str();
  cmd->add_option("--alert-delivery", verify.alert_delivery,
                  "The service's --alert-delivery: transactional (each alert exactly once) or "
                  "immediate (an idempotency key may repeat, only as an exact repeat; the "
                  "report counts the repeats)")
      ->check(CLI::IsMember({"transactional", "immediate"}))
      ->capture_default_str();
  addKafkaFlags(*cmd, f.kafka);
  return cmd;
}

struct ReportFlags {
  std::string file;
  std::string verify;
};

CLI::App* addReportCommand(CLI::App& app, ReportFlags& f) {
  auto* cmd = app.add_subcommand(
      "report",
      "Add the verdict of `fraud-loadgen verify` to the HTML report of `fraud-loadgen --report` "
      "(or start a report holding only the verdict when FILE does not exist), and draw the page "
      "again. Refuses to overwrite a file that is not such a report. Exits 0 when written, 2 "
      "otherwise.");
  cmd->add_option("file", f.file, "The HTML report")->required();
  cmd->add_option("--verify", f.verify,
                  "verify's JSON report (its stdout) in a file, or - for stdin")
      ->required();
  return cmd;
}

int runReportCommand(const ReportFlags& f) {
  std::string error;
  if (!loadgen::addVerifyToReportFile(f.file, f.verify, error)) {
    return reportProblems("fraud-loadgen report", {error});
  }
  std::fprintf(stderr, "fraud-loadgen report: verdict added to %s\n", f.file.c_str());
  return 0;
}

int runVerifyCommand(VerifyFlags& f) {
  std::vector<std::string> problems = f.verify.validate();
  parseKafkaProperties(f.kafka, f.verify.kafka_properties, problems);
  const auto key = loadKey(f.key_file, /*required=*/true, problems);
  if (!problems.empty()) return reportProblems("fraud-loadgen verify", problems);
  const fraud::detectors::CardHasher hasher(key->bytes);
  return loadgen::runVerify(f.verify, hasher);
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
      problems.push_back("--duration must be seconds or a number with a unit (90s, 5m, 1h)");
    }
  }
  if (const auto ms = parseDurationMs(f.max_lateness_text, 1)) {
    traffic.max_lateness_ms = static_cast<int64_t>(*ms);
  } else {
    problems.push_back("--max-lateness must be milliseconds or a number with a unit (2m)");
  }
  if (f.lateness_model == "mixture") {
    traffic.mixture = f.mixture;
    traffic.mixture->max_ms = traffic.max_lateness_ms;
  }
  traffic.start_time = f.start_time.value_or(fraud::kafka::wallClockMs());
  if (const auto partitioner = fraud::detectors::parsePartitioner(f.partitioner_text)) {
    run.partitioner = *partitioner;
  } else {
    problems.push_back("--partitioner must be crc32 or murmur2");
  }
  run.progress = !f.no_progress;
  run.measure_latency = !f.no_latency;
  parseKafkaProperties(f.kafka, run.kafka_properties, problems);
  if (f.report_path && !reportDirectoryExists(*f.report_path)) {
    problems.push_back("--report " + *f.report_path + ": its directory does not exist");
  }
  return problems;
}

int runProductionCommand(ProductionFlags& f) {
  std::vector<std::string> problems = resolveProductionFlags(f);
  const auto key = loadKey(f.key_file, /*required=*/false, problems);
  for (auto& problem : f.run.validate(key.has_value())) problems.push_back(std::move(problem));
  if (!problems.empty()) return reportProblems("fraud-loadgen", problems);

  std::optional<fraud::detectors::CardHasher> hasher;
  if (key) hasher.emplace(key->bytes);
  installSignalHandlers();
  loadgen::RunSeries series;
  if (f.report_path) f.run.series = &series;
  const int status = loadgen::runProduction(f.run, hasher ? &*hasher : nullptr, g_stop);
  if (!f.report_path || series.summary.is_null()) return status;
  std::string error;
  if (!loadgen::writeRunReport(*f.report_path, f.run, series, error)) {
    std::fprintf(stderr, "fraud-loadgen: report: %s\n", error.c_str());
    return status == 0 ? 1 : status;
  }
  std::fprintf(stderr, "fraud-loadgen: report written to %s\n", f.report_path->c_str());
  return status;
}

int runCommandLine(int argc, char** argv) {
  CLI::App app{
      "fraud-loadgen: produces realistic card transactions (with injected fraud, late, duplicate "
      "and malformed records) to Kafka at a paced rate and/or to JSONL files, keyed by card with "
      "the partition assigned here; writes the ground truth of the injected fraud; measures "
      "end-to-end alert latency. `fraud-loadgen verify` audits a topic against the service's "
      "alerts and dead-letter topics. The card-hash key comes from --card-hash-key-file or "
      "FRAUD_CARD_HASH_KEY, never from the command line."};
  app.require_subcommand(0, 1);
  // librdkafka's own lines (a broker that cannot be reached, and the like) on stderr in the
  // service's log format (stdout carries the JSON summary).
  fraud::cli::configureLogging("fraud-loadgen", "text", "info");

  ProductionFlags production;
  addRunFlags(app, production);
  addTrafficModelFlags(app, production);
  addMeasurementFlags(app, production);
  VerifyFlags verify;
  auto* verify_cmd = addVerifyCommand(app, verify);
  ReportFlags report;
  auto* report_cmd = addReportCommand(app, report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fraud::cli::exitOnParseError(app, e, argc, argv);
  }
  if (*report_cmd) return runReportCommand(report);
  if (*verify_cmd) return runVerifyCommand(verify);
  return runProductionCommand(production);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return runCommandLine(argc, argv);
  } catch (const std::exception& e) {  // a bug or no memory: say so rather than abort
    std::fprintf(stderr, "fraud-loadgen: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "fraud-loadgen: an unknown exception\n");
    return 1;
  }
}
