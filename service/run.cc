#include "service/run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "api/http_server.h"
#include "api/options.h"
#include "api/router.h"
#include "detectors/base/mutex.h"
#include "service/cli/flag_names.h"
#include "service/cli/logging.h"
#include "service/embedded_kafka.h"
#include "service/kafka/admin.h"
#include "service/kafka/secret.h"
#include "service/metrics.h"
#include "service/process_metrics.h"
#include "service/stream_processor.h"
#include "service/version.h"
#include "state/state_db.h"

namespace fraud::service {
namespace {

constexpr const char* kApiTokenEnv = "FRAUD_API_TOKEN";
constexpr int kReachabilityTimeoutMs = 10'000;

// Whether the cluster answers at all, before anything asks for topics: an unreachable broker
// must not be reported as a missing topic.
base::Status checkBrokerReachable(const ServiceConfig& config,
                                  const kafka::KafkaProperties& properties) {
  kafka::KafkaProperties probe = properties;
  probe["bootstrap.servers"] = config.brokers;
  auto conf = kafka::makeKafkaConf(probe);
  if (!conf) return conf.status().withPrefix("Kafka configuration: ");
  auto client = kafka::makeKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf));
  if (!client) return client.status().withPrefix("Kafka client: ");
  return kafka::brokerReachable(client->get(), kReachabilityTimeoutMs)
      .withSuffix(" at " + config.brokers +
                  "; check --brokers, the network and the TLS/SASL settings");
}

// A throwaway key for --embedded-kafka without one: card_refs then differ on every run.
std::string ephemeralKey() {
  unsigned char bytes[32];
  RAND_bytes(bytes, sizeof(bytes));
  std::string key;
  for (unsigned char b : bytes)
    key += "0123456789abcdef"[b >> 4], key += "0123456789abcdef"[b & 15];
  return key;
}

// Waits for one SIGTERM or SIGINT (blocked everywhere), then asks the processor to stop; a stop
// that overruns the deadline (plus one second) ends the process with _exit(1). It waits for one
// signal only: later ones stay blocked and pending, so a second signal changes nothing. The
// deadline covers the stream thread's commit and close, and then the teardown after run() (the
// API, the fencer's and the owner refresh's threads, the Kafka clients), which may wait on
// brokers that no longer answer; it ends at ~StopSignals, before the audit writer and the state
// writer write out what they hold. A run that ended without a signal (a fatal error) gets the
// same deadline for its teardown, from armTeardown() on.
class StopSignals {
 public:
  StopSignals(StreamProcessor& processor, std::chrono::milliseconds deadline)
      : thread_([this, &processor, deadline] {
          sigset_t set;
          sigemptyset(&set);
          sigaddset(&set, SIGTERM);
          sigaddset(&set, SIGINT);
          int signal = 0;
          if (sigwait(&set, &signal) != 0) return;
          base::MutexLock lock(mu_);
          if (done_) return;
          if (teardown_) {
            spdlog::debug("run ended; tearing down within {} ms", deadline.count());
          } else {
            spdlog::info("received {}; stopping within {} ms", strsignal(signal), deadline.count());
            processor.requestStop();
          }
          // The extra second lets the processor report its own overrun first.
          const auto overrun =
              std::chrono::steady_clock::now() + deadline + std::chrono::seconds(1);
          bool in_time = true;
          while (!done_ && in_time) in_time = lock.waitUntil(cv_, overrun);
          if (!done_) {
            spdlog::critical("stop overran its deadline (--shutdown-timeout-ms); exiting now");
            spdlog::shutdown();
            _exit(1);
          }
        }) {}
  ~StopSignals() {
    {
      base::MutexLock lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    pthread_kill(thread_.native_handle(), SIGTERM);  // releases sigwait if still waiting
    thread_.join();
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // run() has returned: what is left of the stop must end within the deadline too (counted
  // from the signal when one came, else from now).
  void armTeardown() FRAUD_EXCLUDES(mu_) {
    {
      base::MutexLock lock(mu_);
      teardown_ = true;
    }
    pthread_kill(thread_.native_handle(), SIGTERM);  // releases sigwait if still waiting
  }

 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  bool done_ FRAUD_GUARDED_BY(mu_) = false;
  bool teardown_ FRAUD_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The API's options from the flags, with the API token read; each problem appended once.
api::ApiOptions apiOptions(const ServiceConfig& config, std::vector<std::string>& problems) {
  api::ApiOptions api_options;
  // Both set by resolveDefaults; a probe port left unset is a problem validate() reported.
  api_options.address = config.http_address.value_or("");
  api_options.port = config.http_port;
  api_options.probe_port = config.probe_port.value_or(-1);
  api_options.ready_max_lag = config.ready_max_lag;
  api_options.thread_nice = config.api_thread_nice;
  api_options.peer_url_template = config.peer_url_template;
  api_options.tls_cert_file = config.tls_cert_file.value_or("");
  api_options.tls_key_file = config.tls_key_file.value_or("");
  if (config.api_token_file || std::getenv(kApiTokenEnv) != nullptr) {
    if (auto token = kafka::loadSecret(config.api_token_file, "--api-token-file", kApiTokenEnv,
                                       "API token")) {
      api_options.api_token = std::move(token->bytes);
      // Re-read when it changes (a rotated Secret); FRAUD_API_TOKEN cannot change.
      if (config.api_token_file) api_options.api_token_file = *config.api_token_file;
    } else {
      problems.push_back(token.message());
    }
  }
  // The API checks the options these flags become. What ServiceConfig::validate checked under
  // the flags' names is left out, so that each mistake is reported once; the rest is worded
  // with the flags' names too. Options without a flag keep the API's name for them.
  static constexpr std::array<std::string_view, 6> kCheckedAsFlags = {
      "port ",        "probe_port ",   "ready_max_lag ",
      "thread_nice ", "tls_cert_file", "peer_url_template must contain {member}"};
  static constexpr std::array kFlags = {
      cli::FlagName{"address", "--http-address"},
      cli::FlagName{"peer_url_template", "--peer-url-template"},
      cli::FlagName{"api_token", "the API token (--api-token-file or FRAUD_API_TOKEN)"}};
  for (auto& problem : api_options.validate()) {
    if (std::any_of(kCheckedAsFlags.begin(), kCheckedAsFlags.end(),
                    [&](std::string_view checked) { return problem.starts_with(checked); })) {
      continue;
    }
    std::string worded = cli::withFlagNames(problem, kFlags);
    problems.push_back(worded == problem ? "API: " + problem : std::move(worded));
  }
  return api_options;
}

// Names the listener that could not start by its flag and port (the probe listener's errors
// start "probe port: ").
void logHttpStartError(const api::ApiOptions& options, const std::string& http_error) {
  constexpr std::string_view kProbe = "probe port: ";
  const bool probe = http_error.rfind(kProbe, 0) == 0;
  const int port = probe ? options.probe_port : options.port;
  spdlog::critical("cannot serve {} on {}:{} ({} {}): {}", probe ? "the probes" : "the API",
                   options.address, port, probe ? "--probe-port" : "--http-port", port,
                   probe ? http_error.substr(kProbe.size()) : http_error);
}

// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: reachable from this host alone.
bool isLoopback(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

// --embedded-kafka: the cluster, whose address becomes --brokers (and is printed on stdout for
// scripts). Null, logged, when it cannot start.
std::unique_ptr<EmbeddedKafka> startEmbeddedKafka(ServiceConfig& config) {
  auto started = EmbeddedKafka::start(config);
  if (!started) {
    spdlog::critical("embedded Kafka: {}", started.message());
    return nullptr;
  }
  std::unique_ptr<EmbeddedKafka> embedded = std::move(*started);
  config.brokers = embedded->bootstrap();
  std::printf("bootstrap=%s\n", config.brokers.c_str());
  std::fflush(stdout);
  spdlog::warn(
      "embedded Kafka (librdkafka mock cluster) at {}: for trying the product, not "
      "for data you care about",
      config.brokers);
  return embedded;
}

}  // namespace

int runService(ServiceConfig config) {
  config.resolveDefaults();
  std::vector<std::string> problems = config.validate();
  const auto kafka_properties = kafkaProperties(config, problems);
  std::optional<kafka::Secret> key;
  if (config.embedded_kafka && kafka::cardHashKeyAbsent(config.card_hash_key_file)) {
    key = kafka::Secret{ephemeralKey(), "a throwaway key"};
  } else {
    auto loaded = kafka::loadCardHashKey(config.card_hash_key_file);
    if (loaded) {
      key = std::move(*loaded);
    } else {
      problems.push_back(loaded.message());
    }
  }
  const api::ApiOptions api_options = apiOptions(config, problems);

  if (!problems.empty()) {
    for (const auto& problem : problems) std::fprintf(stderr, "run: %s\n", problem.c_str());
    std::fprintf(stderr, "run: %zu problem(s); see fraud-detector run --help\n", problems.size());
    return 2;
  }

  cli::configureLogging("fraud-detector", config.log_format, config.log_level);
  spdlog::info("fraud-detector {} starting (instance {})", kVersion, config.instance_id);
  if (key->source == "a throwaway key") {
    spdlog::warn(
        "no card-hash key given: using a throwaway key for this embedded run; "
        "card_refs will differ on every run");
  }

  std::unique_ptr<EmbeddedKafka> embedded;
  if (config.embedded_kafka && !(embedded = startEmbeddedKafka(config))) return 1;

  auto opened = state::StateDb::open(config.state);
  if (!opened) {
    spdlog::critical("{}", opened.message());
    return 1;
  }
  std::unique_ptr<state::StateDb> db = std::move(*opened);
  auto registry = std::make_shared<ServiceRegistry>();  // scrapes add process_*
  ServiceMetrics metrics(*registry);
  const detectors::CardHasher hasher(key->bytes);
  auto processor =
      std::make_unique<StreamProcessor>(config, kafka_properties, hasher, *db, metrics);
  // The API comes up first: liveness and metrics answer while Kafka is still being reached.
  api::Router router(api_options, processor->view(), *registry);
  api::HttpServer http(api_options, router);
  if (const auto http_error = http.start(); !http_error.ok()) {
    logHttpStartError(api_options, http_error.message());
    return 1;
  }
  spdlog::info("API on {}://{}:{} (/healthz /readyz /metrics /v1/*)",
               api_options.tls() ? "https" : "http", api_options.address, http.port());
  if (!api_options.api_token && !isLoopback(api_options.address)) {
    spdlog::warn(
        "/v1/* (card state) answers without a token on {}:{}, to anyone who reaches it; give "
        "--api-token-file (or FRAUD_API_TOKEN), or --http-address 127.0.0.1",
        api_options.address, http.port());
  }
  if (http.probePort() != 0) {
    spdlog::info("probes on http://{}:{} (/healthz /readyz /metrics)", api_options.address,
                 http.probePort());
  }
  if (!config.embedded_kafka) {
    if (const auto reachable = checkBrokerReachable(config, kafka_properties); !reachable.ok()) {
      spdlog::critical("cannot start: {}", reachable.message());
      return 1;
    }
  }
  if (const auto started = processor->start(); !started.ok()) {
    spdlog::critical("cannot start: {}", started.message());
    return 1;
  }
  StopSignals signals(*processor, std::chrono::milliseconds(config.shutdown_timeout_ms));
  const int status = processor->run();
  signals.armTeardown();
  http.stop();
  // While the signals' deadline still runs: the processor's threads (the fencer, the owner
  // refresh) may sit in admin calls, and its clients' close may wait on brokers.
  processor.reset();
  spdlog::info("stopped with status {}", status);
  return status;
}

}  // namespace fraud::service
