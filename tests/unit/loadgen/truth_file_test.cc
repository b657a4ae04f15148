#include "loadgen/truth_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace fraud::loadgen {
namespace {

class TruthFileTest : public ::testing::Test {
 protected:
  fraud::testing::TempDir dir_;
  std::string path_ = dir_.file("truth.jsonl");
};

TEST_F(TruthFileTest, LinesReadBackAsWritten) {
  const TruthScenario a{
      7, std::string(64, 'a'), 3, {"BR", "DE", "JP"}, {10, 20, 30}, {"x", "y", "z"}};
  const TruthScenario b{9, std::string(64, 'b'), 0, {"FR", "IT", "US", "ZA"}, {5}, {"w"}};
  {
    std::ofstream out(path_);
    out << truthLine(a) << "\n\n" << truthLine(b) << "\n";
  }
  const auto read = readTruthFile(path_);
  ASSERT_TRUE(read.ok()) << read.message();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].scenario, 7u);
  EXPECT_EQ((*read)[0].card_ref, a.card_ref);
  EXPECT_EQ((*read)[0].partition, 3);
  EXPECT_EQ((*read)[0].countries, a.countries);
  EXPECT_EQ((*read)[0].event_times, a.event_times);
  EXPECT_EQ((*read)[1].tx_ids, b.tx_ids);
}

TEST_F(TruthFileTest, ABadLineIsAnErrorNamingIt) {
  {
    std::ofstream out(path_);
    out << truthLine(TruthScenario{}) << "\n{\"scenario\":1}\n";
  }
  const auto read = readTruthFile(path_);
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find(":2:"), std::string::npos) << read.message();
}

TEST_F(TruthFileTest, AMissingFileIsAnError) {
  const auto read = readTruthFile(path_ + ".absent");
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find("absent"), std::string::npos);
}

TEST(TruthRecall, WindowBoundsAreInclusive) {
  const TruthScenario s{1, "r", 0, {}, {100, 200}, {}};
  EXPECT_TRUE(isRecalled(s, {AlertWindow{"r", 200, 800}}));
  EXPECT_TRUE(isRecalled(s, {AlertWindow{"r", 0, 100}}));
  EXPECT_FALSE(isRecalled(s, {AlertWindow{"r", 201, 800}}));
  EXPECT_FALSE(isRecalled(s, {AlertWindow{"other", 0, 800}}));
  EXPECT_FALSE(isRecalled(s, {}));
}

}  // namespace
}  // namespace fraud::loadgen
