// Replay's clock (replay/timeshift.hpp): record batches and the times a
// request names move by one shift, answers are compared modulo it, and the
// shift is chosen from the capture's times. Batches are made by the records
// encoder with the timestamps expected after the shift, so a shifted batch
// must equal, byte for byte, what a producer stamping those times sends.
#include <gtest/gtest.h>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/records.hpp"
#include "replay/compare.hpp"
#include "replay/state.hpp"
#include "replay/timeshift.hpp"
#include "tests/test_support.hpp"
#include "wire/wire.hpp"

namespace kwire {
namespace {

using test::Bytes;

const ProgramSet& ps() { return ProgramSet::release(); }

constexpr int64_t kDay = 86'400'000;
constexpr int64_t k2026_11_29 = 1'795'910'400'000;  // 2026-11-29T00:00:00Z

std::vector<uint8_t> batch_at(int64_t base_ts, Codec codec = Codec::None) {
  BatchSpec s;
  s.producer_id = 77;
  s.producer_epoch = 0;
  s.base_sequence = 5;
  s.base_timestamp = base_ts;
  s.codec = codec;
  s.records = {RecordSpec{0, "k1", "v1", {}}, RecordSpec{250, "k2", "v2", {}}, RecordSpec{40, "k3", "v3", {}}};
  return encode_record_batch(s);
}

int64_t be64(const std::vector<uint8_t>& b, size_t at) { return static_cast<int64_t>(wire::load_be64(b.data() + at)); }

TEST(TimeShift, ABatchMovesItsBaseAndMaxTimestampsAndGetsItsCrcAgain) {
  for (Codec codec : {Codec::None, Codec::Gzip, Codec::Zstd}) {
    auto b = batch_at(k2026_11_29, codec);
    // The header as Kafka lays it out: base timestamp at 27, max at 35 (the
    // largest delta is 250), CRC-32C at 17 over everything from 21 on.
    ASSERT_EQ(be64(b, 27), k2026_11_29);
    ASSERT_EQ(be64(b, 35), k2026_11_29 + 250);
    ASSERT_TRUE(replay::shift_batch(b, 8 * kDay + 1));
    EXPECT_EQ(be64(b, 27), k2026_11_29 + 8 * kDay + 1);
    EXPECT_EQ(be64(b, 35), k2026_11_29 + 8 * kDay + 251);
    EXPECT_EQ(wire::load_be32(b.data() + 17), detail::crc32c_portable({b.data() + 21, b.size() - 21}));
    EXPECT_EQ(b, batch_at(k2026_11_29 + 8 * kDay + 1, codec)) << static_cast<int>(codec);
    // And back.
    ASSERT_TRUE(replay::shift_batch(b, -(8 * kDay + 1)));
    EXPECT_EQ(b, batch_at(k2026_11_29, codec));
  }
}

TEST(TimeShift, BatchesThatAreNotCreateTimeAreLeftAlone) {
  auto log_append = batch_at(k2026_11_29);
  log_append[22] |= replay::kLogAppendTimeBit;  // attributes (int16 at 21): bit 3
  auto copy = log_append;
  EXPECT_FALSE(replay::shift_batch(log_append, kDay));
  EXPECT_EQ(log_append, copy);

  auto none = batch_at(replay::kNoTimestamp);
  copy = none;
  EXPECT_FALSE(replay::shift_batch(none, kDay));
  EXPECT_EQ(none, copy);

  auto v1 = batch_at(k2026_11_29);
  v1[16] = 1;  // magic 1: a legacy message set, not a batch
  copy = v1;
  EXPECT_FALSE(replay::shift_batch(v1, kDay));
  EXPECT_EQ(v1, copy);

  const auto whole = batch_at(k2026_11_29);
  std::vector<uint8_t> cut(whole.begin(), whole.begin() + 40);
  copy = cut;
  EXPECT_FALSE(replay::shift_batch(cut, kDay));
  EXPECT_EQ(cut, copy);
}

replay::CaptureTimes times(int64_t first_ms, int64_t last_ms, int64_t min_age_ms) {
  replay::CaptureTimes t;
  t.first_us = first_ms * 1000;
  t.last_us = last_ms * 1000;
  t.min_age_ms = min_age_ms;
  t.batches = 1;
  return t;
}

TEST(TimeShift, TheShiftMovesTheCaptureToTheReplaysStart) {
  const int64_t start = k2026_11_29 + 8 * kDay;
  // Recorded timing: the first request lands at the start, every record as old as when recorded.
  // (A producer's batches leave some ms after their records are made: that age is kept too.)
  EXPECT_EQ(replay::choose_shift(times(k2026_11_29, k2026_11_29 + 60'000, 3), start, true), 8 * kDay + 3);
  // Fast: the last request does, so that nothing lands in the target's future.
  EXPECT_EQ(replay::choose_shift(times(k2026_11_29, k2026_11_29 + 60'000, 3), start, false), 8 * kDay - 60'000 + 3);
  // Every record already 30 days old when sent: moved so that the youngest is young again.
  EXPECT_EQ(replay::choose_shift(times(k2026_11_29, k2026_11_29 + 60'000, 30 * kDay), start, true), 38 * kDay);
  // A clock ahead of the capture's (negative age) adds nothing.
  EXPECT_EQ(replay::choose_shift(times(k2026_11_29, k2026_11_29, -500), start, true), 8 * kDay);
  // No request: nothing to move.
  EXPECT_EQ(replay::choose_shift(replay::CaptureTimes{}, start, true), 0);
}

TEST(TimeShift, TextsForPeople) {
  EXPECT_EQ(replay::shift_text(8 * kDay + 2 * 3'600'000 + 3 * 60'000 + 4'120), "+8 d 02:03:04.120");
  EXPECT_EQ(replay::shift_text(-250), "-0.250 s");
  EXPECT_EQ(replay::shift_text(90'000), "+00:01:30.000");
  EXPECT_EQ(replay::shift_text(7 * kDay), "+7 d 00:00:00.000");
}

TEST(TimeShift, RetentionAsBrokersStateIt) {
  int64_t ms = 0;
  EXPECT_TRUE(replay::retention_of({{"retention.ms", "604800000"}}, ms));
  EXPECT_EQ(ms, 7 * kDay);
  EXPECT_TRUE(replay::retention_of({{"retention.ms", "-1"}}, ms));
  EXPECT_EQ(ms, -1);
  // A broker: log.retention.ms wins over .minutes over .hours.
  EXPECT_TRUE(replay::retention_of({{"log.retention.hours", "168"}}, ms));
  EXPECT_EQ(ms, 7 * kDay);
  EXPECT_TRUE(replay::retention_of({{"log.retention.hours", "168"}, {"log.retention.minutes", "30"}}, ms));
  EXPECT_EQ(ms, 1'800'000);
  EXPECT_TRUE(replay::retention_of({{"log.retention.hours", "168"}, {"log.retention.ms", "1000"}}, ms));
  EXPECT_EQ(ms, 1000);
  EXPECT_FALSE(replay::retention_of({{"cleanup.policy", "compact"}}, ms));
  EXPECT_FALSE(replay::retention_of({{"retention.ms", "soon"}}, ms));
}

// ListOffsets v10 (flexible): one topic by name, one partition asking for `timestamp`.
std::vector<uint8_t> list_offsets_request(int64_t timestamp) {
  Bytes b = test::request_header_v2(2, 10, 3);
  b.i32(-1).i8(0)                                  // ReplicaId, IsolationLevel
      .carr(1).cstr("aged").carr(1).i32(0).i32(-1).i64(timestamp).tags0().tags0()  // Partition, CurrentLeaderEpoch, Timestamp
      .i32(30000).tags0();                         // TimeoutMs
  return b.message();
}
std::vector<uint8_t> list_offsets_response(int64_t timestamp, int64_t offset) {
  Bytes b;
  b.i32(3).tags0().i32(0)                           // correlation id, header tags, ThrottleTimeMs
      .carr(1).cstr("aged").carr(1).i32(0).i16(0).i64(timestamp).i64(offset).i32(0).tags0().tags0().tags0();
  return b.message();
}

TEST(TimeShift, ListOffsetsByTimeAsksForTheShiftedTimeAndItsAnswerIsComparedModuloTheShift) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  st.set_time_shift(30 * kDay);
  ASSERT_TRUE(st.substituting());
  for (int64_t special : {-1, -2, -3, -4, -5}) {  // latest, earliest, max timestamp, ...: not times
    const auto b = list_offsets_request(special);
    Frame f;
    d.decode_request(b, f);
    ASSERT_TRUE(f.ok());
    st.rewrite_request(f, 1);
    std::vector<uint8_t> out;
    std::string error;
    ASSERT_TRUE(FrameEncoder(ps()).encode(f, out, error)) << error;
    EXPECT_EQ(out, b) << special;
  }
  const auto b = list_offsets_request(k2026_11_29 + 5000);
  Frame f;
  d.decode_request(b, f);
  ASSERT_TRUE(st.may_rewrite(*f.program));
  st.rewrite_request(f, 1);
  std::vector<uint8_t> out;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(f, out, error)) << error;
  EXPECT_EQ(out, list_offsets_request(k2026_11_29 + 30 * kDay + 5000));

  // The recorded answer names the record found at that time; the target's
  // names the same record, 30 days later. A -1 (no record) stays -1.
  const auto rec_b = list_offsets_response(k2026_11_29 + 5000, 5);
  const auto live_b = list_offsets_response(k2026_11_29 + 30 * kDay + 5000, 5);
  const auto wrong_b = list_offsets_response(k2026_11_29 + 5000, 5);
  Frame rec, live, wrong;
  d.decode_response(rec_b, 2, 10, rec);
  d.decode_response(live_b, 2, 10, live);
  d.decode_response(wrong_b, 2, 10, wrong);
  ASSERT_TRUE(rec.ok() && live.ok() && wrong.ok());
  st.translate_response(rec, f, 1);
  std::vector<replay::Difference> diffs;
  replay::compare(ps(), rec, live, {}, diffs);
  EXPECT_TRUE(diffs.empty()) << diffs.front().path << " " << diffs.front().recorded << " " << diffs.front().replayed;
  // A target that answers with the unshifted time differs, by the shift.
  replay::compare(ps(), rec, wrong, {}, diffs);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].path, "body.topics[0].partitions[0].timestamp");
  EXPECT_EQ(diffs[0].recorded, std::to_string(k2026_11_29 + 30 * kDay + 5000));
  const auto none_b = list_offsets_response(-1, -1);
  Frame none, untouched;
  d.decode_response(none_b, 2, 10, none);
  d.decode_response(none_b, 2, 10, untouched);
  st.translate_response(none, f, 1);
  diffs.clear();
  replay::compare(ps(), none, untouched, {}, diffs);
  EXPECT_TRUE(diffs.empty()) << diffs.front().path << " " << diffs.front().recorded;
}

// ProduceRequest v11 (flexible; topics by name) carrying `records`.
std::vector<uint8_t> produce_request(const std::vector<uint8_t>& records) {
  Bytes b = test::request_header_v2(0, 11, 9);
  b.cnull().i16(-1).i32(30000).carr(1).cstr("aged").carr(1).i32(0).cbytes(records).tags0().tags0().tags0();
  return b.message();
}

TEST(TimeShift, ProduceBatchesMoveAndTheirOldestTimePerTopicIsRead) {
  FrameDecoder d(ps());
  replay::ReplayState st(ps(), {});
  st.set_time_shift(38 * kDay);
  auto records = batch_at(k2026_11_29 - 30 * kDay);
  auto second = batch_at(k2026_11_29 - 30 * kDay + 1000);
  records.insert(records.end(), second.begin(), second.end());
  const auto b = produce_request(records);
  Frame f;
  d.decode_request(b, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  st.rewrite_request(f, 1);
  std::vector<uint8_t> out;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps()).encode(f, out, error)) << error;
  auto want = batch_at(k2026_11_29 + 8 * kDay);
  auto want2 = batch_at(k2026_11_29 + 8 * kDay + 1000);
  want.insert(want.end(), want2.begin(), want2.end());
  EXPECT_EQ(out, produce_request(want));

  // What the capture says: sent on 2026-11-29 at 00:01, records of 30 days before.
  replay::Recording rec;
  rec.sessions.emplace_back();
  replay::Exchange e;
  e.request = b;
  e.api_key = 0;
  e.api_version = 11;
  e.request_us = (k2026_11_29 + 60'000) * 1000;
  rec.sessions.back().exchanges.push_back(e);
  const replay::CaptureTimes t = replay::capture_times(ps(), rec);
  EXPECT_EQ(t.batches, 2u);
  EXPECT_EQ(t.oldest_ms.at("aged"), k2026_11_29 - 30 * kDay);
  // The youngest batch's newest record: base + 1000 + 250, sent at +60 s.
  EXPECT_EQ(t.min_age_ms, 30 * kDay + 60'000 - 1250);
  EXPECT_EQ(t.first_us, e.request_us);
}

}  // namespace
}  // namespace kwire

namespace kwire {
namespace {

// DescribeTransactions v0 response: one transaction started at `start_ms`.
std::vector<uint8_t> describe_transactions(int64_t start_ms) {
  Bytes b;
  b.i32(5).tags0().i32(0)                                           // correlation id, header tags, ThrottleTimeMs
      .carr(1).i16(0).cstr("txn-a").cstr("Ongoing").i32(60000).i64(start_ms).i64(7).i16(0)
      .carr(1).cstr("orders").carr(1).i32(0).tags0()               // Topics: orders [0]
      .tags0().tags0();
  return b.message();
}

std::vector<replay::Difference> compare_times(int64_t recorded, int64_t live, const replay::CompareOptions& o) {
  FrameDecoder d(ps());
  const auto rb = describe_transactions(recorded), lb = describe_transactions(live);
  Frame rec, lv;
  d.decode_response(rb, 65, 0, rec);
  d.decode_response(lb, 65, 0, lv);
  EXPECT_TRUE(rec.ok() && lv.ok());
  std::vector<replay::Difference> out;
  replay::compare(ps(), rec, lv, o, out);
  return out;
}

TEST(WallClock, ATransactionsStartTimeIsATimeOfTheReplaysRun) {
  replay::CompareOptions o;
  o.run_from_ms = k2026_11_29 + 8 * kDay;
  o.run_to_ms = o.run_from_ms + 20'000;
  // Recorded on 2026-11-29, started 5 s into the replay: the same, as a time.
  auto d = compare_times(k2026_11_29 + 3000, o.run_from_ms + 5000, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].ignored);
  EXPECT_EQ(d[0].rule, replay::kWallClockRule);
  EXPECT_EQ(d[0].path, "body.transactionStates[0].transactionStartTimeMs");
  // Clocks read apart: a second of slack either side.
  EXPECT_TRUE(compare_times(k2026_11_29, o.run_from_ms - 900, o).front().ignored);
  EXPECT_TRUE(compare_times(k2026_11_29, o.run_to_ms + 900, o).front().ignored);
  // Before the replay began, or after its last answer: not a time of this run.
  d = compare_times(k2026_11_29, o.run_from_ms - 60'000, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
  d = compare_times(k2026_11_29, o.run_to_ms + 60'000, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
  // -1 (no transaction running) is a value: -1 on both sides is the same, a time against -1 is not.
  EXPECT_TRUE(compare_times(-1, -1, o).empty());
  d = compare_times(-1, o.run_from_ms + 5000, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
  d = compare_times(k2026_11_29, -1, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
  // Without a run (compare outside a replay), the values are compared as they are.
  d = compare_times(k2026_11_29, o.run_from_ms + 5000, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].ignored);
}

}  // namespace
}  // namespace kwire
