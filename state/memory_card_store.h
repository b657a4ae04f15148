#pragma once

#include <unordered_map>

#include "detectors/card_store.h"

namespace fraud::state {

// Card states in a hash map: for `replay`, offline verification and tests.
class MemoryCardStore final : public detectors::CardStore {
 public:
  [[nodiscard]] const detectors::CardState* find(const detectors::CardRef& card_ref) override;
  [[nodiscard]] detectors::CardState& modify(const detectors::CardRef& card_ref) override;
  void erase(const detectors::CardRef& card_ref) override;
  [[nodiscard]] size_t cardCount() const override { return cards_.size(); }
  void forEach(const std::function<void(const detectors::CardRef&, const detectors::CardState&)>&
                   visit) override;

 private:
  std::unordered_map<detectors::CardRef, detectors::CardState, detectors::CardRefHash> cards_;
};

}  // namespace fraud::state
