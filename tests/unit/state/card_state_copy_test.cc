// CardStateCopy and CardCache::findCached, what a card lookup runs under a partition task's lock:
// neither allocates. This binary replaces the global operator new (and, where no sanitizer
// provides its own, glibc's malloc family: EventList's block is malloc'ed) to count
// allocations; it holds these tests alone for that reason.
#include "state/card_state_copy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "state/card_cache.h"
#include "state/card_state_codec.h"
#include "tests/support/memory_card_source.h"

namespace {
std::atomic<size_t> g_allocations{0};
}  // namespace

// GCC (12, -O2 under -fsanitize=thread) inlines these replacements into gtest's `new TestClass`
// and then sees a `new` freed by std::free: a false -Wmismatched-new-delete, since both halves are
// the replacements below and both use malloc's heap.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define FRAUD_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FRAUD_SANITIZED 1
#endif

#if defined(__GLIBC__) && !defined(FRAUD_SANITIZED)
// glibc's own entry points, which its malloc, calloc and realloc are: counting them here counts
// every heap allocation of the process, not only operator new's.
extern "C" {
void* __libc_malloc(size_t size);                // NOLINT(bugprone-reserved-identifier)
void* __libc_calloc(size_t count, size_t size);  // NOLINT(bugprone-reserved-identifier)
void* __libc_realloc(void* p, size_t size);      // NOLINT(bugprone-reserved-identifier)
void __libc_free(void* p);                       // NOLINT(bugprone-reserved-identifier)
void* malloc(size_t size) noexcept {
  ++g_allocations;
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) noexcept {
  ++g_allocations;
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) noexcept {
  ++g_allocations;
  return __libc_realloc(p, size);
}
void free(void* p) noexcept { __libc_free(p); }
}
#define FRAUD_COUNTS_MALLOC 1
#endif

namespace fraud::state {
namespace {

using detectors::CardRef;
using detectors::CardState;
using detectors::Country;

CardState sample(size_t events) {
  CardState state;
  for (size_t i = 0; i < events; ++i) {
    const std::string tx_id = "tx-" + std::to_string(i);
    state.events.add(static_cast<detectors::EventTime>(1'700'000'000'000 + i * 1000),
                     Country::of('F', static_cast<char>('A' + i % 26)), tx_id);
  }
  state.incident = detectors::Incident{
      1'700'000'000'000, 1'700'000'600'000, 2, {Country::of('D', 'E'), Country::of('F', 'R')}};
  return state;
}

TEST(AllocationCounter, SeesTheCopyOfACardState) {
  const CardState state = sample(3);
  const size_t before = g_allocations.load();
  std::optional<CardState> copy;
  copy.emplace(state);  // what a lookup used to copy under the task's lock
  EXPECT_GT(g_allocations.load(), before);
  EXPECT_EQ(*copy, state);
#ifdef FRAUD_COUNTS_MALLOC
  CardState no_incident = sample(3);
  no_incident.incident.reset();
  const size_t events_only = g_allocations.load();
  std::optional<CardState> events_copy;
  events_copy.emplace(no_incident);  // the events' block alone: malloc
  EXPECT_GT(g_allocations.load(), events_only);
  EXPECT_EQ(*events_copy, no_incident);
#endif
}

TEST(CardStateCopy, CaptureAllocatesNothing) {
  const CardState state = sample(40);
  CardStateCopy copy;
  const size_t before = g_allocations.load();
  ASSERT_TRUE(copy.capture(state));
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_EQ(copy.state(), state);
}

TEST(CardStateCopy, ACardTooLargeForTheBufferIsNotCopiedAndSaysWhatItNeeds) {
  const CardState state = sample(40);
  CardStateCopy copy(16);
  const size_t before = g_allocations.load();
  EXPECT_FALSE(copy.capture(state));
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_EQ(copy.needed(), encodeCardState(state).size());
  EXPECT_EQ(copy.state(), std::nullopt) << "nothing held";
  copy.reserve(copy.needed());
  EXPECT_GE(copy.capacity(), copy.needed());
  const size_t grown = g_allocations.load();
  ASSERT_TRUE(copy.capture(state));
  EXPECT_EQ(g_allocations.load(), grown);
  EXPECT_EQ(copy.state(), state);
}

TEST(CardStateCopy, CopiesEmptyAndIncidentFreeStates) {
  CardStateCopy copy;
  ASSERT_TRUE(copy.capture(CardState{}));
  EXPECT_EQ(copy.state(), CardState{});
  CardState no_incident = sample(2);
  no_incident.incident.reset();
  ASSERT_TRUE(copy.capture(no_incident));
  EXPECT_EQ(copy.state(), no_incident);
}

TEST(CardCacheFindCached, AllocatesNothingHeldOrNot) {
  MemoryCardSource source;
  CardRef held;
  held.bytes[0] = 1;
  source.cards.modify(held) = sample(5);
  CacheBudget budget{.used = 0, .limit = int64_t{1} << 20};
  CardCache cache(source, budget, 0);
  CardRef other;
  other.bytes[0] = 2;
  const size_t before = g_allocations.load();
  const CardCache::Cached found = cache.findCached(held);
  const CardCache::Cached absent = cache.findCached(other);
  EXPECT_EQ(g_allocations.load(), before);
  ASSERT_EQ(found.kind, CardCache::Cached::Kind::kHeld);
  EXPECT_EQ(*found.state, sample(5));
  EXPECT_EQ(absent.kind, CardCache::Cached::Kind::kAbsent);
}

}  // namespace
}  // namespace fraud::state
