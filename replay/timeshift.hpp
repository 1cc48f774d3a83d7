// Record timestamps and the replay's clock. A capture's Produce requests
// carry the CreateTime timestamps of the day it was recorded. Sent as they
// are a week later, they are older than a broker's default retention
// (retention.ms, 7 days), and the target deletes the replayed records as they
// arrive: earliest offsets and logStartOffset move, fetches get
// OFFSET_OUT_OF_RANGE. Replay moves every record timestamp, and every
// timestamp a request names (ListOffsets by time), by one shift, and compares
// the answers' timestamps modulo that shift.
//
// This part owns: reading a capture's record times, choosing the shift, and
// moving one v2 record batch (its CRC-32C recomputed). It knows nothing of
// connections or targets.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/recording.hpp"

namespace kwire::replay {

// Record batch v2 attributes: bit 3 says LogAppendTime (the broker stamps
// the records; their CreateTime is not what the log keeps).
inline constexpr uint16_t kLogAppendTimeBit = 0x08;
// A batch or a record without a timestamp (NO_TIMESTAMP).
inline constexpr int64_t kNoTimestamp = -1;

// Moves the base and max timestamps of the v2 record batch that starts at
// `batch` (`size` bytes: the whole batch, header and records) by `shift_ms`
// and recomputes its CRC-32C. Records keep their deltas, so every record
// moves with the batch; compressed data is untouched. Leaves alone (false) a
// batch that is not magic 2, is cut short, is LogAppendTime or has no
// timestamp (-1).
bool shift_batch(std::span<uint8_t> batch, int64_t shift_ms);

// What a capture says about time: when its first and last requests were
// sent, and the CreateTime record timestamps its Produce requests carry.
struct CaptureTimes {
  int64_t first_us = 0, last_us = 0;  // capture timestamps of the first and last request (0: no request)
  // The smallest age a CreateTime batch had when its Produce request was
  // sent: request time minus the batch's max timestamp, in ms (INT64_MAX:
  // no such batch). Near 0 for a producer stamping records as it sends them;
  // 30 days for one that writes records dated 30 days back.
  int64_t min_age_ms = INT64_MAX;
  // The oldest CreateTime timestamp each topic is written with (ms since the
  // epoch), by topic name (a topic named by id only: "id:" and the uuid's text).
  std::map<std::string, int64_t> oldest_ms;
  uint64_t batches = 0;               // CreateTime batches seen
};
CaptureTimes capture_times(const ProgramSet& ps, const Recording& rec);

// The shift, in ms, for a replay that starts at `replay_start_ms` (wall clock):
// - the capture's first request is moved to the replay's start when the
//   replay keeps the recorded gaps (`recorded_timing`, at speed 1 or slower),
//   so each record is as old, when it reaches the target, as when it was
//   recorded; otherwise (fast, or faster than recorded) the capture's last
//   request is, so that no record lands in the target's future (brokers
//   refuse timestamps too far ahead: log.message.timestamp.after.max.ms);
// - plus `min_age_ms` when positive: a capture whose every record was already
//   old when sent (a backfill, a producer setting timestamps days back) is
//   moved so that its youngest batch is as young as the replay. A capture
//   that mixes fresh and old records has a min age near 0 and keeps the ages
//   it had.
int64_t choose_shift(const CaptureTimes& t, int64_t replay_start_ms, bool recorded_timing);

// "+8 d 02:03:04.120" / "-0.250 s": a shift for people.
std::string shift_text(int64_t ms);

// A topic's retention as a broker states it: retention.ms of the topic, or
// the broker's log.retention.ms, .minutes or .hours (the first given), in ms.
// -1: unlimited. `configs`: name -> value; false when none is there.
bool retention_of(const std::map<std::string, std::string>& configs, int64_t& ms);

}  // namespace kwire::replay
