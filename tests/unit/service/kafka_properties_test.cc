#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/kafka/properties.h"
#include "tests/support/temp_dir.h"

namespace fraud::kafka {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(KafkaProperties, ReadsWhatAJavaClientPropertiesFileHolds) {
  const auto result = parseProperties(
      "# a comment\n"
      "! another comment\n"
      "\n"
      "   \t\n"
      "bootstrap.servers=kafka-0:9092,kafka-1:9092\n"
      "  security.protocol = SASL_SSL  \r\n"
      "sasl.mechanism: SCRAM-SHA-512\n"
      "sasl.username=user\n"
      "sasl.password=p=ss:word#1\n"
      "ssl.ca.location=/etc/ca\\\n"
      "    /bundle.pem\n"
      "client.id=\n",
      "kafka.properties");
  EXPECT_THAT(result.problems, IsEmpty());
  const KafkaProperties expected = {{"bootstrap.servers", "kafka-0:9092,kafka-1:9092"},
                                    {"security.protocol", "SASL_SSL"},
                                    {"sasl.mechanism", "SCRAM-SHA-512"},
                                    {"sasl.username", "user"},
                                    {"sasl.password", "p=ss:word#1"},
                                    {"ssl.ca.location", "/etc/ca/bundle.pem"},
                                    {"client.id", ""}};
  EXPECT_EQ(result.properties, expected);
}

TEST(KafkaProperties, EscapesAndRepeatedKeysAsJava) {
  const auto result = parseProperties("a\\=b=c\\:d\nlinger.ms=5\nlinger.ms=20\ntab=x\\ty\n", "f");
  EXPECT_THAT(result.problems, IsEmpty());
  EXPECT_EQ(result.properties.at("a=b"), "c:d");
  EXPECT_EQ(result.properties.at("linger.ms"), "20");  // the last wins
  EXPECT_EQ(result.properties.at("tab"), "x\ty");
}

TEST(KafkaProperties, BadLinesAreProblemsWithTheirLineNumbers) {
  const auto result = parseProperties(
      "good=1\n"
      "no separator here\n"
      "=value\n"
      "two words=x\n"
      "u=\\u00e9\n"
      "also.good: 2\n"
      "caf\\u00e9=1\n",
      "/etc/kafka.properties");
  EXPECT_THAT(result.problems,
              ElementsAre(HasSubstr("/etc/kafka.properties:2: expected key=value"),
                          HasSubstr("/etc/kafka.properties:3: the key before '=' is empty"),
                          HasSubstr("/etc/kafka.properties:4: the key 'two words' has blanks"),
                          HasSubstr("/etc/kafka.properties:5: \\u escapes are not supported"),
                          HasSubstr("/etc/kafka.properties:7: \\u escapes are not supported")));
  EXPECT_EQ(result.properties, (KafkaProperties{{"good", "1"}, {"also.good", "2"}}));
}

TEST(KafkaProperties, FileIsReadAndAMissingOneIsAProblem) {
  fraud::testing::TempDir dir;
  const auto read = readPropertiesFile(dir.write("k.properties", "acks=all\n"));
  EXPECT_THAT(read.problems, IsEmpty());
  EXPECT_EQ(read.properties.at("acks"), "all");
  const auto missing = readPropertiesFile(dir.file("absent.properties"));
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_THAT(missing.problems[0], HasSubstr("absent.properties"));
}

TEST(KafkaProperties, OverrideFlagSplitsAtTheFirstEquals) {
  EXPECT_EQ(parseProperty(" sasl.password = a=b "),
            (std::pair<std::string, std::string>{"sasl.password", "a=b"}));
  EXPECT_FALSE(parseProperty("novalue"));
  EXPECT_FALSE(parseProperty("=x"));
}

}  // namespace
}  // namespace fraud::kafka
