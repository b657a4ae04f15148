#include "api/file_watch.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "api/options.h"

namespace fraud::api {

FileIdentity identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  FileIdentity identity;
  identity.exists = true;
  identity.device = static_cast<uint64_t>(st.st_dev);
  identity.inode = static_cast<uint64_t>(st.st_ino);
  identity.size = static_cast<int64_t>(st.st_size);
  identity.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  identity.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  return identity;
}

FileWatch::FileWatch(std::vector<std::string> paths) : paths_(std::move(paths)) {
  for (const auto& path : paths_) seen_.push_back(identify(path));
}

bool FileWatch::changed() {
  bool any = false;
  for (size_t i = 0; i < paths_.size(); ++i) {
    FileIdentity now = identify(paths_[i]);
    if (now != seen_[i]) {
      seen_[i] = now;
      any = true;
    }
  }
  return any;
}

base::Result<std::string> readTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return base::Status::failed("cannot read the API token file '" + path +
                                "': " + std::strerror(errno));
  }
  // Two bytes more than a token may have (its newline, then one too many), so an oversized file is
  // refused without reading it all.
  constexpr size_t kMaxRead = kMaxApiTokenBytes + 2;
  std::string token(kMaxRead, '\0');
  in.read(token.data(), static_cast<std::streamsize>(kMaxRead));
  token.resize(static_cast<size_t>(in.gcount()));
  if (token.ends_with('\n')) token.pop_back();
  if (const base::Status checked = checkApiToken(token); !checked.ok()) {
    return base::Status::failed("the API token in '" + path + "' " + checked.message());
  }
  return token;
}

}  // namespace fraud::api
