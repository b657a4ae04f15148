#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/options.h"
#include "api/router.h"
#include "api/service_view.h"

namespace fraud::api {

class LookupAudit;

// Internal to api/: the two card endpoints once the request passed the token check:
// `POST /v1/cards/lookup` (a clear card in the body) and `GET /v1/cards/{card_ref}`. Checks the
// request, asks the view, builds the answer and writes each lookup's audit line.
//
// Two ways to ask the view, for the same answers: kBlocking calls lookup() / lookupHeld(), which
// may wait (a view thread); kInline calls tryLookupCached() / tryLookupHeldCached() and gives
// nothing when the view declines, with nothing audited (the blocking call that follows audits
// the request once). Inline, GET /v1/cards/{card_ref} answers only a found card: its other
// answers list partitions from status(), which waits on every task.
//
// Privacy (docs/rule.md §5): the clear card is read only to compute its card_ref and partition.
// Stateless; thread-safe as far as the view and the audit log are.
class CardLookups {
 public:
  enum class Access { kBlocking, kInline };

  // All three must outlive this object.
  CardLookups(const ApiOptions& options, const ServiceView& view, const LookupAudit& audit);

  // `matched` is kRouteCardLookup or kRouteCardByRef. Always an answer with kBlocking.
  [[nodiscard]] std::optional<HttpResponse> answer(const HttpRequest& request,
                                                   std::string_view matched, Access access) const;

 private:
  [[nodiscard]] std::optional<HttpResponse> byCard(const HttpRequest& request, Access access) const;
  [[nodiscard]] HttpResponse byCardAnswer(const HttpRequest& request, const CardLookup& found,
                                          const std::string& ref, int32_t partition,
                                          bool manual) const;
  [[nodiscard]] std::optional<HttpResponse> byRef(const HttpRequest& request,
                                                  std::string_view ref_text, Access access) const;
  // `manual`: the client asked for no redirect (X-Fraud-Redirect: manual): 421 with the
  // location instead of a 307.
  [[nodiscard]] HttpResponse notHeld(int32_t partition, bool manual) const;

  const ApiOptions& options_;
  const ServiceView& view_;
  const LookupAudit& audit_;
};

}  // namespace fraud::api
