#include "service/config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>

#include "service/cli/detector_flags.h"
#include "service/cli/flag_names.h"
#include "service/kafka/properties.h"

namespace fraud::service {
namespace {

bool validTopicName(const std::string& name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// StateDbOptions::validate() names the budgets in words; the command line names the flags.
std::string withStateFlagNames(std::string problem) {
  static constexpr std::array kNames = {
      cli::FlagName{"state dir", "--state-dir"},
      cli::FlagName{"rocksdb block cache", "--rocksdb-block-cache-mb"},
      cli::FlagName{"rocksdb write buffer", "--rocksdb-write-buffer-mb"},
      cli::FlagName{"state cache", "--state-cache-mb"}};
  return cli::withFlagNames(std::move(problem), kNames);
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "fraud-detector";
  return buf;
}

}  // namespace

void ServiceConfig::resolveDefaults() {
  if (changelog_topic.empty()) changelog_topic = group_id + ".state-changelog";
  if (instance_id.empty()) instance_id = hostName();
  if (!http_address) http_address = embedded_kafka ? "127.0.0.1" : "0.0.0.0";
  if (!probe_port && http_port >= 0 && http_port < 65535) {
    probe_port = http_port == 0 ? 0 : http_port + 1;
  }
}

std::vector<std::string> ServiceConfig::validate() const {
  std::vector<std::string> problems;
  validateKafka(problems);
  validateProcessing(problems);
  validateServer(problems);
  return problems;
}

// The cluster, topics, group and clients.
void ServiceConfig::validateKafka(std::vector<std::string>& problems) const {
  auto add = [&](std::string problem) { problems.push_back(std::move(problem)); };
  if (brokers.empty() && !embedded_kafka) {
    add("--brokers (FRAUD_BROKERS) is required; or --embedded-kafka, an in-process cluster to "
        "try the service on");
  }
  if (embedded_partitions < 1 || embedded_partitions > 1024) {
    add("--embedded-partitions must be 1..1024, got " + std::to_string(embedded_partitions));
  }
  for (const auto& [flag, topic] :
       {std::pair{"--input-topic", input_topic}, std::pair{"--alerts-topic", alerts_topic},
        std::pair{"--dlq-topic", dlq_topic}, std::pair{"--changelog-topic", changelog_topic}}) {
    if (!validTopicName(topic)) {
      add(std::string(flag) + " '" + topic +
          "' is not a Kafka topic name (1..249 of [a-zA-Z0-9._-])");
    }
  }
  if (input_topic == alerts_topic || input_topic == dlq_topic || alerts_topic == dlq_topic ||
      changelog_topic == input_topic || changelog_topic == alerts_topic ||
      changelog_topic == dlq_topic) {
    add("the input, alerts, dead-letter and changelog topics must all differ");
  }
  if (changelog_replication_factor == 0 || changelog_replication_factor < -1) {
    add("--changelog-replication-factor must be -1 or at least 1");
  }
  if (group_id.empty()) add("--group-id must not be empty");
  if (instance_id.empty()) add("--instance-id must not be empty");
  if (auto_offset_reset != "earliest" && auto_offset_reset != "latest") {
    add("--auto-offset-reset must be 'earliest' or 'latest', got '" + auto_offset_reset + "'");
  }
}

// State, the rule, commits and standbys.
void ServiceConfig::validateProcessing(std::vector<std::string>& problems) const {
  auto add = [&](std::string problem) { problems.push_back(std::move(problem)); };
  for (auto& problem : state.validate()) add(withStateFlagNames(std::move(problem)));
  // Here, with the other settings, so that a state dir the database cannot open stops the
  // service before it starts a broker or a listener.
  if (auto problem = state.checkDir(); !problem.ok()) add("--state-dir " + problem.message());
  for (auto& problem : cli::detectorProblems(detector)) add(problem);
  if (max_future_skew_ms < 0 || max_future_skew_ms > detectors::kMaxEventTime) {
    add("--max-future-skew-ms must be 0.." + std::to_string(detectors::kMaxEventTime));
  }
  if (commit_interval_ms < 10 || commit_interval_ms > 60'000) {
    add("--commit-interval-ms must be 10..60000, got " + std::to_string(commit_interval_ms));
  }
  if (checkpoint_interval_ms < 0 || checkpoint_interval_ms > 600'000) {
    add("--checkpoint-interval-ms must be 0..600000, got " +
        std::to_string(checkpoint_interval_ms));
  }
  if (max_held_output_mb < 1 || max_held_output_mb > 4096) {
    add("--max-held-output-mb must be 1..4096, got " + std::to_string(max_held_output_mb));
  }
  if (standby_replicas < 0 || standby_replicas > 16) {
    add("--standby-replicas must be 0..16, got " + std::to_string(standby_replicas));
  }
  if (standby_interval_ms < 100 || standby_interval_ms > 60'000) {
    add("--standby-interval-ms must be 100..60000, got " + std::to_string(standby_interval_ms));
  }
}

// Shutdown, the HTTP server, lateness, lookups, logging and the --kafka overrides.
void ServiceConfig::validateServer(std::vector<std::string>& problems) const {
  auto add = [&](std::string problem) { problems.push_back(std::move(problem)); };
  if (shutdown_timeout_ms < 1000 || shutdown_timeout_ms > 600'000) {
    add("--shutdown-timeout-ms must be 1000..600000, got " + std::to_string(shutdown_timeout_ms));
  }
  if (http_port < 0 || http_port > 65535) {
    add("--http-port must be 0..65535, got " + std::to_string(http_port));
  }
  if (!probe_port) {
    if (http_port == 65535) {  // else --http-port is out of range, reported above
      add("--probe-port: --http-port 65535 has no next port for the probes; give one");
    }
  } else if (*probe_port < -1 || *probe_port > 65535) {
    add("--probe-port must be -1..65535, got " + std::to_string(*probe_port));
  } else if (*probe_port > 0 && *probe_port == http_port) {
    add("--probe-port must differ from --http-port, both are " + std::to_string(http_port));
  }
  if (api_thread_nice < 0 || api_thread_nice > 19) {
    add("--api-thread-nice must be 0..19, got " + std::to_string(api_thread_nice));
  }
  if (ready_max_lag < 0) add("--ready-max-lag must be >= 0");
  if (lateness_interval_s < 60 || lateness_interval_s > 86'400 || lateness_interval_s % 60 != 0) {
    add("--lateness-interval-s must be whole minutes in 60..86400, got " +
        std::to_string(lateness_interval_s));
  }
  if (partitioner != "crc32" && partitioner != "murmur2") {
    add("--partitioner must be 'crc32' or 'murmur2', got '" + partitioner + "'");
  }
  if (!peer_url_template.empty() && peer_url_template.find("{member}") == std::string::npos) {
    add("--peer-url-template must contain {member}");
  }
  if (tls_cert_file.has_value() != tls_key_file.has_value()) {
    add("--tls-cert-file and --tls-key-file go together");
  }
  if (log_format != "text" && log_format != "json") {
    add("--log-format must be 'text' or 'json', got '" + log_format + "'");
  }
  static const std::vector<std::string> kLevels = {"trace", "debug",    "info", "warn",
                                                   "error", "critical", "off"};
  if (std::find(kLevels.begin(), kLevels.end(), log_level) == kLevels.end()) {
    add("--log-level must be one of trace, debug, info, warn, error, critical, off");
  }
  for (const auto& text : kafka_overrides) {
    if (!kafka::parseProperty(text)) add("--kafka expects KEY=VALUE, got '" + text + "'");
  }
}

kafka::KafkaProperties kafkaProperties(const ServiceConfig& config,
                                       std::vector<std::string>& problems) {
  kafka::KafkaProperties properties;
  if (config.kafka_config_file) {
    auto file = kafka::readPropertiesFile(*config.kafka_config_file);
    for (auto& problem : file.problems) problems.push_back("--kafka-config: " + problem);
    properties = std::move(file.properties);
  }
  for (const auto& text : config.kafka_overrides) {
    if (const auto kv = kafka::parseProperty(text)) properties[kv->first] = kv->second;
  }
  return properties;
}

namespace {

// Adds options and flags to a command, each with its FRAUD_* environment variable (the flag's
// name in capitals, dashes as underscores).
class EnvFlags {
 public:
  explicit EnvFlags(CLI::App& cmd) : cmd_(cmd) {}

  // The heading of `run --help` the options added from here on are listed under.
  void section(std::string title) { section_ = std::move(title); }
  template <typename T>
  CLI::Option* opt(const std::string& name, T& value, const std::string& help) {
    return cmd_.add_option(name, value, help)->envname(envName(name))->group(section_);
  }
  CLI::Option* flag(const std::string& name, bool& value, const std::string& help) {
    return cmd_.add_flag(name, value, help)->envname(envName(name))->group(section_);
  }
  // Gives an option added elsewhere its environment variable and the current section.
  void withEnv(const std::string& name) {
    cmd_.get_option(name)->envname(envName(name))->group(section_);
  }
  // An option added elsewhere that has no environment variable: the current section only.
  void inSection(const std::string& name) { cmd_.get_option(name)->group(section_); }
  CLI::App& command() { return cmd_; }

 private:
  static std::string envName(const std::string& name) {
    std::string env = "FRAUD_";
    for (char ch : name.substr(2)) {
      env.push_back(ch == '-' ? '_' : static_cast<char>(std::toupper(ch)));
    }
    return env;
  }

  CLI::App& cmd_;
  std::string section_ = "Options";
};

// The cluster, topics, group and clients.
void addKafkaFlags(EnvFlags& f, ServiceConfig& c) {
  f.section("Kafka: the cluster, topics and group");
  f.opt("--brokers", c.brokers, "Kafka bootstrap servers HOST:PORT[,...]");
  f.flag("--embedded-kafka", c.embedded_kafka,
         "Run against librdkafka's in-process mock cluster (prints bootstrap=HOST:PORT); the API "
         "and probes then listen on 127.0.0.1 unless --http-address is given");
  f.opt("--embedded-partitions", c.embedded_partitions, "Input partitions of the embedded cluster")
      ->capture_default_str();
  f.opt("--input-topic", c.input_topic, "Transactions topic, keyed by card")->capture_default_str();
  f.opt("--alerts-topic", c.alerts_topic, "Alerts topic")->capture_default_str();
  f.opt("--dlq-topic", c.dlq_topic, "Dead-letter topic for rejected records")
      ->capture_default_str();
  f.opt("--changelog-topic", c.changelog_topic,
        "Compacted state changelog topic (default <group-id>.state-changelog)");
  f.opt("--changelog-replication-factor", c.changelog_replication_factor,
        "Replication factor of the changelog topic when the service creates it (-1: broker "
        "default)")
      ->capture_default_str();
  f.opt("--group-id", c.group_id, "Consumer group")->capture_default_str();
  f.opt("--instance-id", c.instance_id,
        "Stable id of this instance: transactional id, static member id (default: host name)");
  f.flag("--static-membership", c.static_membership,
         "Join the group as a static member (group.instance.id = instance id)");
  f.opt("--auto-offset-reset", c.auto_offset_reset,
        "Where a group without committed offsets starts: earliest|latest")
      ->capture_default_str();
  f.command().add_option("--kafka", c.kafka_overrides,
                         "A librdkafka property KEY=VALUE for every client (repeatable; wins over "
                         "--kafka-config; no environment variable)");
  f.inSection("--kafka");
  f.opt("--kafka-config", c.kafka_config_file,
        "A properties file of librdkafka settings (e.g. SASL/TLS): key=value or key: value "
        "lines, # and ! comments (Java properties syntax)");
}

// State, the rule and its output.
void addProcessingFlags(EnvFlags& f, ServiceConfig& c) {
  f.section("State");
  f.opt("--state-dir", c.state.dir,
        "RocksDB state directory (created with its parents when missing; must be writable)")
      ->capture_default_str();
  f.opt("--state-cache-mb", c.state.card_cache_mb, "Decoded card states kept in memory (MiB)")
      ->capture_default_str();
  f.opt("--rocksdb-block-cache-mb", c.state.block_cache_mb, "Shared RocksDB block cache (MiB)")
      ->capture_default_str();
  f.opt("--rocksdb-write-buffer-mb", c.state.write_buffer_mb,
        "RocksDB write-buffer manager budget (MiB)")
      ->capture_default_str();
  f.section("The rule");
  f.opt("--card-hash-key-file", c.card_hash_key_file,
        "File holding the card-hash key (else FRAUD_CARD_HASH_KEY holds the key itself)");
  cli::addDetectorFlags(f.command(), c.detector);  // the rule's flags, worded as in `replay`
  for (const char* name : {"--window-ms", "--grace-ms", "--threshold", "--max-events"}) {
    f.withEnv(name);
  }
  f.opt("--max-future-skew-ms", c.max_future_skew_ms,
        "Reject event_time later than the record timestamp plus this (ms)")
      ->capture_default_str();
  f.section("Commits, output, standbys and the stop");
  f.opt("--commit-interval-ms", c.commit_interval_ms,
        "How often alerts, state changes and offsets commit in one transaction (ms)")
      ->capture_default_str();
  f.opt("--checkpoint-interval-ms", c.checkpoint_interval_ms,
        "How often committed state is also written to the local RocksDB (ms; 0: every commit). "
        "The changelog topic holds it meanwhile")
      ->capture_default_str();
  f.opt("--max-held-output-mb", c.max_held_output_mb,
        "Output (alerts, dead letters) held while a commit is in flight before input waits for "
        "the commit (MiB)")
      ->capture_default_str();
  f.opt("--alert-delivery", c.alert_delivery,
        "transactional: alerts commit with state and offsets, each once, visible at the commit. "
        "immediate: each alert produced the moment it is detected (idempotent producer); after "
        "a crash, abort or lost partition a consumer may see exact repeats of an idempotency key")
      ->transform(
          cli::namedValues({{"immediate", static_cast<int>(AlertDelivery::kImmediate)},
                            {"transactional", static_cast<int>(AlertDelivery::kTransactional)}}))
      ->type_name("MODE")
      ->default_str("transactional");
  f.opt("--standby-replicas", c.standby_replicas,
        "Warm copies of each partition kept by other members, by tailing its changelog, so that "
        "a partition that moves restores only the tail (0: none; members - 1: every member "
        "copies every partition it does not own)")
      ->capture_default_str();
  f.opt("--standby-interval-ms", c.standby_interval_ms,
        "How often a standby copy catches up with the changelog (ms)")
      ->capture_default_str();
  f.opt("--shutdown-timeout-ms", c.shutdown_timeout_ms,
        "Deadline for the whole stop after SIGTERM, teardown included (ms)")
      ->capture_default_str();
}

// The HTTP API and probes, lookups, logging and debugging.
void addServerFlags(EnvFlags& f, ServiceConfig& c) {
  f.section("The HTTP API and probes");
  f.opt("--http-address", c.http_address,
        "Listen address of the API and the probes (default 0.0.0.0; 127.0.0.1 under "
        "--embedded-kafka). Without an API token, /v1/* serves card state to anyone who reaches "
        "it: a warning at start says so unless the address is loopback");
  f.opt("--http-port", c.http_port,
        "API port (0: any free port, and the probes too unless --probe-port is given)")
      ->capture_default_str();
  f.opt("--probe-port", c.probe_port,
        "Port of /healthz, /readyz and /metrics alone, plain HTTP, outside the API's connection "
        "caps (default: --http-port + 1, so 8081, and any free port with --http-port 0; -1: off, "
        "0: any free port)");
  f.opt("--api-thread-nice", c.api_thread_nice,
        "Niceness of the API's I/O and lookup threads (not the probe port's): under CPU "
        "contention ingestion runs first (0: as the process; 0..19)")
      ->capture_default_str();
  f.opt("--ready-max-lag", c.ready_max_lag, "/readyz fails while a partition lags more records")
      ->capture_default_str();
  f.section("Lateness, lookups, logging");
  f.opt("--lateness-interval-s", c.lateness_interval_s,
        "The sliding interval over which lateness is measured and a grace advised (s, whole "
        "minutes)")
      ->capture_default_str();
  f.opt("--partitioner", c.partitioner,
        "Producers' partitioner, for card lookups and the misrouted-record check: crc32 "
        "(librdkafka) or murmur2 (Java)")
      ->capture_default_str();
  f.opt("--peer-url-template", c.peer_url_template,
        "URL of a partition's owner for redirects; {member} is its instance id");
  f.opt("--api-token-file", c.api_token_file,
        "Bearer token for /v1/* (else FRAUD_API_TOKEN holds the token itself)");
  f.opt("--tls-cert-file", c.tls_cert_file, "Serve the API over TLS with this certificate (PEM)");
  f.opt("--tls-key-file", c.tls_key_file, "Private key of --tls-cert-file (PEM)");
  f.opt("--log-format", c.log_format, "text or json")->capture_default_str();
  f.opt("--log-level", c.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  f.flag("--allow-core-dumps", c.allow_core_dumps,
         "Allow core dumps, for debugging (default: none, and the process is not dumpable: a "
         "core would hold the card-hash key, the API token and card numbers)");
}

}  // namespace

void addRunFlags(CLI::App& cmd, ServiceConfig& c) {
  EnvFlags flags(cmd);
  addKafkaFlags(flags, c);
  addProcessingFlags(flags, c);
  addServerFlags(flags, c);
}

}  // namespace fraud::service
