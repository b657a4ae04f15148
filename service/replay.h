#pragma once

#include <optional>
#include <string>

#include "detectors/base/status.h"
#include "detectors/card_control.h"
#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "detectors/outcome_counts.h"

namespace fraud::service {

struct ReplayOptions {
  std::string input = "-";   // a path, or "-" for standard input
  std::string output = "-";  // a path, or "-" for standard output
  detectors::DetectorOptions detector;
  bool progress = false;  // a progress line on stderr every second
  // Before the summary, a line {"peak_cards":N} on stderr: the most cards held at once.
  bool report_peak_cards = false;
  // A path: each rejected line written there as one JSON line, {"line":N,"reason":"...",
  // "bytes":"..."} (N counts every line from 1; "bytes_base64" instead of "bytes" when the line is
  // not UTF-8). The bytes are the input's own, card numbers included: the file is made 0600.
  std::optional<std::string> rejects;
  // Card controls (docs/rule.md "Card controls"), both or neither: a path to a file of control
  // values, one JSON object a line (the key taken to be its `card`), applied in file order before
  // the first transaction; and a path where the alerts they suppress go, one alert JSON a line as
  // on the output, instead of the output.
  std::optional<std::string> controls;
  std::optional<std::string> suppressed_output;
};

struct ReplayResult {
  detectors::OutcomeCounts counts;
  // Ok, or what stopped the run:
  // - kInvalidArgument: the arguments were refused before anything was read or written: a file
  //   written (output, rejects, suppressed output) is a file read (input, controls) or another
  //   file written, or only one of --controls and --suppressed-output is given;
  // - kIoError: an I/O failure; counts then cover what was read.
  base::Status error;
  // With ReplayOptions::controls: the controls file's lines applied and refused by reason, and
  // the alerts written to the suppressed output (counted in counts.alerts and counts.incidents
  // all the same: a control changes where an alert goes, not what the detector raised).
  std::optional<detectors::ControlCounts> controls;
  uint64_t suppressed = 0;
  // The most cards the detector held at once (sampled after every batch of records).
  size_t peak_cards = 0;
};

// `fraud-detector replay`: reads JSONL transactions in file order as one partition and writes
// the alerts in emission order (docs/rule.md §6), through the record pipeline the live service runs
// (detectors/record_pipeline.h; no future-skew check: a file has no record timestamps). With a
// controls file, the alerts its controls suppress go to the suppressed output instead. A file
// written that is a file read or another file written (by device and inode, whatever the path)
// is refused.
[[nodiscard]] ReplayResult runReplay(const ReplayOptions& options,
                                     const detectors::CardHasher& hasher);

// The summary line (docs/rule.md §6): OutcomeCounts::summaryJson(), plus "suppressed" and
// "controls" ({"applied":N,"rejected":{...}}) when the run had a controls file.
[[nodiscard]] std::string replaySummaryJson(const ReplayResult& result);

}  // namespace fraud::service
