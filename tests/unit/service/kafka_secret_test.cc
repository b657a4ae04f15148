#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "service/kafka/secret.h"
#include "tests/support/temp_dir.h"

namespace fraud::kafka {
namespace {

using ::testing::HasSubstr;

// A refused secret's message (refused as bad configuration, kInvalidArgument).
std::string refusal(const base::Result<Secret>& secret) {
  EXPECT_FALSE(secret.ok());
  EXPECT_EQ(secret.code(), base::StatusCode::kInvalidArgument);
  return secret.message();
}

// 64 hex characters, as `openssl rand -hex 32` makes.
constexpr const char* kKey = "3f1c9a7e5b2d4f6081a3c5e7f9b1d3f5a7c9e1b3d5f7092b4d6f8a0c2e4a6c8e";

class CardHashKey : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv(kCardHashKeyEnv); }
  void TearDown() override { ::unsetenv(kCardHashKeyEnv); }
  fraud::testing::TempDir dir_;
};

TEST_F(CardHashKey, FileLosesExactlyOneTrailingNewline) {
  auto key = loadCardHashKey(dir_.write("k1", std::string(kKey) + "\n\n"));
  ASSERT_TRUE(key) << key.message();
  EXPECT_EQ(key->bytes, std::string(kKey) + "\n");
  key = loadCardHashKey(dir_.write("k2", std::string(" ") + kKey + " \r\n"));
  ASSERT_TRUE(key) << key.message();
  EXPECT_EQ(key->bytes, std::string(" ") + kKey + " \r");
}

TEST_F(CardHashKey, FileWinsOverEnvironment) {
  const std::string from_env = std::string(kKey) + "-env";
  ::setenv(kCardHashKeyEnv, from_env.c_str(), 1);
  auto key = loadCardHashKey(dir_.write("k3", kKey));
  ASSERT_TRUE(key) << key.message();
  EXPECT_EQ(key->bytes, kKey);
  key = loadCardHashKey(std::nullopt);
  ASSERT_TRUE(key) << key.message();
  EXPECT_EQ(key->bytes, from_env);
  EXPECT_EQ(key->source, kCardHashKeyEnv);
}

TEST_F(CardHashKey, MissingOrEmptyKeyIsRefusedWithAClearMessage) {
  std::string error;
  EXPECT_TRUE(cardHashKeyAbsent(std::nullopt));
  error = refusal(loadCardHashKey(std::nullopt));
  EXPECT_THAT(error, HasSubstr("FRAUD_CARD_HASH_KEY"));
  error = refusal(loadCardHashKey(dir_.write("k4", "\n")));
  EXPECT_THAT(error, HasSubstr("empty"));
  error = refusal(loadCardHashKey(std::string("/nonexistent/key")));
  EXPECT_THAT(error, HasSubstr("/nonexistent/key"));
  ::setenv(kCardHashKeyEnv, "", 1);
  EXPECT_FALSE(cardHashKeyAbsent(std::nullopt));
  error = refusal(loadCardHashKey(std::nullopt));
}

// Issue 10: a lookup shows card -> card_ref pairs, so a short key can be brute-forced.
TEST_F(CardHashKey, KeyShorterThan32BytesIsRefusedSayingWhyAndHow) {
  std::string error;
  const std::string short_key(31, 'k');
  error = refusal(loadCardHashKey(dir_.write("short", short_key + "\n")));
  EXPECT_THAT(error, HasSubstr("31 bytes"));
  EXPECT_THAT(error, HasSubstr("at least 32"));
  EXPECT_THAT(error, HasSubstr("brute force"));
  EXPECT_THAT(error, HasSubstr("openssl rand -hex 32"));
  EXPECT_THAT(error, ::testing::Not(HasSubstr(short_key)));  // never the secret itself
  ::setenv(kCardHashKeyEnv, "one-byte-is-not-a-key", 1);
  error = refusal(loadCardHashKey(std::nullopt));
  EXPECT_THAT(error, HasSubstr(kCardHashKeyEnv));
  const std::string exact(32, 'k');
  auto key = loadCardHashKey(dir_.write("exact", exact));
  ASSERT_TRUE(key) << key.message();
  EXPECT_EQ(key->bytes, exact);
}

TEST_F(CardHashKey, OtherSecretsHaveNoLengthRule) {
  const auto token =
      loadSecret(dir_.write("token", "t\n"), "--api-token-file", "FRAUD_API_TOKEN", "API token");
  ASSERT_TRUE(token) << token.message();
  EXPECT_EQ(token->bytes, "t");
}

}  // namespace
}  // namespace fraud::kafka
