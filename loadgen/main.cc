// fraud-loadgen: the load generator (no subcommand) and the end-to-end verifier (`verify`).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "loadgen/production_command.h"
#include "loadgen/report_command.h"
#include "loadgen/verify_command.h"
#include "service/cli/logging.h"
#include "service/cli/suggestions.h"
#include "service/cli/versions.h"

namespace {

namespace loadgen = fraud::loadgen;

int runCommandLine(int argc, char** argv) {
  CLI::App app{
      "fraud-loadgen: produces realistic card transactions (with injected fraud, late, duplicate "
      "and malformed records) to Kafka at a paced rate and/or to JSONL files, keyed by card with "
      "the partition assigned here; writes the ground truth of the injected fraud; measures "
      "end-to-end alert latency. `fraud-loadgen verify` audits a topic against the service's "
      "alerts and dead-letter topics. The card-hash key comes from --card-hash-key-file or "
      "FRAUD_CARD_HASH_KEY, never from the command line."};
  app.require_subcommand(0, 1);
  app.set_version_flag(
      "--version", [] { return fraud::cli::versionText("fraud-loadgen"); },
      "Print the version and those of librdkafka and RocksDB as loaded, and exit");
  // librdkafka's own lines (a broker that cannot be reached, and the like) on stderr in the
  // service's log format (stdout carries the JSON summary).
  fraud::cli::configureLogging("fraud-loadgen", "text", "info");

  loadgen::ProductionFlags production;
  loadgen::addProductionFlags(app, production);
  loadgen::VerifyFlags verify;
  auto* verify_cmd = loadgen::addVerifyCommand(app, verify);
  loadgen::ReportFlags report;
  auto* report_cmd = loadgen::addReportCommand(app, report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fraud::cli::exitOnParseError(app, e, argc, argv);
  }
  if (*report_cmd) return loadgen::runReportCommand(report);
  if (*verify_cmd) return loadgen::runVerifyCommand(verify);
  return loadgen::runProductionCommand(production);
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
