#pragma once

#include "detectors/card_store.h"
#include "state/card_map.h"

namespace fraud::state {

// Card states in memory: for `replay`, offline verification and tests.
class MemoryCardStore final : public detectors::CardStore {
 public:
  [[nodiscard]] const detectors::CardState* find(const detectors::CardRef& card_ref) override {
    return cards_.find(card_ref);
  }
  [[nodiscard]] detectors::CardState& modify(const detectors::CardRef& card_ref) override {
    bool inserted = false;
    return cards_.insert(card_ref, inserted);
  }
  void erase(const detectors::CardRef& card_ref) override { cards_.erase(card_ref); }
  void prefetch(const detectors::CardRef& card_ref) override { cards_.prefetch(card_ref); }
  void prefetchMore(const detectors::CardRef& card_ref) override { cards_.prefetchEntry(card_ref); }
  [[nodiscard]] size_t cardCount() const override { return cards_.size(); }
  void forEach(const std::function<void(const detectors::CardRef&, const detectors::CardState&)>&
                   visit) override {
    cards_.forEach(visit);
  }

 private:
  CardMap<detectors::CardState> cards_;
};

}  // namespace fraud::state
