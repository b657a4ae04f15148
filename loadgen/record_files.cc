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

base::Status describeErrno(const std::string& what, const std::string& path) {
  return base::Status::ioError(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

BufferedFile::~BufferedFile() {
  if (fd_ >= 0) ::close(fd_);
}

BufferedFile::BufferedFile(BufferedFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      buffer_(std::move(other.buffer_)) {}

base::Status BufferedFile::open(const std::string& path) {
  path_ = path;
  // Owner-only: the records hold card numbers (test-only ones, but a file that looks like card
  // data should not be readable by everyone). The mode of open(2) applies only to a new file, so
  // an existing one is narrowed too before anything is written to it.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return describeErrno("cannot create", path);
  struct stat info {};
  if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 07777) != 0600 &&
      ::fchmod(fd_, 0600) != 0) {
    base::Status error = describeErrno("cannot restrict the permissions of", path);
    ::close(std::exchange(fd_, -1));
    return error;
  }
  buffer_.reserve(kFlushBytes + 4096);
  return {};
}

base::Status BufferedFile::appendLine(std::string_view line) {
  buffer_.append(line);
  buffer_.push_back('\n');
  if (buffer_.size() < kFlushBytes) return {};
  return flush();
}

base::Status BufferedFile::flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return describeErrno("cannot write", path_);
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return {};
}

base::Status BufferedFile::close() {
  if (fd_ < 0) return {};
  base::Status flushed = flush();
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && flushed.ok()) return describeErrno("cannot write", path_);
  return flushed;
}

std::string RecordFiles::partitionFileName(int32_t partition) {
  return "partition-" + std::to_string(partition) + ".jsonl";
}

base::Status RecordFiles::open(const std::string& directory, const std::string& single_file,
                               int32_t partitions) {
  if (!directory.empty()) {
    std::error_code ec;
    const bool created = std::filesystem::create_directories(directory, ec);
    if (ec) {
      return base::Status::ioError("cannot create directory " + directory + ": " + ec.message());
    }
    // A directory made here is owner-only; an existing one is left as it is.
    if (created) {
      std::filesystem::permissions(directory, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
      if (ec) {
        return base::Status::ioError("cannot restrict the permissions of " + directory + ": " +
                                     ec.message());
      }
    }
    per_partition_.resize(static_cast<size_t>(partitions));
    for (int32_t p = 0; p < partitions; ++p) {
      const auto path = std::filesystem::path(directory) / partitionFileName(p);
      if (auto e = per_partition_[static_cast<size_t>(p)].open(path.string()); !e.ok()) return e;
    }
  }
  if (!single_file.empty()) {
    single_.emplace();
    if (auto e = single_->open(single_file); !e.ok()) return e;
  }
  return {};
}

base::Status RecordFiles::append(int32_t partition, std::string_view record) {
  if (!per_partition_.empty()) {
    if (auto e = per_partition_[static_cast<size_t>(partition)].appendLine(record); !e.ok()) {
      return e;
    }
  }
  if (!single_) return {};
  return single_->appendLine(record);
}

base::Status RecordFiles::close() {
  base::Status last;
  for (auto& file : per_partition_) {
    if (auto e = file.close(); !e.ok()) last = std::move(e);
  }
  if (single_) {
    if (auto e = single_->close(); !e.ok()) last = std::move(e);
  }
  return last;
}

}  // namespace fraud::loadgen
