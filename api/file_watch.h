#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "detectors/base/status.h"

namespace fraud::api {

// What identifies one version of a file: a rewrite changes its size, mtime or ctime, and a
// replacement (an atomic rename, a Kubernetes Secret's `..data` symlink swap) its inode.
struct FileIdentity {
  bool exists = false;
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// stat(2) of `path`, following symlinks; `exists` is false when it cannot be stat'ed.
[[nodiscard]] FileIdentity identify(const std::string& path);

// Watches a set of files for a new version, by polling (no inotify: it misses a Secret's
// symlink swap and works on no other platform). Not thread-safe.
class FileWatch {
 public:
  // Records the files' identities now.
  explicit FileWatch(std::vector<std::string> paths);
  // True when any file's identity differs from the one last recorded; records the new ones, so
  // one change is reported once.
  [[nodiscard]] bool changed();
  [[nodiscard]] const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
  std::vector<FileIdentity> seen_;
};

// A bearer token as the service reads it from --api-token-file: the file's content less one
// trailing newline. An error saying why when the file cannot be read or the token breaks
// ApiOptions' rules (the token is never quoted in the error).
[[nodiscard]] base::Result<std::string> readTokenFile(const std::string& path);

}  // namespace fraud::api
