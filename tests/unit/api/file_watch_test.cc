#include "api/file_watch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fraud::api {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with its content at the end.
class FileWatchTest : public ::testing::Test {
 protected:
  FileWatchTest() {
    std::string pattern = (fs::temp_directory_path() / "file-watch-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  ~FileWatchTest() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path(name), std::ios::binary | std::ios::trunc) << content;
  }

  fs::path dir_;
};

TEST_F(FileWatchTest, UnchangedFilesAreNotReported) {
  write("a", "one");
  FileWatch watch({path("a")});
  EXPECT_FALSE(watch.changed());
  EXPECT_FALSE(watch.changed());
}

TEST_F(FileWatchTest, ARewriteIsReportedOnce) {
  write("a", "one");
  FileWatch watch({path("a")});
  write("a", "two!");  // another size, mtime and ctime
  EXPECT_TRUE(watch.changed());
  EXPECT_FALSE(watch.changed());
}

TEST_F(FileWatchTest, AReplacementByRenameIsReported) {
  write("a", "one");
  FileWatch watch({path("a")});
  write("a.new", "two");
  fs::rename(path("a.new"), path("a"));  // as an atomic replace does: a new inode
  EXPECT_TRUE(watch.changed());
}

TEST_F(FileWatchTest, ASecretsSymlinkSwapIsReported) {
  // A Kubernetes Secret volume: tls.crt -> ..data/tls.crt, ..data -> ..2026_v1; an update writes
  // ..2026_v2 and renames a new ..data link over the old one.
  fs::create_directory(path("..v1"));
  std::ofstream(path("..v1/tls.crt")) << "v1";
  fs::create_directory_symlink("..v1", path("..data"));
  fs::create_symlink("..data/tls.crt", path("tls.crt"));
  FileWatch watch({path("tls.crt")});
  fs::create_directory(path("..v2"));
  std::ofstream(path("..v2/tls.crt")) << "v2";
  fs::create_directory_symlink("..v2", path("..data_tmp"));
  fs::rename(path("..data_tmp"), path("..data"));
  EXPECT_TRUE(watch.changed());
  EXPECT_FALSE(watch.changed());
}

TEST_F(FileWatchTest, ADeletedOrCreatedFileIsReported) {
  write("a", "one");
  FileWatch watch({path("a"), path("b")});
  fs::remove(path("a"));
  EXPECT_TRUE(watch.changed());
  EXPECT_FALSE(identify(path("a")).exists);
  write("b", "now");
  EXPECT_TRUE(watch.changed());
  EXPECT_TRUE(identify(path("b")).exists);
}

TEST_F(FileWatchTest, TokenFileLosesOneTrailingNewline) {
  write("token", "abc-DEF_0.9~+/==\n");
  EXPECT_EQ(readTokenFile(path("token")).valueOr(""), "abc-DEF_0.9~+/==");
  write("token", "abc");
  EXPECT_EQ(readTokenFile(path("token")).valueOr(""), "abc");
}

TEST_F(FileWatchTest, BadTokenFilesAreRefusedWithoutQuotingTheToken) {
  const auto missing = readTokenFile(path("missing"));
  EXPECT_FALSE(missing);
  EXPECT_NE(missing.message().find("cannot read"), std::string::npos) << missing.message();
  for (const std::string& content :
       {std::string(), std::string("\n"), std::string("s3cret word\n"), std::string("s3cret\n\n"),
        std::string(4097, 'a'), std::string(100'000, 'a')}) {
    write("token", content);
    const auto refused = readTokenFile(path("token"));
    EXPECT_FALSE(refused) << content.size();
    EXPECT_NE(refused.message(), "");
    EXPECT_EQ(refused.message().find("s3cret"), std::string::npos) << refused.message();
  }
  write("token", std::string(4096, 'a') + "\n");
  EXPECT_EQ(readTokenFile(path("token")).valueOr(""), std::string(4096, 'a'));
}

}  // namespace
}  // namespace fraud::api
