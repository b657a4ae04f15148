#pragma once

#include <optional>
#include <string>

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
};

struct ReplayResult {
  detectors::OutcomeCounts counts;
  std::optional<std::string> error;  // an I/O failure; counts then cover what was read
  // The arguments were refused before anything was read or written (`error` says why): the
  // output or the rejects file is the input file, or the rejects file is the output.
  bool refused = false;
  // The most cards the detector held at once (sampled after every batch of records).
  size_t peak_cards = 0;
};

// `fraud-detector replay`: reads JSONL transactions in file order as one partition and writes
// the alerts in emission order (docs/rule.md §6), through the record pipeline the live service runs
// (detectors/record_pipeline.h; no future-skew check: a file has no record timestamps). An output
// or rejects file that is the input file (by device and inode, whatever the path), or a rejects
// file that is the output, is refused.
[[nodiscard]] ReplayResult runReplay(const ReplayOptions& options,
                                     const detectors::CardHasher& hasher);

}  // namespace fraud::service
