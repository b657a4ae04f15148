#include "detectors/card_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace fraud::detectors {
namespace {

using ::testing::ElementsAre;

std::vector<Event> contents(const EventList& list) { return {list.begin(), list.end()}; }

Event ev(EventTime time, const char* country, std::string_view tx_id) {
  return Event{time, Country::of(country[0], country[1]), TxId(tx_id)};
}

TEST(EventList, EmptyHoldsNoBlock) {
  EventList list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.allocatedBytes(), 0u);
  EXPECT_TRUE(list.cursor().done());
  EXPECT_EQ(list.begin(), list.end());
}

// A reserved list is empty; its first event sets the base as in a list never reserved, and
// events up to the reserved bytes add without growing the block.
TEST(EventList, ReserveHoldsRoomAndNoEvent) {
  EventList list;
  list.reserve(100);
  EXPECT_TRUE(list.empty());
  const size_t reserved = list.allocatedBytes();
  EXPECT_GE(reserved, 100u);
  list.add(1'700'000'000'000, Country::of('D', 'E'), "tx-1");
  list.add(1'700'000'000'500, Country::of('F', 'R'), "tx-2");
  EXPECT_EQ(list.allocatedBytes(), reserved);
  EventList plain;
  plain.add(1'700'000'000'000, Country::of('D', 'E'), "tx-1");
  plain.add(1'700'000'000'500, Country::of('F', 'R'), "tx-2");
  EXPECT_EQ(list, plain);
  list.reserve(10);  // less than held: nothing changes
  EXPECT_EQ(list.allocatedBytes(), reserved);
}

TEST(EventList, AddKeepsTimeOrderAndTiesInOrderOfAcceptance) {
  EventList list;
  list.add(200, Country::of('F', 'R'), "b");
  list.add(100, Country::of('D', 'E'), "a");
  list.add(200, Country::of('I', 'T'), "c");  // after "b": same time, accepted later
  list.add(150, Country::of('E', 'S'), "d");  // in the middle
  EXPECT_THAT(contents(list), ElementsAre(ev(100, "DE", "a"), ev(150, "ES", "d"),
                                          ev(200, "FR", "b"), ev(200, "IT", "c")));
  EXPECT_EQ(list.size(), 4u);
  EXPECT_EQ(list.lastTime(), 200);
  EXPECT_EQ(list.at(2), ev(200, "FR", "b"));
}

TEST(EventList, HoldsEveryTimeCountryAndTxIdSizeExactly) {
  const std::string longest(TxId::kMaxSize, '\x7e');
  EventList list;
  list.add(kMaxEventTime, Country::of('Z', 'Z'), longest);
  list.add(0, Country::of('A', 'A'), "x");
  list.add(1, Country::of('A', 'Z'), "\"\\ é");
  EXPECT_THAT(contents(list), ElementsAre(ev(0, "AA", "x"), ev(1, "AZ", "\"\\ é"),
                                          ev(kMaxEventTime, "ZZ", longest)));
}

TEST(EventList, EraseBeforeDropsOnlyEarlierEventsAndKeepsTheRestsTimes) {
  EventList list = {ev(100, "DE", "a"), ev(300, "FR", "b"), ev(300, "IT", "c"),
                    ev(1'700'000'000'000, "US", "d")};
  list.eraseBefore(100);
  EXPECT_EQ(list.size(), 4u);
  list.eraseBefore(301);
  EXPECT_THAT(contents(list), ElementsAre(ev(1'700'000'000'000, "US", "d")));
  list.add(1'700'000'000'001, Country::of('G', 'B'), "e");
  EXPECT_THAT(contents(list),
              ElementsAre(ev(1'700'000'000'000, "US", "d"), ev(1'700'000'000'001, "GB", "e")));
  list.eraseBefore(kMaxEventTime);
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list, EventList{});
}

TEST(EventList, EraseFirstDropsTheEarliest) {
  EventList list = {ev(100, "DE", "a"), ev(100, "FR", "b"), ev(200, "IT", "c")};
  list.eraseFirst(2);
  EXPECT_THAT(contents(list), ElementsAre(ev(200, "IT", "c")));
  list.eraseFirst(1);
  EXPECT_TRUE(list.empty());
}

TEST(EventList, FindsATxIdOnlyAmongEventsFromTheHorizon) {
  const EventList list = {ev(100, "DE", "a"), ev(200, "FR", "b")};
  EXPECT_TRUE(list.containsTxIdFrom("a", 100));
  EXPECT_FALSE(list.containsTxIdFrom("a", 101));
  EXPECT_TRUE(list.containsTxIdFrom("b", 101));
  EXPECT_FALSE(list.containsTxIdFrom("ab", 0));
  EXPECT_FALSE(list.containsTxIdFrom("", 0));
}

TEST(EventList, CopiesAreEqualAndIndependent) {
  EventList list = {ev(100, "DE", "a"), ev(200, "FR", "b")};
  EventList copy = list;
  EXPECT_EQ(copy, list);
  copy.add(300, Country::of('I', 'T'), "c");
  EXPECT_NE(copy, list);
  EXPECT_EQ(list.size(), 2u);
  EventList moved = std::move(copy);
  EXPECT_EQ(moved.size(), 3u);
  list = moved;
  EXPECT_EQ(list, moved);
}

TEST(EventList, AppendAtTheEndMatchesAdd) {
  EventList added;
  EventList appended;
  EventTime previous = 0;
  for (EventTime t : std::vector<EventTime>{5, 5, 90, 100'000, 1'700'000'000'000}) {
    added.add(t, Country::of('D', 'E'), "id-" + std::to_string(t));
    appended.append(previous, t, Country::of('D', 'E'), "id-" + std::to_string(t));
    previous = t;
  }
  EXPECT_EQ(added, appended);
}

// An EventList beside a sorted vector of the same events (the model), changed together.
class ModelledEventList {
 public:
  void add(EventTime t, Country c, const std::string& id) {
    list_.add(t, c, id);
    model_.insert(std::upper_bound(model_.begin(), model_.end(), t,
                                   [](EventTime time, const Event& e) { return time < e.time; }),
                  Event{t, c, TxId(id)});
  }
  void eraseBefore(EventTime horizon) {
    list_.eraseBefore(horizon);
    std::erase_if(model_, [&](const Event& e) { return e.time < horizon; });
  }
  void eraseFirst(size_t n) {
    list_.eraseFirst(n);
    model_.erase(model_.begin(), model_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // The list holds the model's events, in order.
  void expectSame(int step) const {
    ASSERT_EQ(list_.size(), model_.size()) << "step " << step;
    ASSERT_EQ(contents(list_), model_) << "step " << step;
    if (!model_.empty()) {
      ASSERT_EQ(list_.lastTime(), model_.back().time) << "step " << step;
    }
  }
  [[nodiscard]] const std::vector<Event>& model() const { return model_; }

 private:
  EventList list_;
  std::vector<Event> model_;
};

// The packed list against a sorted vector of events, over random adds and erasures.
TEST(EventList, MatchesAPlainSortedVectorUnderRandomChanges) {
  std::mt19937_64 random(7);
  ModelledEventList events;
  for (int step = 0; step < 20'000; ++step) {
    const auto choice = random() % 10;
    if (choice < 7) {
      const EventTime t = static_cast<EventTime>(random() % 5000) + step * 10;
      const std::string id(1 + random() % TxId::kMaxSize, static_cast<char>('a' + step % 26));
      events.add(t,
                 Country::of(static_cast<char>('A' + random() % 26),
                             static_cast<char>('A' + random() % 26)),
                 id);
    } else if (choice < 9) {
      events.eraseBefore(EventTime{step} * 10 - static_cast<EventTime>(random() % 3000));
    } else if (!events.model().empty()) {
      events.eraseFirst(random() % (events.model().size() + 1));
    }
    ASSERT_NO_FATAL_FAILURE(events.expectSame(step));
  }
}

// A record's time is a 24-bit offset from the list's base (a margin below its first time):
// a time out of that range rewrites the list against a lower base, or, when the list's span is
// wider than the offset covers, is kept in 8 bytes. Each way, the events read back exactly.
TEST(EventList, TimesOutsideTheOffsetRangeRebaseOrAreKeptWhole) {
  constexpr EventTime kRange = EventTime{1} << 24;
  EventList list;
  list.add(1'700'000'000'000, Country::of('D', 'E'), "a");
  list.add(1'700'000'000'000 + 3 * kRange, Country::of('F', 'R'), "b");  // past the range
  list.add(1'700'000'000'000 - 2 * kRange, Country::of('I', 'T'), "c");  // below the base
  EXPECT_THAT(contents(list), ElementsAre(ev(1'700'000'000'000 - 2 * kRange, "IT", "c"),
                                          ev(1'700'000'000'000, "DE", "a"),
                                          ev(1'700'000'000'000 + 3 * kRange, "FR", "b")));
  EXPECT_EQ(list.lastTime(), 1'700'000'000'000 + 3 * kRange);
  const size_t wide = list.packedBytes();
  // Once the far events are gone, a new late event rebases: every record is narrow again.
  list.eraseBefore(1'700'000'000'000 + 3 * kRange);
  list.add(1'700'000'000'000 + 3 * kRange - 1000, Country::of('G', 'B'), "d");
  EXPECT_THAT(contents(list), ElementsAre(ev(1'700'000'000'000 + 3 * kRange - 1000, "GB", "d"),
                                          ev(1'700'000'000'000 + 3 * kRange, "FR", "b")));
  EXPECT_EQ(list.packedBytes(), 2 * (3 + 2 + 1));
  EXPECT_LT(list.packedBytes(), wide);
  EXPECT_TRUE(list.containsTxIdFrom("d", 0));
  // Lists holding the same events against different bases are equal.
  EventList same;
  same.add(1'700'000'000'000 + 3 * kRange, Country::of('F', 'R'), "b");
  same.add(1'700'000'000'000 + 3 * kRange - 1000, Country::of('G', 'B'), "d");
  EXPECT_EQ(same, list);
  same.eraseFirst(1);
  EXPECT_NE(same, list);
}

// As above, with times spread over many offset ranges, some far out of order.
TEST(EventList, MatchesAPlainSortedVectorOverWideSpans) {
  std::mt19937_64 random(11);
  ModelledEventList events;
  for (int step = 0; step < 5'000; ++step) {
    const auto choice = random() % 10;
    const auto& model = events.model();
    if (choice < 8) {
      const EventTime t = static_cast<EventTime>(random() % (EventTime{1} << 27)) +
                          (random() % 2 == 0 ? 0 : step * (EventTime{1} << 16));
      const std::string id(1 + random() % 12, static_cast<char>('a' + step % 26));
      events.add(t, Country::of('A', static_cast<char>('A' + random() % 26)), id);
    } else if (choice < 9 && !model.empty()) {
      events.eraseBefore(model[random() % model.size()].time);
    } else {
      events.eraseFirst(random() % (model.size() + 1));
    }
    ASSERT_NO_FATAL_FAILURE(events.expectSame(step));
  }
}

TEST(CardState, LastRelevantTimeIsTheNewestEventOrTheIncidentsEnd) {
  CardState state;
  state.events = {ev(100, "DE", "a"), ev(250, "FR", "b")};
  EXPECT_EQ(state.lastRelevantTime(), 250);
  state.incident = Incident{100, 700, 1, {Country::of('D', 'E')}};
  EXPECT_EQ(state.lastRelevantTime(), 700);
  CardState copy = state;
  EXPECT_EQ(copy, state);
  copy.incident->revision = 2;
  EXPECT_NE(copy, state);
  copy.incident.reset();
  EXPECT_FALSE(copy.incident.has_value());
  EXPECT_TRUE(state.incident.has_value());
}

}  // namespace
}  // namespace fraud::detectors
