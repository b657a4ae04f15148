#pragma once

// `fraud-loadgen report FILE --verify VERIFY` (main.cc): adds verify's verdict to the HTML report
// (report.h). The executable's only (CLI11).

#include <CLI/CLI.hpp>
#include <string>

namespace fraud::loadgen {

struct ReportFlags {
  std::string file;
  std::string verify;
};

// The `report` subcommand of `app`, its arguments filling `flags`.
CLI::App* addReportCommand(CLI::App& app, ReportFlags& flags);

// Adds the verdict; the exit status (0 written, 2 otherwise).
[[nodiscard]] int runReportCommand(const ReportFlags& flags);

}  // namespace fraud::loadgen
