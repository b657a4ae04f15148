// Who may be fenced: only owners that left the group, never a live member nor ourselves.
#include "service/transaction_fencer.h"

#include <gtest/gtest.h>

namespace fraud::service {
namespace {

using Members = std::vector<kafka::GroupMember>;

TEST(DepartedOwners, OnlyCandidatesThatAreNoLongerMembers) {
  const Members members = {{"b", ""}, {"c", ""}};
  EXPECT_EQ(departedOwners({"a", "b"}, members, "c"), (std::vector<std::string>{"a"}));
}

TEST(DepartedOwners, NeverSelfNorAnEmptyName) {
  EXPECT_TRUE(departedOwners({"self", ""}, {}, "self").empty());
}

TEST(DepartedOwners, AStaticMemberIsKnownByItsInstanceIdNotItsClientId) {
  // With static membership the client.id may be anything; the group.instance.id names it.
  const Members members = {{"some-client", "pod-1"}};
  EXPECT_TRUE(departedOwners({"pod-1"}, members, "pod-0").empty());
  EXPECT_EQ(departedOwners({"some-client"}, members, "pod-0"),
            (std::vector<std::string>{"some-client"}));
}

TEST(DepartedOwners, NoMembersKnownMeansEveryOtherCandidateDeparted) {
  EXPECT_EQ(departedOwners({"a", "b"}, {}, "c"), (std::vector<std::string>{"a", "b"}));
}

TEST(TransactionalId, IsGroupDashInstance) { EXPECT_EQ(transactionalIdOf("g", "i"), "g-i"); }

}  // namespace
}  // namespace fraud::service
