#include "state/memory_card_store.h"

namespace fraud::state {

const detectors::CardState* MemoryCardStore::find(const detectors::CardRef& card_ref) {
  const auto it = cards_.find(card_ref);
  return it == cards_.end() ? nullptr : &it->second;
}

detectors::CardState& MemoryCardStore::modify(const detectors::CardRef& card_ref) {
  return cards_[card_ref];
}

void MemoryCardStore::erase(const detectors::CardRef& card_ref) { cards_.erase(card_ref); }

void MemoryCardStore::forEach(
    const std::function<void(const detectors::CardRef&, const detectors::CardState&)>& visit) {
  for (const auto& [ref, state] : cards_) visit(ref, state);
}

}  // namespace fraud::state
