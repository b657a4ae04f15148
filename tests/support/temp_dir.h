#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fraud::testing {

// A fresh directory of its own under the test temp dir (TEST_TMPDIR or /tmp), removed with
// everything in it when the object goes: tests leave no files behind, and two tests (or two runs
// at once) never share a path.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "fraud-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "cannot create a temp dir from " << pattern;
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // `name` inside the directory, as a string.
  [[nodiscard]] std::string file(std::string_view name) const { return (path_ / name).string(); }
  // Writes `content` (bytes as they are) to `name` and returns its path.
  std::string write(std::string_view name, std::string_view content) const {
    const std::string path = file(name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace fraud::testing
