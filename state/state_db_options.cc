#include "state/state_db_options.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace fraud::state {

std::vector<std::string> StateDbOptions::validate() const {
  std::vector<std::string> problems;
  if (dir.empty()) problems.emplace_back("state dir must not be empty");
  if (block_cache_mb < 8 || block_cache_mb > 1'048'576) {
    problems.push_back("rocksdb block cache must be 8..1048576 MiB, got " +
                       std::to_string(block_cache_mb));
  }
  if (write_buffer_mb < 4 || write_buffer_mb > 1'048'576) {
    problems.push_back("rocksdb write buffer must be 4..1048576 MiB, got " +
                       std::to_string(write_buffer_mb));
  }
  if (card_cache_mb < 1 || card_cache_mb > 1'048'576) {
    problems.push_back("state cache must be 1..1048576 MiB, got " + std::to_string(card_cache_mb));
  }
  if (restore_buffer_mb < 1 || restore_buffer_mb > 1'048'576) {
    problems.push_back("restore buffer must be 1..1048576 MiB, got " +
                       std::to_string(restore_buffer_mb));
  }
  return problems;
}

base::Status StateDbOptions::checkDir() const {
  namespace fs = std::filesystem;
  if (dir.empty()) return {};
  // The path itself when it exists, else the nearest directory above it that does.
  fs::path at(dir);
  while (true) {
    std::error_code ec;
    const fs::file_status status = fs::status(at, ec);
    if (fs::is_directory(status)) break;
    const bool self = at == fs::path(dir);
    if (fs::exists(status)) {
      if (self) return base::Status::failed(dir + " is not a directory");
      return base::Status::failed(dir + " cannot be created: " + at.string() +
                                  " is not a directory");
    }
    if (status.type() != fs::file_type::not_found) {  // e.g. a parent that may not be searched
      return base::Status::failed(dir + " cannot be looked at: " + at.string() + ": " +
                                  ec.message());
    }
    fs::path parent = at.parent_path();
    if (parent.empty()) parent = ".";
    if (parent == at)
      return base::Status::failed(dir + " cannot be created: " + at.string() + " does not exist");
    at = std::move(parent);
  }
  const fs::path probe = at / (".fraud-detector-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    const std::string reason = std::error_code(errno, std::generic_category()).message();
    if (at == fs::path(dir))
      return base::Status::failed(dir + " is not writable: cannot create a file in it: " + reason);
    return base::Status::failed(dir + " cannot be created in " + at.string() + ": " + reason);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

}  // namespace fraud::state
