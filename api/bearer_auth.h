#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "api/router.h"
#include "detectors/base/mutex.h"

namespace fraud::api {

// The bearer token of /v1/* (docs/api.md, Authentication): held as its SHA-256 digest and
// compared in constant time. Thread-safe: check() and replace() from any thread; a check keeps
// the token it started with.
class BearerAuth {
 public:
  // No token: every request passes.
  explicit BearerAuth(const std::optional<std::string>& token);

  void replace(const std::string& token) FRAUD_EXCLUDES(mutex_);
  // Nothing when `request` may pass; else the 401 answer with its challenge.
  [[nodiscard]] std::optional<HttpResponse> check(const HttpRequest& request) const
      FRAUD_EXCLUDES(mutex_);

 private:
  using Digest = std::array<unsigned char, 32>;
  mutable base::Mutex mutex_;
  std::shared_ptr<const Digest> digest_ FRAUD_GUARDED_BY(mutex_);  // null: /v1/* is open
};

}  // namespace fraud::api
