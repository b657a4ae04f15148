#include "state/checkpoint_writer.h"

#include <pthread.h>
#include <rocksdb/write_batch.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "detectors/base/sync_point.h"
#include "state/change_log.h"
#include "state/database.h"
#include "state/key_layout.h"

namespace fraud::state {
namespace {

// The niceness of the writer thread: a burst of checkpoint writes must not take the CPU from
// the ingest thread.
constexpr int kWriterNice = 10;

// One change of a batch, pointing into its map.
using Change = std::pair<const detectors::CardRef*, const std::optional<std::string>*>;

// A batch's changes in the order of their RocksDB keys (one partition: the order of the card
// refs' bytes). The memtable is a skip list whose inserts start from where the last one ended:
// keys in order find their place in a few comparisons, where the map's hash order walks the
// list from its top for every key, and the walk was half of this thread's CPU
// (docs/measurements.md, "Where the service's CPU goes").
std::vector<Change> inKeyOrder(const CardMap<std::optional<std::string>>& changes) {
  std::vector<Change> ordered;
  ordered.reserve(changes.size());
  changes.forEach([&](const detectors::CardRef& ref, const std::optional<std::string>& value) {
    ordered.emplace_back(&ref, &value);
  });
  std::sort(ordered.begin(), ordered.end(),
            [](const Change& a, const Change& b) { return a.first->bytes < b.first->bytes; });
  return ordered;
}

}  // namespace

CheckpointWriter::CheckpointWriter(Database& db) : db_(db), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::submit(const std::shared_ptr<WriteProgress>& progress, int32_t partition,
                              std::unique_ptr<CommittedBatch> batch) {
  {
    base::MutexLock lock(mu_);
    jobs_.push_back(Job{progress, partition, std::move(batch)});
  }
  cv_.notify_one();
}

void CheckpointWriter::setObserver(std::function<void(double seconds)> observer) {
  base::MutexLock lock(mu_);
  observer_ = std::move(observer);
}

void CheckpointWriter::run() {
  pthread_setname_np(pthread_self(), "fd-state-write");
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kWriterNice);
  while (true) {
    Job job;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && jobs_.empty()) lock.wait(cv_);
      if (jobs_.empty()) return;  // stopping, everything written
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    write(job);
  }
}

void CheckpointWriter::write(const Job& job) {
  WriteProgress& progress = *job.progress;
  {
    base::MutexLock lock(progress.mu);
    if (!progress.error.ok()) {
      progress.cv.notify_all();
      return;  // after a failed batch no later one may land: the disk would skip one
    }
  }
  const auto started = std::chrono::steady_clock::now();
  rocksdb::WriteBatch batch;
  const CommittedBatch& committed = *job.batch;
  // A batch refuses an entry only past its size limit (none is set): a failure all the same.
  rocksdb::Status status;
  for (const auto& [ref, value] : inKeyOrder(committed.changes)) {
    const auto key = cardKey(job.partition, *ref);
    status = *value ? batch.Put(key, **value) : batch.Delete(key);
    if (!status.ok()) break;
  }
  if (status.ok()) status = batch.Put(checkpointKey(job.partition), committed.checkpoint.encode());
#if FRAUD_TEST_HOOKS
  // Tests make the write fail here with a message of theirs (tests/support/sync_points.h).
  std::string injected;
  FRAUD_SYNC_POINT_CALLBACK("CheckpointWriter::write:InjectError", &injected);
  if (status.ok() && !injected.empty()) status = rocksdb::Status::IOError(injected);
#endif
  const auto written = status.ok() ? db_.write(batch) : Database::toStatus(status);
  if (observer_) {
    observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  {
    base::MutexLock lock(progress.mu);
    if (!written.ok()) {
      progress.error = written;
    } else {
      progress.written.store(committed.seq);
    }
  }
  progress.cv.notify_all();
}

}  // namespace fraud::state
