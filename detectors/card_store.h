#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>

#include "detectors/card_ref.h"
#include "detectors/card_state.h"

namespace fraud::detectors {

// Where one partition's card states live, as the detector sees them. The detector owns the
// rule; an implementation owns only storage (state/: in memory, or RocksDB behind a cache).
// Declared here, beside its only caller, so that detectors/ depends on nothing of ours.
//
// A pointer or reference returned by a call is valid until the next call on the store.
// Not thread-safe: one partition worker uses its store at a time.
//
// Failure contract: a store that cannot read what it holds (an I/O error, bytes that do not
// decode) throws CardStoreError from the call that met it, and nothing else but
// std::bad_alloc; the detector lets it through untouched. The caller then treats the
// partition's state as unknown (the live service rebuilds it from the changelog).
class CardStoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CardStore {
 public:
  virtual ~CardStore() = default;

  // The card's state, or nullptr when the card holds none.
  [[nodiscard]] virtual const CardState* find(const CardRef& card_ref) = 0;
  // The card's state for changing, empty when the card held none. The store treats the card as
  // changed from this call on.
  [[nodiscard]] virtual CardState& modify(const CardRef& card_ref) = 0;
  // Drops the card's state: it holds no events and no open incident.
  virtual void erase(const CardRef& card_ref) = 0;

  // A hint that `card_ref` is wanted soon, so a batch of records can overlap its memory
  // latency with other work. Changes nothing.
  virtual void prefetch(const CardRef& /*card_ref*/) {}
  // The next step of the same hint, for a store that reaches a card in more than one memory
  // access: called some time after prefetch(), it fetches what prefetch() found the way to.
  virtual void prefetchMore(const CardRef& /*card_ref*/) {}

  [[nodiscard]] virtual size_t cardCount() const = 0;
  // Visits every card held, in no particular order.
  virtual void forEach(const std::function<void(const CardRef&, const CardState&)>& visit) = 0;
};

}  // namespace fraud::detectors
