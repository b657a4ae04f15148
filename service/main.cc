// fraud-detector: the live service (`run`) and the offline detector (`replay`).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "detectors/card_ref.h"
#include "service/cli/detector_flags.h"
#include "service/cli/suggestions.h"
#include "service/cli/versions.h"
#include "service/core_dumps.h"
#include "service/kafka/secret.h"
#include "service/replay.h"
#include "service/run.h"
#if FRAUD_TEST_HOOKS
#include "service/test_hooks.h"
#endif

namespace {

int replayMain(const fraud::service::ReplayOptions& options,
               const std::optional<std::string>& key_file) {
  bool bad = false;
  for (const auto& problem : fraud::cli::detectorProblems(options.detector)) {
    std::fprintf(stderr, "replay: %s\n", problem.c_str());
    bad = true;
  }
  const auto key = fraud::kafka::loadCardHashKey(key_file);
  if (!key) {
    std::fprintf(stderr, "replay: %s\n", key.message().c_str());
    bad = true;
  }
  if (bad) return 2;

  const fraud::detectors::CardHasher hasher(key->bytes);
  const auto result = fraud::service::runReplay(options, hasher);
  if (!result.error.ok()) {
    // The error alone, as the last line: a summary there would read as a finished run.
    std::fprintf(stderr, "replay: %s\n", result.error.message().c_str());
    return result.error.code() == fraud::base::StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (options.report_peak_cards) {
    std::fprintf(stderr, "{\"peak_cards\":%zu}\n", result.peak_cards);
  }
  std::fprintf(stderr, "%s\n", fraud::service::replaySummaryJson(result).c_str());
  return 0;
}

// Applied before any secret is read and before any thread starts.
bool applyCoreDumpPolicy(const char* command, bool allow_core_dumps) {
  if (allow_core_dumps) return true;
  if (const auto error = fraud::service::disableCoreDumps(); !error.ok()) {
    std::fprintf(stderr, "%s: cannot disable core dumps: %s\n", command, error.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fraud-detector: raises an alert when one card is used in N or more distinct "
      "countries within a sliding window."};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return fraud::cli::versionText("fraud-detector"); },
      "Print the version and those of librdkafka and RocksDB as loaded, and exit");

  fraud::service::ReplayOptions replay;
  std::optional<std::string> replay_key_file;
  auto* replay_cmd = app.add_subcommand(
      "replay",
      "Run the detector over a JSONL file as one partition: alerts (JSONL) on --output, the "
      "summary JSON as the last line of stderr when the run completes (exit 0, also when records "
      "are rejected; --rejects says which). When the input cannot be read or an output cannot be "
      "written: the error alone, exit 1. The card-hash key comes from --card-hash-key-file or "
      "FRAUD_CARD_HASH_KEY; it is never taken on the command line.");
  replay_cmd->add_option("--input", replay.input, "Transactions, JSONL; '-' for stdin")->required();
  replay_cmd->add_option("--output", replay.output, "Where alerts go; '-' for stdout")
      ->capture_default_str();
  replay_cmd->add_option(
      "--rejects", replay.rejects,
      "Write each rejected line to this file, one JSON line each: {\"line\":N (from 1, every "
      "line counted),\"reason\":\"invalid_json\" (as in the summary),\"bytes\":\"...\"} "
      "(\"bytes_base64\" when the line is not UTF-8). These are the input's own bytes, card "
      "numbers included: the file is your own data, made readable by you alone (0600). Nothing "
      "else replay writes holds a card number");
  replay_cmd->add_option(
      "--controls", replay.controls,
      "Card controls, one JSON object a line ({\"card\",\"action\":\"suppress\"|\"remove\","
      "\"from\",\"until\",\"reason\",\"author\"}; docs/rule.md), applied in file order before the "
      "first transaction, the last line of a card winning; a line refused is counted by reason "
      "in the summary's \"controls\". Needs --suppressed-output");
  replay_cmd->add_option(
      "--suppressed-output", replay.suppressed_output,
      "Where the alerts that a control suppresses go instead of --output (the same alert JSON, "
      "one a line); the summary then adds \"suppressed\" and \"controls\". Needs --controls");
  replay_cmd->add_option("--card-hash-key-file", replay_key_file,
                         "File holding the card-hash key (less one trailing newline); wins "
                         "over FRAUD_CARD_HASH_KEY");
  fraud::cli::addDetectorFlags(*replay_cmd, replay.detector);
  bool replay_allow_core_dumps = false;
  replay_cmd
      ->add_flag("--allow-core-dumps", replay_allow_core_dumps,
                 "Allow core dumps, for debugging (default: none, and the process is not "
                 "dumpable: a core would hold the card-hash key and card numbers)")
      ->envname("FRAUD_ALLOW_CORE_DUMPS");
  replay_cmd->add_flag("--progress", replay.progress,
                       "Print progress to stderr every second (default: when stderr is a "
                       "terminal)");
  replay_cmd->add_flag("--report-peak-cards", replay.report_peak_cards,
                       "Print {\"peak_cards\":N}, the most cards held at once, on stderr "
                       "before the summary (scripts/bench/replay's bytes per card)");

  fraud::service::ServiceConfig run;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Run the live service: consume the transactions topic in a consumer group, keep card "
      "state in RocksDB, write alerts and dead letters to Kafka. Every flag but --kafka has a "
      "FRAUD_* environment variable (a flag wins); see docs/configuration.md.");
  fraud::service::addRunFlags(*run_cmd, run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fraud::cli::exitOnParseError(app, e, argc, argv);
  }

  if (*run_cmd) {
    if (!applyCoreDumpPolicy("run", run.allow_core_dumps)) return 1;
    // Blocked before any thread starts, so that only the service's signal thread sees them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
#if FRAUD_TEST_HOOKS
    fraud::service::installTestHooksFromEnvironment();
#endif
    return fraud::service::runService(run);
  }
  if (*replay_cmd) {
    if (!applyCoreDumpPolicy("replay", replay_allow_core_dumps)) return 1;
    if (replay_cmd->count("--progress") == 0) replay.progress = ::isatty(STDERR_FILENO) != 0;
    return replayMain(replay, replay_key_file);
  }
  return 2;
}
