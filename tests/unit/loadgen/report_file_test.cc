#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "loadgen/report.h"
#include "tests/unit/loadgen/report_samples.h"

namespace fraud::loadgen {
namespace {

class ReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "report-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(ReportFile, AddsTheVerdictToARunReport) {
  const auto page = dir_ / "report.html";
  const auto verify = dir_ / "verify.json";
  const auto written =
      writeReportFile(page.string(), renderReport(reportData(sampleRun(), {}, sampleTruth(), 0)));
  ASSERT_TRUE(written.ok()) << written.message();
  EXPECT_NE(read(page).find("not verified"), std::string::npos);
  write(verify, sampleVerify("pass", {}).dump(2));
  const auto added = addVerifyToReportFile(page.string(), verify.string());
  ASSERT_TRUE(added.ok()) << added.message();
  const std::string html = read(page);
  EXPECT_NE(html.find("verify: PASS"), std::string::npos);
  EXPECT_GT(dataPoints(html, "chart-rate"), 0);  // the run is still there
  EXPECT_FALSE(std::filesystem::exists(page.string() + ".tmp"));
}

TEST_F(ReportFile, StartsAReportWhenThereIsNone) {
  const auto page = dir_ / "new.html";
  const auto verify = dir_ / "verify.json";
  write(verify, sampleVerify("fail", {7}).dump());
  const auto added = addVerifyToReportFile(page.string(), verify.string());
  ASSERT_TRUE(added.ok()) << added.message();
  EXPECT_NE(read(page).find("verify: FAIL"), std::string::npos);
}

TEST_F(ReportFile, NeverOverwritesAnotherFile) {
  const auto page = dir_ / "notes.html";
  const auto verify = dir_ / "verify.json";
  write(page, "<p>my notes</p>");
  write(verify, sampleVerify("pass", {}).dump());
  const auto added = addVerifyToReportFile(page.string(), verify.string());
  EXPECT_FALSE(added.ok());
  EXPECT_NE(added.message().find("is not a fraud-loadgen report"), std::string::npos);
  EXPECT_EQ(read(page), "<p>my notes</p>");
}

TEST_F(ReportFile, RefusesAVerifyFileThatIsNotJson) {
  const auto page = dir_ / "report.html";
  const auto verify = dir_ / "verify.json";
  write(verify, "fraud-loadgen verify: cannot connect");
  const auto not_json = addVerifyToReportFile(page.string(), verify.string());
  EXPECT_FALSE(not_json.ok());
  EXPECT_NE(not_json.message().find("is not JSON"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(page));
  const auto absent = addVerifyToReportFile(page.string(), (dir_ / "absent.json").string());
  EXPECT_FALSE(absent.ok());
  EXPECT_NE(absent.message().find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace fraud::loadgen
