#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/base/status.h"

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
  [[nodiscard]] base::Status open(const std::string& path);
  // Appends one line (the newline is added). An error on a write error.
  [[nodiscard]] base::Status appendLine(std::string_view line);
  [[nodiscard]] base::Status close();

 private:
  [[nodiscard]] base::Status flush();
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
  [[nodiscard]] base::Status open(const std::string& directory, const std::string& single_file,
                                  int32_t partitions);
  [[nodiscard]] base::Status append(int32_t partition, std::string_view record);
  // Closes every file; the last error when any failed.
  [[nodiscard]] base::Status close();

  [[nodiscard]] static std::string partitionFileName(int32_t partition);

 private:
  std::vector<BufferedFile> per_partition_;
  std::optional<BufferedFile> single_;
};

}  // namespace fraud::loadgen
