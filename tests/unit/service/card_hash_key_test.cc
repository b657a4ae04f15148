#include "service/card_hash_key.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

namespace fraud::service {
namespace {

std::string writeFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(CardHashKey, FileLosesExactlyOneTrailingNewline) {
  std::string error;
  ::unsetenv(kCardHashKeyEnv);
  auto key = loadCardHashKey(writeFile("k1", "secret\n\n"), error);
  ASSERT_TRUE(key) << error;
  EXPECT_EQ(key->bytes, "secret\n");
  key = loadCardHashKey(writeFile("k2", " spaced \r\n"), error);
  ASSERT_TRUE(key) << error;
  EXPECT_EQ(key->bytes, " spaced \r");
}

TEST(CardHashKey, FileWinsOverEnvironment) {
  std::string error;
  ::setenv(kCardHashKeyEnv, "from-env", 1);
  auto key = loadCardHashKey(writeFile("k3", "from-file"), error);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->bytes, "from-file");
  key = loadCardHashKey(std::nullopt, error);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->bytes, "from-env");
  ::unsetenv(kCardHashKeyEnv);
}

TEST(CardHashKey, MissingOrEmptyKeyIsRefusedWithAClearMessage) {
  std::string error;
  ::unsetenv(kCardHashKeyEnv);
  EXPECT_FALSE(loadCardHashKey(std::nullopt, error));
  EXPECT_NE(error.find("FRAUD_CARD_HASH_KEY"), std::string::npos);
  EXPECT_FALSE(loadCardHashKey(writeFile("k4", "\n"), error));
  EXPECT_NE(error.find("empty"), std::string::npos);
  EXPECT_FALSE(loadCardHashKey(std::string("/nonexistent/key"), error));
  EXPECT_NE(error.find("/nonexistent/key"), std::string::npos);
  ::setenv(kCardHashKeyEnv, "", 1);
  EXPECT_FALSE(loadCardHashKey(std::nullopt, error));
  ::unsetenv(kCardHashKeyEnv);
}

}  // namespace
}  // namespace fraud::service
