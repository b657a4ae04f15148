// A ServiceView for the API's integration tests whose status() can be held.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "api/service_view.h"

namespace fraud::api {

// A view whose status() blocks while closed, as a view stuck behind a lock would: a
// /v1/partitions or /readyz answer then holds a view thread. Everything else goes to `inner`.
class GatedStatusView final : public ServiceView {
 public:
  explicit GatedStatusView(const ServiceView& inner) : inner_(inner) {}
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  [[nodiscard]] bool waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
  }
  ServiceStatus status() const override {
    std::unique_lock lock(mutex_);
    waiting_ = true;
    changed_.wait(lock, [this] { return open_; });
    waiting_ = false;
    return inner_.status();
  }
  std::optional<int32_t> partitionOf(std::string_view card) const override {
    return inner_.partitionOf(card);
  }
  detectors::CardRef cardRef(std::string_view card) const override { return inner_.cardRef(card); }
  CardLookup lookup(int32_t partition, const detectors::CardRef& ref) const override {
    return inner_.lookup(partition, ref);
  }
  CardLookup lookupHeld(const detectors::CardRef& ref) const override {
    return inner_.lookupHeld(ref);
  }
  std::optional<CardLookup> tryLookupCached(int32_t partition,
                                            const detectors::CardRef& ref) const override {
    return inner_.tryLookupCached(partition, ref);
  }
  std::optional<CardLookup> tryLookupHeldCached(const detectors::CardRef& ref) const override {
    return inner_.tryLookupHeldCached(ref);
  }
  std::optional<std::string> ownerOf(int32_t partition) const override {
    return inner_.ownerOf(partition);
  }
  std::string instanceId() const override { return inner_.instanceId(); }

 private:
  const ServiceView& inner_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool open_ = true;
  mutable bool waiting_ = false;
};

}  // namespace fraud::api
