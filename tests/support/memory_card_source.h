#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "state/card_cache.h"
#include "state/card_state_codec.h"
#include "state/change_log.h"
#include "state/live_card_store.h"
#include "state/memory_card_store.h"

namespace fraud::state {

// The bottom layer (PartitionStorage) for tests of the layers above it, and of the service's
// tasks over a LiveCardStore: card states in a MemoryCardStore, read encoded (CardSource) and
// written by committed batches (CommittedBatchSink). A held sink keeps the batches it is given
// "in flight" until release(); `corrupt` is a card whose stored bytes do not decode; with
// `fail_writes` set, every batch written from then on fails with that message (and none after
// a failed one lands, as the sink's contract says).
class MemoryCardSource final : public PartitionStorage {
 public:
  std::optional<std::string> read(const detectors::CardRef& card_ref) override {
    ++reads;
    if (on_read) on_read();
    if (corrupt && card_ref == *corrupt) return std::string("\xff not a card state");
    const detectors::CardState* state = cards.find(card_ref);
    if (state == nullptr) return std::nullopt;
    return encodeCardState(*state);
  }
  void scan(
      const std::function<void(const detectors::CardRef&, std::string_view)>& visit) override {
    ++scans;
    cards.forEach([&](const detectors::CardRef& ref, const detectors::CardState& state) {
      visit(ref, encodeCardState(state));
    });
    if (corrupt) visit(*corrupt, "\xff not a card state");
  }

  void write(std::unique_ptr<CommittedBatch> batch) override {
    in_flight.push_back(std::move(batch));
    if (!hold) release();
  }
  uint64_t written() const override { return written_seq; }
  base::Status waitWritten(uint64_t seq) override {
    release();  // a wait lets the "writer" finish
    if (written_seq >= seq) return {};
    const base::Status error = writeStatus();
    return error.ok() ? base::Status::ioError("a committed batch was not written") : error;
  }
  base::Status writeStatus() const override {
    return write_error ? base::Status::ioError(*write_error) : base::Status();
  }

  // Writes every batch in flight (unless writes fail).
  void release() {
    if (fail_writes && !in_flight.empty()) write_error = fail_writes;
    if (write_error) {
      in_flight.clear();
      return;
    }
    for (auto& batch : in_flight) {
      batch->changes.forEach(
          [&](const detectors::CardRef& ref, const std::optional<std::string>& encoded) {
            if (encoded) {
              cards.modify(ref) = *decodeCardState(*encoded);
            } else {
              cards.erase(ref);
            }
          });
      checkpoint = batch->checkpoint;
      written_seq = batch->seq;
      ++batches_written;
    }
    in_flight.clear();
  }

  MemoryCardStore cards;
  std::optional<detectors::CardRef> corrupt;
  std::optional<std::string> fail_writes;
  std::optional<std::string> write_error;  // the first failed write's
  bool hold = false;
  std::deque<std::unique_ptr<CommittedBatch>> in_flight;
  uint64_t written_seq = 0;
  size_t batches_written = 0;
  size_t scans = 0;
  size_t reads = 0;               // read() calls: the cache's reads through
  std::function<void()> on_read;  // called by each read(), e.g. to hold it
  PartitionCheckpoint checkpoint;
};

}  // namespace fraud::state
