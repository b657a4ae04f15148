#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "detectors/base/mutex.h"
#include "detectors/base/status.h"

namespace fraud::state {

class Database;
struct CommittedBatch;

// Internal. What one partition store's background writes have reached; shared by the store
// (any thread may read `written`, or wait on `cv` under `mu`) and the writer thread.
struct WriteProgress {
  base::Mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> written{0};  // the seq of the last batch on disk
  // Ok, or the failed write's error (kIoError): later batches are not written.
  base::Status error FRAUD_GUARDED_BY(mu);
};

// Internal. The writer thread of the instance: committed batches of every partition store,
// written to RocksDB in the order submitted, at a low CPU priority, so that a hand-off after a
// commit does not wait for RocksDB. The one ingest thread waits for this thread only in
// LiveCardStore::writeCommitted() (a revocation, a stop), discardChanges() (a rewind) and
// close() (a partition's store dropped); it also reads RocksDB itself on a cache miss.
// Thread-safety: every method may be called from any thread. The observer runs on the writer
// thread. The destructor writes what is queued, then joins the thread.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(Database& db);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues `batch` of `partition`; `progress` learns when it is on disk or failed.
  void submit(const std::shared_ptr<WriteProgress>& progress, int32_t partition,
              std::unique_ptr<CommittedBatch> batch) FRAUD_EXCLUDES(mu_);
  // Called with the seconds each write took (a metric). Set before the first submit().
  void setObserver(std::function<void(double seconds)> observer) FRAUD_EXCLUDES(mu_);

 private:
  struct Job {
    std::shared_ptr<WriteProgress> progress;
    int32_t partition = 0;
    std::unique_ptr<CommittedBatch> batch;
  };
  void run() FRAUD_EXCLUDES(mu_);
  // Without the lock: RocksDB's write must not hold up submit().
  void write(const Job& job) FRAUD_EXCLUDES(mu_);

  Database& db_;
  base::Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_ FRAUD_GUARDED_BY(mu_);
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;
  // Not guarded: set (under mu_) before the first submit(), and the writer thread reads it only
  // once it has taken a job under mu_, so after the set; locking each read would copy it.
  std::function<void(double)> observer_;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace fraud::state
