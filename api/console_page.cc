#include "api/console_page.h"

#include "api/json_views.h"

namespace fraud::api {
namespace {

constexpr std::string_view kPrefix = "/ui/";

void harden(HttpResponse& response) {
  response.headers.emplace_back("Content-Security-Policy", kConsoleCsp);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
}

}  // namespace

HttpResponse consoleFile(std::string_view path) {
  std::string_view name = path.substr(path.starts_with(kPrefix) ? kPrefix.size() : path.size());
  if (name.empty()) name = "index.html";
  for (const ConsoleAsset& asset : consoleAssets()) {
    if (asset.name == name) {
      HttpResponse response;
      response.content_type = std::string(asset.content_type);
      response.body = std::string(asset.body);
      harden(response);
      return response;
    }
  }
  HttpResponse response = json_views::error(404, "not_found", "no such console file");
  harden(response);
  return response;
}

}  // namespace fraud::api
