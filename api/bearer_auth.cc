#include "api/bearer_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "api/http_text.h"
#include "api/json_views.h"

namespace fraud::api {
namespace {

std::array<unsigned char, 32> sha256(std::string_view data) {
  std::array<unsigned char, 32> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return digest;
}

}  // namespace

BearerAuth::BearerAuth(const std::optional<std::string>& token) {
  if (token) digest_ = std::make_shared<const Digest>(sha256(*token));
}

void BearerAuth::replace(const std::string& token) {
  auto digest = std::make_shared<const Digest>(sha256(token));
  base::MutexLock lock(mutex_);
  digest_ = std::move(digest);
}

std::optional<HttpResponse> BearerAuth::check(const HttpRequest& request) const {
  std::shared_ptr<const Digest> expected;
  {
    base::MutexLock lock(mutex_);
    expected = digest_;
  }
  if (!expected) return std::nullopt;
  const auto authorization = request.header("authorization");
  std::string_view error_code;
  if (authorization) {
    const std::string_view value = http_text::trim(*authorization);
    const size_t space = value.find(' ');
    const bool bearer = space != std::string_view::npos &&
                        http_text::equalsIgnoreCase(value.substr(0, space), "bearer");
    if (bearer) {
      const auto presented = sha256(http_text::trim(value.substr(space)));
      // Constant time: comparing digests hides the token's length and content.
      if (CRYPTO_memcmp(presented.data(), expected->data(), presented.size()) == 0) {
        return std::nullopt;
      }
    }
    error_code = bearer ? "invalid_token" : "invalid_request";
  }
  HttpResponse response =
      json_views::error(401, "unauthorized", "this endpoint needs a bearer token");
  std::string challenge = "Bearer realm=\"fraud-detector\"";
  if (!error_code.empty()) challenge += ", error=\"" + std::string(error_code) + "\"";
  response.headers.emplace_back("WWW-Authenticate", std::move(challenge));
  return response;
}

}  // namespace fraud::api
