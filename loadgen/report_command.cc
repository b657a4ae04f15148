#include "loadgen/report_command.h"

#include <cstdio>

#include "loadgen/command_flags.h"
#include "loadgen/report.h"

namespace fraud::loadgen {

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
  if (const auto added = addVerifyToReportFile(f.file, f.verify); !added.ok()) {
    return reportProblems("fraud-loadgen report", {added.message()});
  }
  std::fprintf(stderr, "fraud-loadgen report: verdict added to %s\n", f.file.c_str());
  return 0;
}

}  // namespace fraud::loadgen
