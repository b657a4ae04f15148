#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fraud::loadgen {

// A file written through a large buffer with write(2). Not thread-safe.
class BufferedFile {
 public:
  BufferedFile() = default;
  ~BufferedFile();
  BufferedFile(const BufferedFile&) = delete;
  BufferedFile& operator=(const BufferedFile&) = delete;
  BufferedFile(BufferedFile&& other) noexcept;
  BufferedFile& operator=(BufferedFile&&) = delete;

  // Creates or truncates `path`, mode 0600 (an existing file is narrowed to 0600 too).
  [[nodiscard]] bool open(const std::string& path, std::string& error);
  // Appends one line (the newline is added). False on a write error, with `error` set.
  [[nodiscard]] bool appendLine(std::string_view line, std::string& error);
  [[nodiscard]] bool close(std::string& error);

 private:
  [[nodiscard]] bool flush(std::string& error);
  int fd_ = -1;
  std::string path_;
  std::string buffer_;
};

// The records as sent: `DIR/partition-<n>.jsonl`, one per partition, each in that partition's
// order (what `fraud-detector replay` reads as one partition), and optionally one file of all
// records in the order they were produced.
class RecordFiles {
 public:
  // `directory` is created (mode 0700) if missing. Either may be empty (not written). Every file
  // is mode 0600.
  [[nodiscard]] bool open(const std::string& directory, const std::string& single_file,
                          int32_t partitions, std::string& error);
  [[nodiscard]] bool append(int32_t partition, std::string_view record, std::string& error);
  [[nodiscard]] bool close(std::string& error);

  [[nodiscard]] static std::string partitionFileName(int32_t partition);

 private:
  std::vector<BufferedFile> per_partition_;
  std::optional<BufferedFile> single_;
};

}  // namespace fraud::loadgen
