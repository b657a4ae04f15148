#include "detectors/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace fraud::testing {
namespace {

using base::Result;
using base::Status;
using base::StatusCode;

TEST(Status, DefaultIsOkWithNoMessage) {
  const Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
}

TEST(Status, AnErrorKeepsItsCodeAndMessage) {
  EXPECT_EQ(Status::failed("a").code(), StatusCode::kFailed);
  EXPECT_EQ(Status::invalidArgument("b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Status::notFound("c").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::unavailable("d").code(), StatusCode::kUnavailable);
  const Status io = Status::ioError("RocksDB: IO error: disk full");
  EXPECT_FALSE(io.ok());
  EXPECT_EQ(io.code(), StatusCode::kIoError);
  EXPECT_EQ(io.message(), "RocksDB: IO error: disk full");
}

TEST(Status, PrefixAndSuffixKeepTheCodeAndLeaveOkAlone) {
  const Status status = Status::unavailable("broker unreachable");
  const Status longer = status.withPrefix("Kafka: ").withSuffix(" at k:9092");
  EXPECT_EQ(longer.code(), StatusCode::kUnavailable);
  EXPECT_EQ(longer.message(), "Kafka: broker unreachable at k:9092");
  EXPECT_TRUE(Status().withPrefix("Kafka: ").ok());
  EXPECT_EQ(Status().withSuffix(" at k").message(), "");
}

TEST(Status, ComparesByCodeAndMessage) {
  EXPECT_EQ(Status(), Status());
  EXPECT_EQ(Status::notFound("x"), Status::notFound("x"));
  EXPECT_NE(Status::notFound("x"), Status::failed("x"));
  EXPECT_NE(Status::notFound("x"), Status::notFound("y"));
}

// Ignoring either is a compile error under -Werror (-Wunused-result); this only checks the
// attribute is where the compiler looks for it, on the class.
Status makeError() { return Status::failed("dropped"); }
TEST(Status, CanBeDroppedOnPurpose) { makeError().ignoreError(); }

TEST(Result, HoldsAValue) {
  Result<int> result = 3;
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(static_cast<bool>(result));
  EXPECT_EQ(*result, 3);
  EXPECT_EQ(result.value(), 3);
  EXPECT_TRUE(result.status().ok());
  EXPECT_EQ(result.code(), StatusCode::kOk);
  EXPECT_EQ(result.message(), "");
  EXPECT_EQ(result.valueOr(7), 3);
}

TEST(Result, HoldsAnError) {
  const Result<int> result = Status::notFound("topic t does not exist");
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(result.code(), StatusCode::kNotFound);
  EXPECT_EQ(result.message(), "topic t does not exist");
  EXPECT_EQ(result.status(), Status::notFound("topic t does not exist"));
  EXPECT_EQ(result.valueOr(7), 7);
  EXPECT_THROW((void)result.value(), std::bad_variant_access);
}

TEST(Result, MovesAValueOutThatOnlyMoves) {
  Result<std::unique_ptr<int>> result = std::make_unique<int>(5);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(**result, 5);
  const std::unique_ptr<int> taken = std::move(result).value();
  EXPECT_EQ(*taken, 5);
}

TEST(Result, ReachesTheValuesMembers) {
  Result<std::vector<int>> result = std::vector<int>{1, 2};
  EXPECT_EQ(result->size(), 2u);
  result->push_back(3);
  EXPECT_EQ(result.value().back(), 3);
}

TEST(Result, AStringResultTakesAStringNotAStatus) {
  const Result<std::string> value = std::string("x");
  EXPECT_TRUE(value.ok());
  const Result<std::string> error = Status::failed("x");
  EXPECT_FALSE(error.ok());
  static_assert(!std::is_convertible_v<Result<int>, Status>);
}

#ifdef NDEBUG
TEST(Result, MadeFromAnOkStatusIsAnErrorInRelease) {
  const Result<int> result = Status();
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.code(), StatusCode::kFailed);
  EXPECT_EQ(result.message(), "bug: a Result made from an ok Status");
}
#endif

}  // namespace
}  // namespace fraud::testing
