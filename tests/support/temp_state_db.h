// A real StateDb (RocksDB) in a fresh temporary directory, for the component tests; also the
// LocalState the task manager and the state query read it through.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "service/local_state.h"
#include "state/state_db.h"

namespace fraud::service::testing {

// A real StateDb in a fresh temporary directory, removed at the end. As a LocalState it reads
// the database open at the time (after reopen(), the new one).
class TempStateDb final : public LocalState {
 public:
  explicit TempStateDb(size_t card_cache_mb = 16, size_t restore_buffer_mb = 256) {
    dir_ = std::filesystem::temp_directory_path() /
           ("fraud-service-test-" + std::to_string(std::random_device{}()));
    options_.dir = dir_.string();
    options_.card_cache_mb = card_cache_mb;
    options_.block_cache_mb = 8;
    options_.write_buffer_mb = 4;
    options_.restore_buffer_mb = restore_buffer_mb;
    reopen();
  }
  ~TempStateDb() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  state::StateDb& operator*() { return *db_; }
  state::StateDb* operator->() { return db_.get(); }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

  [[nodiscard]] std::unique_ptr<state::LiveCardStore> cardStore(int32_t partition) override {
    return db_->cardStore(partition);
  }
  [[nodiscard]] base::Status clearPartition(int32_t partition) override {
    return db_->clearPartition(partition);
  }
  [[nodiscard]] uint64_t diskBytes() override { return db_->diskBytes(); }
  [[nodiscard]] uint64_t cachedBytes() const override { return db_->cachedBytes(); }

  // Closes the database (every store and restore of it must be gone), for a test to change the
  // files under it; reopen() opens it again.
  void close() { db_.reset(); }
  void reopen() {
    db_.reset();
    auto db = state::StateDb::open(options_);
    EXPECT_TRUE(db) << db.message();
    if (db) db_ = std::move(*db);
  }

 private:
  std::filesystem::path dir_;
  state::StateDbOptions options_;
  std::unique_ptr<state::StateDb> db_;
};

}  // namespace fraud::service::testing
