#include "service/replay.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/alert.h"
#include "detectors/partition_detector.h"
#include "detectors/record_pipeline.h"
#include "service/kafka/wall_clock.h"
#include "state/memory_card_store.h"

namespace fraud::service {
namespace {

constexpr size_t kReadChunk = 4 << 20;
constexpr size_t kWriteChunk = 1 << 20;

// docs/rule.md §6: a line that is empty or holds only spaces, tabs and a final CR is not a record.
bool isBlank(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

// `what` failed with errno's reason: an I/O error.
base::Status ioError(const std::string& what) {
  return base::Status::ioError(what + ": " + std::strerror(errno));
}

// Whether `path` ("-": the file behind `std_fd`) is the regular file `file` describes. Files are
// the same when device and inode are, under whatever name (a symbolic or hard link, "..",
// standard input or output redirected to it).
bool isSameRegularFile(const struct stat& file, const std::string& path, int std_fd) {
  if (!S_ISREG(file.st_mode)) return false;
  struct stat other {};
  const int found = path == "-" ? ::fstat(std_fd, &other) : ::stat(path.c_str(), &other);
  return found == 0 && other.st_dev == file.st_dev && other.st_ino == file.st_ino;
}

// Opening the output or the rejects file (O_TRUNC) would empty an input that is the same file;
// appending to it would feed the alerts back in. A rejects file that is the output would mix two
// streams into one file.
base::Status outputProblem(int in_fd, const ReplayOptions& options) {
  struct stat in_stat {};
  if (::fstat(in_fd, &in_stat) != 0) return {};
  const std::string input = options.input == "-" ? "standard input" : options.input;
  const std::string output = options.output == "-" ? "standard output" : options.output;
  if (isSameRegularFile(in_stat, options.output, STDOUT_FILENO)) {
    return base::Status::invalidArgument(
        "--output " + output + " is the input " + input +
        " (the same file): writing alerts there would destroy the transactions before they "
        "are read; choose another output file");
  }
  if (!options.rejects) return {};
  if (*options.rejects == "-")
    return base::Status::invalidArgument("--rejects takes a file's path, not '-'");
  if (isSameRegularFile(in_stat, *options.rejects, -1)) {
    return base::Status::invalidArgument("--rejects " + *options.rejects + " is the input " +
                                         input + " (the same file): choose another rejects file");
  }
  struct stat out_stat {};
  const int out_found = options.output == "-" ? ::fstat(STDOUT_FILENO, &out_stat)
                                              : ::stat(options.output.c_str(), &out_stat);
  if (out_found == 0 && isSameRegularFile(out_stat, *options.rejects, -1)) {
    return base::Status::invalidArgument("--rejects " + *options.rejects + " is the output " +
                                         output + " (the same file): choose another rejects file");
  }
  return {};
}

// The controls file and the suppressed output: both or neither, each a file's path. Opening a file
// written (O_TRUNC) that is the controls file would empty it before it is read; a suppressed
// output that is the input, the output or the rejects file would destroy or mix them.
base::Status controlsProblem(int in_fd, const ReplayOptions& options) {
  if (options.controls.has_value() != options.suppressed_output.has_value()) {
    return base::Status::invalidArgument(
        options.controls ? std::string("--controls needs --suppressed-output, where the alerts "
                                       "its controls suppress go")
                         : std::string("--suppressed-output needs --controls, the controls "
                                       "that decide which alerts go there"));
  }
  if (!options.controls) return {};
  if (*options.controls == "-")
    return base::Status::invalidArgument("--controls takes a file's path, not '-'");
  const std::string& suppressed = *options.suppressed_output;
  if (suppressed == "-")
    return base::Status::invalidArgument("--suppressed-output takes a file's path, not '-'");
  const std::string output = options.output == "-" ? "standard output" : options.output;
  struct stat controls_stat {};
  if (::stat(options.controls->c_str(), &controls_stat) == 0) {
    if (isSameRegularFile(controls_stat, options.output, STDOUT_FILENO)) {
      return base::Status::invalidArgument("--output " + output + " is the controls file " +
                                           *options.controls +
                                           " (the same file): choose another output file");
    }
    if (options.rejects && isSameRegularFile(controls_stat, *options.rejects, -1)) {
      return base::Status::invalidArgument("--rejects " + *options.rejects +
                                           " is the controls file " + *options.controls +
                                           " (the same file): choose another rejects file");
    }
    if (isSameRegularFile(controls_stat, suppressed, -1)) {
      return base::Status::invalidArgument("--suppressed-output " + suppressed +
                                           " is the controls file " + *options.controls +
                                           " (the same file): choose another suppressed output");
    }
  }
  struct stat in_stat {};
  if (::fstat(in_fd, &in_stat) == 0 && isSameRegularFile(in_stat, suppressed, -1)) {
    const std::string input = options.input == "-" ? "standard input" : options.input;
    return base::Status::invalidArgument("--suppressed-output " + suppressed + " is the input " +
                                         input +
                                         " (the same file): choose another suppressed output");
  }
  struct stat out_stat {};
  const int out_found = options.output == "-" ? ::fstat(STDOUT_FILENO, &out_stat)
                                              : ::stat(options.output.c_str(), &out_stat);
  if (out_found == 0 && isSameRegularFile(out_stat, suppressed, -1)) {
    return base::Status::invalidArgument("--suppressed-output " + suppressed + " is the output " +
                                         output +
                                         " (the same file): choose another suppressed output");
  }
  struct stat rejects_stat {};
  if (options.rejects && ::stat(options.rejects->c_str(), &rejects_stat) == 0 &&
      isSameRegularFile(rejects_stat, suppressed, -1)) {
    return base::Status::invalidArgument("--suppressed-output " + suppressed +
                                         " is the rejects file " + *options.rejects +
                                         " (the same file): choose another suppressed output");
  }
  return {};
}

// docs/rule.md §1: what is not UTF-8 is invalid_json. Well-formed UTF-8 (RFC 3629): no overlong
// forms, no surrogates, nothing above U+10FFFF.
bool isUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    uint32_t code = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      extra = 1, code = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      extra = 2, code = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      extra = 3, code = b & 0x07;
    } else {
      return false;
    }
    if (text.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      code = (code << 6) | (c & 0x3F);
    }
    if ((extra == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
        (extra == 3 && (code < 0x10000 || code > 0x10FFFF))) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

// One line of the rejects file: {"line":N,"reason":"...","bytes":"..."}, or "bytes_base64" for
// a line that is not UTF-8 (a JSON string holds only text).
void appendReject(std::string& out, uint64_t line_number, detectors::RejectReason reason,
                  std::string_view line) {
  out.append(R"({"line":)");
  out.append(std::to_string(line_number));
  out.append(R"(,"reason":")");
  out.append(detectors::rejectReasonName(reason));
  if (isUtf8(line)) {
    out.append(R"(","bytes":)");
    detectors::appendJsonString(out, line);
  } else {
    out.append(R"(","bytes_base64":")");
    const size_t at = out.size();
    out.resize(at + 4 * ((line.size() + 2) / 3) + 1);
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at),
                                  reinterpret_cast<const unsigned char*>(line.data()),
                                  static_cast<int>(line.size()));
    out.resize(at + static_cast<size_t>(n));
    out.push_back('"');
  }
  out.append("}\n");
}

class OutputFile {
 public:
  explicit OutputFile(int fd) : fd_(fd) {}
  std::string& buffer() { return buffer_; }
  [[nodiscard]] bool flushIfFull() { return buffer_.size() < kWriteChunk || flush(); }
  [[nodiscard]] bool flush() {
    size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
    return true;
  }

 private:
  int fd_;
  std::string buffer_;
};

class ProgressReporter {
 public:
  explicit ProgressReporter(bool enabled)
      : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}
  void maybeReport(const detectors::OutcomeCounts& counts) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "replay: %llu records, %.0f records/s, %llu alerts\n",
                 static_cast<unsigned long long>(counts.records), counts.records / seconds,
                 static_cast<unsigned long long>(counts.alerts));
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

// The input and output of a replay; closes what it opened (standard input and output stay).
class ReplayFiles {
 public:
  ReplayFiles() = default;
  ReplayFiles(const ReplayFiles&) = delete;
  ReplayFiles& operator=(const ReplayFiles&) = delete;
  ~ReplayFiles() {
    if (in_ >= 0 && in_ != STDIN_FILENO) ::close(in_);
    if (out_ >= 0 && out_ != STDOUT_FILENO) ::close(out_);
    if (rejects_ >= 0) ::close(rejects_);
    if (controls_ >= 0) ::close(controls_);
    if (suppressed_ >= 0) ::close(suppressed_);
  }

  // Opens them all; an error in result.error otherwise (kInvalidArgument when outputProblem()
  // or controlsProblem() finds one).
  [[nodiscard]] bool open(const ReplayOptions& options, ReplayResult& result) {
    if (options.input != "-") {
      in_ = ::open(options.input.c_str(), O_RDONLY | O_CLOEXEC);
      if (in_ < 0) {
        result.error = ioError("cannot open input " + options.input);
        return false;
      }
      ::posix_fadvise(in_, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    base::Status refused = outputProblem(in_, options);
    if (refused.ok()) refused = controlsProblem(in_, options);
    if (!refused.ok()) {
      result.error = std::move(refused);
      return false;
    }
    // Read before anything is written: a controls file that cannot be read leaves the outputs
    // as they were.
    if (options.controls) {
      controls_ = ::open(options.controls->c_str(), O_RDONLY | O_CLOEXEC);
      if (controls_ < 0) {
        result.error = ioError("cannot open controls file " + *options.controls);
        return false;
      }
    }
    if (options.output != "-") {
      out_ = ::open(options.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out_ < 0) {
        result.error = ioError("cannot open output " + options.output);
        return false;
      }
    }
    if (options.rejects) {
      // It holds card numbers: its owner's alone, also when it existed before.
      rejects_ = ::open(options.rejects->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (rejects_ < 0 || ::fchmod(rejects_, 0600) != 0) {
        result.error = ioError("cannot open rejects file " + *options.rejects);
        return false;
      }
    }
    if (options.suppressed_output) {
      suppressed_ = ::open(options.suppressed_output->c_str(),
                           O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (suppressed_ < 0) {
        result.error = ioError("cannot open suppressed output " + *options.suppressed_output);
        return false;
      }
    }
    return true;
  }

  // Close the output file, the rejects file; false when the close reports a failed write.
  [[nodiscard]] bool closeOutput() {
    if (out_ == STDOUT_FILENO) return true;
    return ::close(std::exchange(out_, -1)) == 0;
  }
  [[nodiscard]] bool closeRejects() {
    if (rejects_ < 0) return true;
    return ::close(std::exchange(rejects_, -1)) == 0;
  }
  [[nodiscard]] bool closeSuppressed() {
    if (suppressed_ < 0) return true;
    return ::close(std::exchange(suppressed_, -1)) == 0;
  }

  [[nodiscard]] int in() const { return in_; }
  [[nodiscard]] int out() const { return out_; }
  [[nodiscard]] int rejects() const { return rejects_; }        // -1: no --rejects
  [[nodiscard]] int controls() const { return controls_; }      // -1: no --controls
  [[nodiscard]] int suppressed() const { return suppressed_; }  // -1: no --suppressed-output

 private:
  int in_ = STDIN_FILENO;
  int out_ = STDOUT_FILENO;
  int rejects_ = -1;
  int controls_ = -1;
  int suppressed_ = -1;
};

// Reads the controls file to its end and applies each valid line in file order (docs/rule.md
// "Card controls": the key is taken to be the line's `card`, and a file has no partition to be
// misrouted from); a refused line is counted by reason and changes nothing. Blank lines are
// skipped as in the input. False on a read error (in result.error).
bool applyControlsFile(int fd, const ReplayOptions& options, const detectors::CardHasher& hasher,
                       detectors::CardControls& controls, ReplayResult& result) {
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (true) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.error = ioError("cannot read controls file " + *options.controls);
      return false;
    }
    if (n == 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  detectors::ControlDecoder decoder;
  auto& counts = result.controls.emplace();
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    if (isBlank(line)) continue;
    auto decoded = decoder.decodeKeyless(line);
    if (!decoded.ok()) {
      counts.countRejected(*decoded.rejected);
      continue;
    }
    controls.apply(hasher.hash(decoded.card), std::move(decoded.control));
    ++counts.applied;
  }
  return true;
}

// Detection in batches: every record of a batch is prepared (decoded, hashed, its card's state
// prefetched) before the first is detected, so the memory latency of one card overlaps the work
// on the others. Detection itself stays in file order.
class BatchedDetection {
 public:
  // `rejects`: where rejected lines go (appendReject), or null. `controls`: the controls in force,
  // whose suppressed alerts go to `suppressed` instead of `output`; both null without --controls.
  BatchedDetection(const ReplayOptions& options, const detectors::CardHasher& hasher,
                   OutputFile& output, OutputFile* rejects, const detectors::CardControls* controls,
                   OutputFile* suppressed, ReplayResult& result)
      : detector_(options.detector, store_),
        // No future-skew check: a file has no record timestamps.
        pipeline_(detectors::PipelineOptions{std::nullopt, &kafka::wallClockMs}, hasher),
        output_(output),
        rejects_(rejects),
        controls_(controls),
        suppressed_(suppressed),
        result_(result) {}

  // The next line of the input (blank or not), without its newline.
  void line(std::string_view line) {
    ++line_number_;
    if (isBlank(line)) return;
    (void)pipeline_.prepare(batched_, line, std::nullopt, store_);
    pipeline_.stage(batched_, store_);
    lines_[batched_] = {line_number_, line};
    if (++batched_ == kBatch) flush();
  }

  // Detects the batch; its records point into the caller's buffer, so before that moves.
  void flush() {
    pipeline_.warm(batched_, store_);
    for (size_t i = 0; i < batched_; ++i) {
      pipeline_.warmAhead(i, batched_, store_);
      const auto outcome = pipeline_.detect(i, detector_, output_.buffer());
      result_.counts.count(outcome);
      if (outcome.alert_json_size > 0) endAlert(outcome);
      if (outcome.rejected && rejects_ != nullptr) {
        appendReject(rejects_->buffer(), lines_[i].first, *outcome.rejected, lines_[i].second);
      }
    }
    batched_ = 0;
    result_.peak_cards = std::max(result_.peak_cards, store_.cardCount());
  }

 private:
  static constexpr size_t kBatch = detectors::RecordPipeline::kSlots;

  // The alert's JSON ends the output's buffer: it stays there, or a control in force for its card
  // at its trigger event time moves it to the suppressed output. Either way the same JSON.
  void endAlert(const detectors::RecordOutcome& outcome) {
    std::string& out = output_.buffer();
    const detectors::Alert& alert = *outcome.detected.alert;
    if (controls_ != nullptr &&
        controls_->suppressing(alert.card_ref, alert.trigger_event_time) != nullptr) {
      const size_t at = out.size() - outcome.alert_json_size;
      suppressed_->buffer().append(out, at, outcome.alert_json_size);
      suppressed_->buffer().push_back('\n');
      out.resize(at);
      ++result_.suppressed;
      return;
    }
    out.push_back('\n');
  }

  state::MemoryCardStore store_;
  detectors::PartitionDetector detector_;
  detectors::RecordPipeline pipeline_;
  OutputFile& output_;
  OutputFile* rejects_;
  const detectors::CardControls* controls_;
  OutputFile* suppressed_;
  ReplayResult& result_;
  size_t batched_ = 0;
  uint64_t line_number_ = 0;  // of the last line given, from 1
  // Each slot's line number and bytes, for the rejects file.
  std::array<std::pair<uint64_t, std::string_view>, kBatch> lines_{};
};

// Reads the input to its end in chunks and hands `detection` each line, writing the output (and
// the rejects file) as it fills; stops at the first read or write error (in result.error).
void readLines(int in_fd, const ReplayOptions& options, BatchedDetection& detection,
               OutputFile& output, OutputFile* rejects, OutputFile* suppressed,
               ReplayResult& result) {
  ProgressReporter progress(options.progress);
  std::vector<char> chunk(kReadChunk);
  size_t carried = 0;  // bytes of an unfinished line at the front of `chunk`
  while (true) {
    if (carried == chunk.size()) chunk.resize(chunk.size() * 2);  // a line longer than a chunk
    const ssize_t n = ::read(in_fd, chunk.data() + carried, chunk.size() - carried);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.error = ioError("cannot read input " + options.input);
      return;
    }
    if (n == 0) {
      if (carried > 0) detection.line(std::string_view(chunk.data(), carried));
      detection.flush();
      return;
    }
    const char* begin = chunk.data();
    const char* end = chunk.data() + carried + n;
    while (true) {
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', end - begin));
      if (newline == nullptr) break;
      detection.line(std::string_view(begin, newline - begin));
      begin = newline + 1;
    }
    detection.flush();  // the batch points into `chunk`, which is about to move
    carried = static_cast<size_t>(end - begin);
    std::memmove(chunk.data(), begin, carried);
    if (!output.flushIfFull()) {
      result.error = ioError("cannot write output " + options.output);
      return;
    }
    if (rejects != nullptr && !rejects->flushIfFull()) {
      result.error = ioError("cannot write rejects file " + *options.rejects);
      return;
    }
    if (suppressed != nullptr && !suppressed->flushIfFull()) {
      result.error = ioError("cannot write suppressed output " + *options.suppressed_output);
      return;
    }
    progress.maybeReport(result.counts);
  }
}

}  // namespace

ReplayResult runReplay(const ReplayOptions& options, const detectors::CardHasher& hasher) {
  ReplayResult result;
  ReplayFiles files;
  if (!files.open(options, result)) return result;
  detectors::CardControls controls;
  if (files.controls() >= 0 &&
      !applyControlsFile(files.controls(), options, hasher, controls, result)) {
    return result;
  }
  OutputFile output(files.out());
  std::optional<OutputFile> rejects;
  if (files.rejects() >= 0) rejects.emplace(files.rejects());
  OutputFile* rejects_file = rejects ? &*rejects : nullptr;
  std::optional<OutputFile> suppressed;
  if (files.suppressed() >= 0) suppressed.emplace(files.suppressed());
  OutputFile* suppressed_file = suppressed ? &*suppressed : nullptr;
  BatchedDetection detection(options, hasher, output, rejects_file,
                             suppressed ? &controls : nullptr, suppressed_file, result);
  readLines(files.in(), options, detection, output, rejects_file, suppressed_file, result);
  if (result.error.ok() && !output.flush()) {
    result.error = ioError("cannot write output " + options.output);
  }
  if (result.error.ok() && rejects && !rejects->flush()) {
    result.error = ioError("cannot write rejects file " + *options.rejects);
  }
  if (result.error.ok() && suppressed && !suppressed->flush()) {
    result.error = ioError("cannot write suppressed output " + *options.suppressed_output);
  }
  if (!files.closeOutput() && result.error.ok()) {
    result.error = ioError("cannot write output " + options.output);
  }
  if (!files.closeRejects() && result.error.ok()) {
    result.error = ioError("cannot write rejects file " + *options.rejects);
  }
  if (!files.closeSuppressed() && result.error.ok()) {
    result.error = ioError("cannot write suppressed output " + *options.suppressed_output);
  }
  return result;
}

std::string replaySummaryJson(const ReplayResult& result) {
  std::string out = result.counts.summaryJson();
  if (!result.controls) return out;
  out.pop_back();  // the closing brace
  out += ",\"suppressed\":" + std::to_string(result.suppressed) +
         ",\"controls\":" + result.controls->json() + "}";
  return out;
}

}  // namespace fraud::service
