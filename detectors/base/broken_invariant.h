#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fraud::base {

// The invariants whose breach the code can see at run time. A breach is a bug: where the code
// can go on, a debug build fails fast at the breach (the caller asserts) and a release build
// logs it as `bug: ...`, goes on and counts it here, process-wide, so that a metric says it
// happened (fraud_broken_invariants_total, docs/development.md "One error type").
enum class Invariant : uint8_t {
  kTaskCommitPhase,    // PartitionTask::moveTo(): a step its phase diagram does not draw
  kOutputLifecycle,    // TransactionalOutput::moveTo() and its calls: a step its diagram does not
                       // draw
  kCardStoreUnclosed,  // a LiveCardStore its owner never closed, whose final write then failed
};
inline constexpr size_t kInvariantCount = 3;

// The invariant's name in the metric's `invariant` label.
[[nodiscard]] constexpr std::string_view invariantName(Invariant invariant) {
  switch (invariant) {
    case Invariant::kTaskCommitPhase:
      return "task_commit_phase";
    case Invariant::kOutputLifecycle:
      return "output_lifecycle";
    case Invariant::kCardStoreUnclosed:
      return "card_store_unclosed";
  }
  return "unknown";
}

namespace internal {
inline std::array<std::atomic<uint64_t>, kInvariantCount> broken_invariants{};
}  // namespace internal

// Breaches counted since the process started. Safe from any thread.
[[nodiscard]] inline uint64_t brokenInvariantCount(Invariant invariant) {
  return internal::broken_invariants[static_cast<size_t>(invariant)].load(
      std::memory_order_relaxed);
}

// Counts a breach. The caller logs it (this library logs nothing) and, where a debug build must
// stop there, asserts after it. Safe from any thread.
inline void countBrokenInvariant(Invariant invariant) {
  internal::broken_invariants[static_cast<size_t>(invariant)].fetch_add(1,
                                                                        std::memory_order_relaxed);
}

}  // namespace fraud::base
