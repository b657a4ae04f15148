#pragma once

// The project's one error type (after RocksDB's Status and std::expected, which GCC 12's C++20
// lacks): a Status is ok, or an error with the message a log line or a caller shows and a code
// for the few cases a caller branches on; a Result<T> holds a T or an error Status. Both are
// [[nodiscard]]: a call whose Status is dropped does not compile (-Werror); to drop one on
// purpose, say why and call ignoreError().
//
// Expected bad input and failing dependencies are a Status; a broken invariant is an assertion
// (docs/development.md, "One error type").

#include <cassert>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace fraud::base {

// Only the kinds some caller tells apart; every other error is kFailed.
enum class StatusCode {
  kOk,
  // A failure no caller tells apart from another (the broker refused a request, ...).
  kFailed,
  // Configuration or arguments refused (a librdkafka property, a secret): exit 2, not 1.
  kInvalidArgument,
  // What was asked for does not exist (a topic: the changelog topic is then created).
  kNotFound,
  // A dependency did not answer (no broker reachable, a request timed out): creating or
  // retrying the thing asked for would not help now.
  kUnavailable,
  // The disk or RocksDB failed (reading or writing state, a file).
  kIoError,
};

class [[nodiscard]] Status {
 public:
  // Ok.
  Status() = default;
  // An error: `code` must not be kOk.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
    assert(code != StatusCode::kOk && "an error Status needs an error code");
    if (code_ == StatusCode::kOk) code_ = StatusCode::kFailed;
  }

  [[nodiscard]] static Status failed(std::string message) {
    return {StatusCode::kFailed, std::move(message)};
  }
  [[nodiscard]] static Status invalidArgument(std::string message) {
    return {StatusCode::kInvalidArgument, std::move(message)};
  }
  [[nodiscard]] static Status notFound(std::string message) {
    return {StatusCode::kNotFound, std::move(message)};
  }
  [[nodiscard]] static Status unavailable(std::string message) {
    return {StatusCode::kUnavailable, std::move(message)};
  }
  [[nodiscard]] static Status ioError(std::string message) {
    return {StatusCode::kIoError, std::move(message)};
  }

  [[nodiscard]] bool ok() const { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const { return code_; }
  // Empty when ok.
  [[nodiscard]] const std::string& message() const { return message_; }

  // The same error with `prefix` before its message ("Kafka client: " + message); ok stays ok.
  [[nodiscard]] Status withPrefix(std::string_view prefix) const& {
    return ok() ? Status() : Status(code_, std::string(prefix) + message_);
  }
  // The same error with `suffix` after its message; ok stays ok.
  [[nodiscard]] Status withSuffix(std::string_view suffix) const& {
    return ok() ? Status() : Status(code_, message_ + std::string(suffix));
  }

  // Drops this status on purpose (the caller's comment says why).
  void ignoreError() const {}

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A T, or the error Status that stopped it (never an ok Status).
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "Result<Status>: use Status");

 public:
  // A value: anything T is made from.
  template <typename U = T, std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                 !std::is_same_v<std::remove_cvref_t<U>, Result> &&
                                                 !std::is_same_v<std::remove_cvref_t<U>, Status>,
                                             int> = 0>
  Result(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  // An error. An ok Status here is a bug: it fails fast in a debug build and is kept as a
  // kFailed error in release, never as a value nobody made.
  Result(Status status) : state_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(state_).ok() && "a Result made from an ok Status");
    if (std::get<1>(state_).ok()) {
      std::get<1>(state_) = Status::failed("bug: a Result made from an ok Status");
    }
  }

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Ok when it holds a value, else the error.
  [[nodiscard]] Status status() const { return ok() ? Status() : std::get<1>(state_); }
  // The error's message; empty when it holds a value.
  [[nodiscard]] const std::string& message() const {
    static const std::string kNone;
    return ok() ? kNone : std::get<1>(state_).message();
  }
  [[nodiscard]] StatusCode code() const {
    return ok() ? StatusCode::kOk : std::get<1>(state_).code();
  }

  // The value; calling these on an error throws std::bad_variant_access.
  [[nodiscard]] T& value() & { return std::get<0>(state_); }
  [[nodiscard]] const T& value() const& { return std::get<0>(state_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(state_)); }
  [[nodiscard]] T& operator*() & { return value(); }
  [[nodiscard]] const T& operator*() const& { return value(); }
  [[nodiscard]] T&& operator*() && { return std::move(*this).value(); }
  [[nodiscard]] T* operator->() { return &value(); }
  [[nodiscard]] const T* operator->() const { return &value(); }

  // Drops the value or error on purpose (the caller's comment says why).
  void ignoreError() const {}

  // The value, or `fallback` on an error.
  template <typename U>
  [[nodiscard]] T valueOr(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace fraud::base
