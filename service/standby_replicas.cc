#include "service/standby_replicas.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace fraud::service {

std::set<int32_t> standbyPlacement(const std::map<int32_t, std::string>& owners,
                                   const std::string& self, int replicas) {
  std::set<int32_t> placed;
  if (replicas <= 0) return placed;
  std::vector<std::string> members{self};
  for (const auto& [p, owner] : owners) members.push_back(owner);
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const size_t count = members.size();
  const size_t self_rank =
      static_cast<size_t>(std::lower_bound(members.begin(), members.end(), self) - members.begin());
  const size_t copies = std::min(static_cast<size_t>(replicas), count - 1);
  for (const auto& [p, owner] : owners) {
    if (owner == self) continue;
    const size_t owner_rank = static_cast<size_t>(
        std::lower_bound(members.begin(), members.end(), owner) - members.begin());
    // self is among the `copies` members after the owner, in a ring.
    const size_t distance = (self_rank + count - owner_rank) % count;
    if (distance >= 1 && distance <= copies) placed.insert(p);
  }
  return placed;
}

StandbyReplicas::StandbyReplicas(Options options, RestoreQueue& restorer,
                                 std::function<std::map<int32_t, std::string>()> owners,
                                 const service::Clock& clock)
    : options_(std::move(options)),
      restorer_(restorer),
      owners_(std::move(owners)),
      clock_(clock) {}

bool StandbyReplicas::copiedElsewhere(const std::vector<int32_t>& owned) const {
  if (options_.replicas <= 0 || owned.empty()) return false;
  std::set<std::string> others;
  for (const auto& [p, owner] : owners_()) {
    if (owner != options_.self) others.insert(owner);
  }
  // Only when every other member keeps a copy: the assignor picks the new owner, and a member
  // without a copy would restore the partition from scratch (a roll of 3 with one standby each
  // measured worse with the hand-over than without it, docs/measurements.md).
  return !others.empty() && static_cast<size_t>(options_.replicas) >= others.size();
}

void StandbyReplicas::tick(const std::vector<int32_t>& owned, Clock::time_point now) {
  takeCompleted(now);
  if (last_round_ && now - *last_round_ < options_.interval) return;
  last_round_ = now;
  std::set<int32_t> placed = standbyPlacement(owners_(), options_.self, options_.replicas);
  for (const int32_t p : owned) placed.erase(p);

  std::vector<std::pair<int32_t, uint64_t>> round;
  {
    base::MutexLock lock(mu_);
    for (auto it = copies_.begin(); it != copies_.end();) {
      if (placed.count(it->first) > 0) {
        ++it;
        continue;
      }
      // No longer placed here (the group moved on): stop copying; the disk keeps what it has.
      if (it->second.running) restorer_.cancel(it->first);
      dropped_.push_back(it->first);
      it = copies_.erase(it);
    }
    for (const int32_t p : placed) {
      Copy& copy = copies_[p];
      copy.status.partition = p;
      if (copy.running) continue;  // the last round of it is still catching up
      copy.running = true;
      copy.ticket = next_ticket_++;
      round.emplace_back(p, copy.ticket);
    }
  }
  if (!round.empty()) restorer_.enqueue(round);
}

void StandbyReplicas::takeCompleted(Clock::time_point now) {
  std::vector<RestoreResult> results = restorer_.takeCompleted();
  if (results.empty()) return;
  base::MutexLock lock(mu_);
  for (const RestoreResult& result : results) {
    const auto it = copies_.find(result.partition);
    if (it == copies_.end() || it->second.ticket != result.ticket) continue;  // released since
    Copy& copy = it->second;
    copy.running = false;
    malformed_ += result.malformed;
    if (result.busy) continue;  // the active restore of it held the partition
    if (!result.error.ok()) {
      ++copy.status.failures;
      spdlog::warn("standby copy: {}; retrying next round", result.error.message());
      continue;
    }
    ++copy.status.catchups;
    copy.status.changelog_offset = result.changelog_next;
    copy.status.lag_records = std::max<int64_t>(0, result.changelog_end - result.changelog_start);
    copy.caught_up_at = now;
  }
}

void StandbyReplicas::release(const std::vector<int32_t>& partitions) {
  base::MutexLock lock(mu_);
  for (const int32_t p : partitions) {
    restorer_.cancel(p);
    if (copies_.erase(p) > 0) dropped_.push_back(p);
  }
}

std::vector<StandbyStatus> StandbyReplicas::statuses(Clock::time_point now) const {
  base::MutexLock lock(mu_);
  std::vector<StandbyStatus> result;
  result.reserve(copies_.size());
  for (const auto& [p, copy] : copies_) {
    StandbyStatus status = copy.status;
    if (copy.caught_up_at) {
      status.seconds_since_caught_up =
          std::chrono::duration<double>(now - *copy.caught_up_at).count();
    }
    result.push_back(status);
  }
  return result;
}

std::vector<int32_t> StandbyReplicas::takeDropped() {
  base::MutexLock lock(mu_);
  return std::exchange(dropped_, {});
}

}  // namespace fraud::service
