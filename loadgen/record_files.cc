#include "loadgen/record_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace fraud::loadgen {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

std::string describeErrno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

BufferedFile::~BufferedFile() {
  if (fd_ >= 0) ::close(fd_);
}

BufferedFile::BufferedFile(BufferedFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      buffer_(std::move(other.buffer_)) {}

bool BufferedFile::open(const std::string& path, std::string& error) {
  path_ = path;
  // Owner-only: the records hold card numbers (test-only ones, but a file that looks like card
  // data should not be readable by everyone). The mode of open(2) applies only to a new file, so
  // an existing one is narrowed too before anything is written to it.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error = describeErrno("cannot create", path);
    return false;
  }
  struct stat info {};
  if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 07777) != 0600 &&
      ::fchmod(fd_, 0600) != 0) {
    error = describeErrno("cannot restrict the permissions of", path);
    ::close(std::exchange(fd_, -1));
    return false;
  }
  buffer_.reserve(kFlushBytes + 4096);
  return true;
}

bool BufferedFile::appendLine(std::string_view line, std::string& error) {
  buffer_.append(line);
  buffer_.push_back('\n');
  return buffer_.size() < kFlushBytes || flush(error);
}

bool BufferedFile::flush(std::string& error) {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = describeErrno("cannot write", path_);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return true;
}

bool BufferedFile::close(std::string& error) {
  if (fd_ < 0) return true;
  const bool flushed = flush(error);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && flushed) {
    error = describeErrno("cannot write", path_);
    return false;
  }
  return flushed;
}

std::string RecordFiles::partitionFileName(int32_t partition) {
  return "partition-" + std::to_string(partition) + ".jsonl";
}

bool RecordFiles::open(const std::string& directory, const std::string& single_file,
                       int32_t partitions, std::string& error) {
  if (!directory.empty()) {
    std::error_code ec;
    const bool created = std::filesystem::create_directories(directory, ec);
    if (ec) {
      error = "cannot create directory " + directory + ": " + ec.message();
      return false;
    }
    // A directory made here is owner-only; an existing one is left as it is.
    if (created) {
      std::filesystem::permissions(directory, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
      if (ec) {
        error = "cannot restrict the permissions of " + directory + ": " + ec.message();
        return false;
      }
    }
    per_partition_.resize(static_cast<size_t>(partitions));
    for (int32_t p = 0; p < partitions; ++p) {
      const auto path = std::filesystem::path(directory) / partitionFileName(p);
      if (!per_partition_[static_cast<size_t>(p)].open(path.string(), error)) return false;
    }
  }
  if (!single_file.empty()) {
    single_.emplace();
    if (!single_->open(single_file, error)) return false;
  }
  return true;
}

bool RecordFiles::append(int32_t partition, std::string_view record, std::string& error) {
  if (!per_partition_.empty() &&
      !per_partition_[static_cast<size_t>(partition)].appendLine(record, error)) {
    return false;
  }
  return !single_ || single_->appendLine(record, error);
}

bool RecordFiles::close(std::string& error) {
  bool ok = true;
  for (auto& file : per_partition_) ok = file.close(error) && ok;
  if (single_) ok = single_->close(error) && ok;
  return ok;
}

}  // namespace fraud::loadgen
