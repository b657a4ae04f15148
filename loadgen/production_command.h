#pragma once

// `fraud-loadgen` without a subcommand (main.cc): the production run's flags, checked and
// resolved into ProductionOptions, the run, and its HTML report. The executable's only (CLI11).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "loadgen/command_flags.h"
#include "loadgen/lateness_model.h"
#include "loadgen/production.h"

namespace fraud::loadgen {

// What the production run's flags hold before they are checked: the texts that need parsing
// (a rate that may be 'max', durations with units) and the options they resolve to.
struct ProductionFlags {
  ProductionOptions run;
  std::string rate_text = "20000";
  std::optional<std::string> duration_text;
  std::optional<int64_t> start_time;
  std::string max_lateness_text = "120000";
  std::string lateness_model = "classic";
  LatenessMixture mixture;
  std::string partitioner_text = "crc32";
  std::optional<std::string> key_file;
  KafkaFlags kafka;
  bool no_progress = false;
  bool no_latency = false;
  std::optional<std::string> report_path;
};

// Every flag of a production run on `app`, in the order --help lists them.
void addProductionFlags(CLI::App& app, ProductionFlags& flags);

// Checks the flags (every problem at once: exit 2), runs the production until done or Ctrl-C,
// then writes the report when asked. Returns the exit status.
[[nodiscard]] int runProductionCommand(ProductionFlags& flags);

}  // namespace fraud::loadgen
