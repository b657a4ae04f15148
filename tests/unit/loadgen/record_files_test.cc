// The loadgen's output files (record files, the truth file through BufferedFile) are owner-only.
#include "loadgen/record_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fraud::loadgen {
namespace {

class RecordFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/record-files-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    // The usual umask, which alone would leave new files readable by everyone.
    saved_umask_ = ::umask(022);
  }
  void TearDown() override {
    ::umask(saved_umask_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static mode_t modeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  }
  std::string dir_;
  mode_t saved_umask_ = 0;
};

TEST_F(RecordFilesTest, PartitionFilesTheSingleFileAndTheirDirectoryAreOwnerOnly) {
  const std::string out = dir_ + "/tx";
  const std::string single = dir_ + "/all.jsonl";
  RecordFiles files;
  ASSERT_TRUE(files.open(out, single, 3).ok());
  ASSERT_TRUE(files.append(1, R"({"card":"0012345678901234"})").ok());
  ASSERT_TRUE(files.close().ok());
  EXPECT_EQ(modeOf(out), 0700u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(modeOf(out + "/" + RecordFiles::partitionFileName(p)), 0600u) << p;
  }
  EXPECT_EQ(modeOf(single), 0600u);
}

TEST_F(RecordFilesTest, AnExistingWorldReadableFileIsNarrowedBeforeItIsWritten) {
  const std::string path = dir_ + "/truth.jsonl";
  std::ofstream(path) << "old\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  BufferedFile file;
  ASSERT_TRUE(file.open(path).ok());
  EXPECT_EQ(modeOf(path), 0600u);
  ASSERT_TRUE(file.appendLine("new").ok());
  ASSERT_TRUE(file.close().ok());
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "new");
}

TEST_F(RecordFilesTest, AnExistingDirectoryKeepsItsMode) {
  const std::string out = dir_ + "/shared";
  ASSERT_TRUE(std::filesystem::create_directory(out));
  ASSERT_EQ(::chmod(out.c_str(), 0750), 0);
  RecordFiles files;
  ASSERT_TRUE(files.open(out, "", 1).ok());
  ASSERT_TRUE(files.close().ok());
  EXPECT_EQ(modeOf(out), 0750u);
  EXPECT_EQ(modeOf(out + "/" + RecordFiles::partitionFileName(0)), 0600u);
}

TEST_F(RecordFilesTest, DevicesAreWrittenWithoutTouchingTheirMode) {
  const mode_t before = modeOf("/dev/null");
  BufferedFile file;
  ASSERT_TRUE(file.open("/dev/null").ok());
  ASSERT_TRUE(file.appendLine("x").ok());
  ASSERT_TRUE(file.close().ok());
  EXPECT_EQ(modeOf("/dev/null"), before);
}

}  // namespace
}  // namespace fraud::loadgen
