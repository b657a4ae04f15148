// Who may be fenced: only owners that left the group, never a live member nor ourselves, nor
// one that joined again between the first look at the group and the fence.
#include "service/transaction_fencer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>

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

// A cluster whose answers are scripted: each members() call takes the next membership (the last
// one repeats); fences are recorded.
class ScriptedCluster final : public FencingCluster {
 public:
  ScriptedCluster(std::map<int32_t, std::string> committers, std::deque<Members> memberships)
      : committers_(std::move(committers)), memberships_(std::move(memberships)) {}

  base::Result<std::map<int32_t, std::string>> committers(const std::vector<int32_t>&) override {
    return committers_;
  }
  base::Result<Members> members() override {
    std::lock_guard lock(mu_);
    Members next = memberships_.front();
    if (memberships_.size() > 1) memberships_.pop_front();
    return next;
  }
  base::Status fence(const std::string& transactional_id) override {
    std::lock_guard lock(mu_);
    fenced_.push_back(transactional_id);
    return {};
  }
  std::vector<std::string> fenced() {
    std::lock_guard lock(mu_);
    return fenced_;
  }

 private:
  std::map<int32_t, std::string> committers_;
  std::mutex mu_;
  std::deque<Members> memberships_;
  std::vector<std::string> fenced_;
};

struct Fencing {
  explicit Fencing(std::unique_ptr<ScriptedCluster> scripted)
      : cluster(scripted.get()),
        fencer({"group", "input", "a"}, std::move(scripted), nullptr,
               [this](const std::string& id, TransactionFencer::Result result) {
                 std::lock_guard lock(mu);
                 results.emplace_back(id, result);
               }) {}
  std::vector<std::pair<std::string, TransactionFencer::Result>> observed() {
    std::lock_guard lock(mu);
    return results;
  }
  ScriptedCluster* cluster;
  std::mutex mu;
  std::vector<std::pair<std::string, TransactionFencer::Result>> results;
  TransactionFencer fencer;
};

TEST(TransactionFencer, FencesADepartedOwnerThatIsStillAbsentAtTheFence) {
  Fencing f(std::make_unique<ScriptedCluster>(std::map<int32_t, std::string>{{0, "b"}},
                                              std::deque<Members>{{{"a", ""}}}));
  f.fencer.fenceOwnersOf({0});
  f.fencer.waitIdle();
  EXPECT_EQ(f.cluster->fenced(), std::vector<std::string>{"group-b"});
  ASSERT_EQ(f.observed().size(), 1u);
  EXPECT_EQ(f.observed()[0].second, TransactionFencer::Result::kFenced);
}

TEST(TransactionFencer, LeavesAloneAnOwnerThatJoinedAgainBeforeTheFence) {
  // "b" restarted: it was absent at the first look at the group (its new process initialises
  // its transactions before it joins) and is a member by the time the fence would happen.
  Fencing f(
      std::make_unique<ScriptedCluster>(std::map<int32_t, std::string>{{0, "b"}},
                                        std::deque<Members>{{{"a", ""}}, {{"a", ""}, {"b", ""}}}));
  f.fencer.fenceOwnersOf({0});
  f.fencer.waitIdle();
  EXPECT_TRUE(f.cluster->fenced().empty()) << "a live, restarted instance was fenced";
  ASSERT_EQ(f.observed().size(), 1u);
  EXPECT_EQ(f.observed()[0].first, "b");
  EXPECT_EQ(f.observed()[0].second, TransactionFencer::Result::kRejoined);
}

TEST(TransactionFencer, NeverFencesItselfNorALiveMember) {
  Fencing f(std::make_unique<ScriptedCluster>(std::map<int32_t, std::string>{{0, "a"}, {1, "c"}},
                                              std::deque<Members>{{{"a", ""}, {"c", ""}}}));
  f.fencer.fenceOwnersOf({0, 1});
  f.fencer.waitIdle();
  EXPECT_TRUE(f.cluster->fenced().empty());
  EXPECT_TRUE(f.observed().empty());
}

// A round waits on the cluster (a coordinator that moved: up to 30 s). Destroying the fencer,
// as the process's stop does, cancels the call in progress instead of waiting it out.
class StuckCluster final : public FencingCluster {
 public:
  base::Result<std::map<int32_t, std::string>> committers(const std::vector<int32_t>&) override {
    std::unique_lock lock(mu_);
    asked_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return cancelled_; });
    return base::Status::unavailable("stopping");
  }
  base::Result<Members> members() override { return Members{}; }
  base::Status fence(const std::string&) override { return {}; }
  void cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    changed_.notify_all();
  }
  void waitAsked() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [this] { return asked_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool asked_ = false;
  bool cancelled_ = false;
};

TEST(TransactionFencer, DestroyedMidRoundCancelsTheCallInProgress) {
  auto stuck = std::make_unique<StuckCluster>();
  StuckCluster* cluster = stuck.get();
  auto fencer = std::make_unique<TransactionFencer>(
      TransactionFencer::Options{"group", "input", "a"}, std::move(stuck), nullptr, nullptr);
  fencer->fenceOwnersOf({0});
  cluster->waitAsked();
  fencer.reset();  // without the cancel, this waits for ever
}

}  // namespace
}  // namespace fraud::service
