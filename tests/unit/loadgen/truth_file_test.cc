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
  std::string error;
  const auto read = readTruthFile(path_, error);
  ASSERT_TRUE(read.has_value()) << error;
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
  std::string error;
  EXPECT_FALSE(readTruthFile(path_, error).has_value());
  EXPECT_NE(error.find(":2:"), std::string::npos) << error;
}

TEST_F(TruthFileTest, AMissingFileIsAnError) {
  std::string error;
  EXPECT_FALSE(readTruthFile(path_ + ".absent", error).has_value());
  EXPECT_NE(error.find("absent"), std::string::npos);
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
