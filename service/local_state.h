#pragma once

#include <cstdint>
#include <memory>

#include "detectors/base/status.h"
#include "state/live_card_store.h"
#include "state/state_db.h"

namespace fraud::service {

// What the ingest thread's units ask of the local state directly (the restorers have the
// database itself): a partition's card store when its restore brought none, clearing a partition
// before a rebuild, and the sizes for the gauges. StateDbLocalState in the service; memory in the
// unit tests, so the stream loop runs without RocksDB.
//
// Thread-safety: the ingest thread (cardStore, clearPartition); the sizes from any thread.
class LocalState {
 public:
  virtual ~LocalState() = default;
  // The partition's cards. Throws detectors::CardStoreError when they cannot be read.
  [[nodiscard]] virtual std::unique_ptr<state::LiveCardStore> cardStore(int32_t partition) = 0;
  // Drops every card and the checkpoint of a partition.
  [[nodiscard]] virtual base::Status clearPartition(int32_t partition) = 0;
  // Bytes on disk (the state-size metric) and in the decoded-state caches.
  [[nodiscard]] virtual uint64_t diskBytes() = 0;
  [[nodiscard]] virtual uint64_t cachedBytes() const = 0;
};

// LocalState over the service's database. `db` must outlive it.
class StateDbLocalState final : public LocalState {
 public:
  explicit StateDbLocalState(state::StateDb& db) : db_(db) {}
  [[nodiscard]] std::unique_ptr<state::LiveCardStore> cardStore(int32_t partition) override {
    return db_.cardStore(partition);
  }
  [[nodiscard]] base::Status clearPartition(int32_t partition) override {
    return db_.clearPartition(partition);
  }
  [[nodiscard]] uint64_t diskBytes() override { return db_.diskBytes(); }
  [[nodiscard]] uint64_t cachedBytes() const override { return db_.cachedBytes(); }

 private:
  state::StateDb& db_;
};

}  // namespace fraud::service
