#pragma once

// `fraud-loadgen verify` (main.cc): its flags and the audit (verification.h). The executable's
// only (CLI11).

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "loadgen/command_flags.h"
#include "loadgen/verification.h"

namespace fraud::loadgen {

struct VerifyFlags {
  VerifyOptions verify;
  std::optional<std::string> key_file;
  KafkaFlags kafka;
};

// The `verify` subcommand of `app`, its flags filling `flags`.
CLI::App* addVerifyCommand(CLI::App& app, VerifyFlags& flags);

// Checks the flags (every problem at once: exit 2) and runs the audit; the exit status.
[[nodiscard]] int runVerifyCommand(VerifyFlags& flags);

}  // namespace fraud::loadgen
