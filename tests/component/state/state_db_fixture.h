#pragma once

// The fixture of the tests that run StateDb on RocksDB on disk in a temporary directory.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "state/state_db.h"

namespace fraud::state {

namespace fs = std::filesystem;
using detectors::CardRef;
using detectors::CardState;
using detectors::Country;

inline CardRef refOf(uint8_t n) {
  CardRef ref;
  ref.bytes.fill(n);
  return ref;
}

class StateDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("state-db-test-" + std::to_string(std::random_device{}()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.dir = dir_.string();
    reopen();
  }
  void TearDown() override {
    db_.reset();
    fs::remove_all(dir_);
  }
  void reopen() {
    db_.reset();
    auto db = StateDb::open(options_);
    ASSERT_TRUE(db) << db.message();
    db_ = std::move(*db);
  }

  fs::path dir_;
  StateDbOptions options_;
  std::unique_ptr<StateDb> db_;
};

inline CardState stateAt(detectors::EventTime t, std::string_view tx) {
  return CardState{{{t, Country::of('D', 'E'), detectors::TxId(tx)}}, std::nullopt};
}

// Writes one raw key into the database directory, as another program (or build) would.
inline void rawPut(const std::string& dir, const std::string& key, const std::string& value) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, value).ok());
}

}  // namespace fraud::state
