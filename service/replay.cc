#include "service/replay.h"

#include <fcntl.h>
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

std::string describeErrno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Opening the output (O_TRUNC) would empty an input that is the same regular file, under
// whatever name (a symbolic or hard link, "..", standard input or output redirected to it);
// appending to it would feed the alerts back in. Files are the same when device and inode are.
std::optional<std::string> sameFileAsInput(int in_fd, const ReplayOptions& options) {
  struct stat in_stat {};
  if (::fstat(in_fd, &in_stat) != 0 || !S_ISREG(in_stat.st_mode)) return std::nullopt;
  struct stat out_stat {};
  const bool to_stdout = options.output == "-";
  const int found =
      to_stdout ? ::fstat(STDOUT_FILENO, &out_stat) : ::stat(options.output.c_str(), &out_stat);
  if (found != 0 || out_stat.st_dev != in_stat.st_dev || out_stat.st_ino != in_stat.st_ino) {
    return std::nullopt;
  }
  const std::string input = options.input == "-" ? "standard input" : options.input;
  const std::string output = to_stdout ? "standard output" : options.output;
  return "--output " + output + " is the input " + input +
         " (the same file): writing alerts there would destroy the transactions before they are "
         "read; choose another output file";
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
  }

  // Opens both; an error (result.refused when the output is the input) otherwise.
  [[nodiscard]] bool open(const ReplayOptions& options, ReplayResult& result) {
    if (options.input != "-") {
      in_ = ::open(options.input.c_str(), O_RDONLY | O_CLOEXEC);
      if (in_ < 0) {
        result.error = describeErrno("cannot open input " + options.input);
        return false;
      }
      ::posix_fadvise(in_, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    if (auto same = sameFileAsInput(in_, options)) {
      result.error = std::move(same);
      result.refused = true;
      return false;
    }
    if (options.output != "-") {
      out_ = ::open(options.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out_ < 0) {
        result.error = describeErrno("cannot open output " + options.output);
        return false;
      }
    }
    return true;
  }

  // Closes the output file; false when the close reports a failed write.
  [[nodiscard]] bool closeOutput() {
    if (out_ == STDOUT_FILENO) return true;
    const int fd = std::exchange(out_, -1);
    return ::close(fd) == 0;
  }

  [[nodiscard]] int in() const { return in_; }
  [[nodiscard]] int out() const { return out_; }

 private:
  int in_ = STDIN_FILENO;
  int out_ = STDOUT_FILENO;
};

// Detection in batches: every record of a batch is prepared (decoded, hashed, its card's state
// prefetched) before the first is detected, so the memory latency of one card overlaps the work
// on the others. Detection itself stays in file order.
class BatchedDetection {
 public:
  BatchedDetection(const ReplayOptions& options, const detectors::CardHasher& hasher,
                   OutputFile& output, ReplayResult& result)
      : detector_(options.detector, store_),
        // No future-skew check: a file has no record timestamps.
        pipeline_(detectors::PipelineOptions{std::nullopt, &kafka::wallClockMs}, hasher),
        output_(output),
        result_(result) {}

  void line(std::string_view line) {
    if (isBlank(line)) return;
    (void)pipeline_.prepare(batched_, line, std::nullopt, store_);
    pipeline_.stage(batched_, store_);
    if (++batched_ == kBatch) flush();
  }

  // Detects the batch; its records point into the caller's buffer, so before that moves.
  void flush() {
    pipeline_.warm(batched_, store_);
    for (size_t i = 0; i < batched_; ++i) {
      pipeline_.warmAhead(i, batched_, store_);
      const auto outcome = pipeline_.detect(i, detector_, output_.buffer());
      result_.counts.count(outcome);
      if (outcome.alert_json_size > 0) output_.buffer().push_back('\n');
    }
    batched_ = 0;
    result_.peak_cards = std::max(result_.peak_cards, store_.cardCount());
  }

 private:
  static constexpr size_t kBatch = detectors::RecordPipeline::kSlots;

  state::MemoryCardStore store_;
  detectors::PartitionDetector detector_;
  detectors::RecordPipeline pipeline_;
  OutputFile& output_;
  ReplayResult& result_;
  size_t batched_ = 0;
};

// Reads the input to its end in chunks and hands `detection` each line, writing the output as
// it fills; stops at the first read or write error (in result.error).
void readLines(int in_fd, const ReplayOptions& options, BatchedDetection& detection,
               OutputFile& output, ReplayResult& result) {
  ProgressReporter progress(options.progress);
  std::vector<char> chunk(kReadChunk);
  size_t carried = 0;  // bytes of an unfinished line at the front of `chunk`
  while (true) {
    if (carried == chunk.size()) chunk.resize(chunk.size() * 2);  // a line longer than a chunk
    const ssize_t n = ::read(in_fd, chunk.data() + carried, chunk.size() - carried);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.error = describeErrno("cannot read input " + options.input);
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
      result.error = describeErrno("cannot write output " + options.output);
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
  OutputFile output(files.out());
  BatchedDetection detection(options, hasher, output, result);
  readLines(files.in(), options, detection, output, result);
  if (!result.error && !output.flush()) {
    result.error = describeErrno("cannot write output " + options.output);
  }
  if (!files.closeOutput() && !result.error) {
    result.error = describeErrno("cannot write output " + options.output);
  }
  return result;
}

}  // namespace fraud::service
