#pragma once

#include <string_view>

namespace fraud::api {

// The OpenAPI 3 document of the API: api/openapi.json, embedded at build time and served
// verbatim at GET /openapi.json.
[[nodiscard]] std::string_view openApiDocument();

}  // namespace fraud::api
