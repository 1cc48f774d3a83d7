// Share groups in replay (replay/share.hpp): what a member holds acquired on
// each side, the acknowledgements that stand for the recorded ones, and the
// requests and answers they are read from and written into, built byte by
// byte from the specs (ShareFetch v2, ShareAcknowledge v2,
// DescribeShareGroupOffsets v1 of Kafka 4.4.0).
#include <gtest/gtest.h>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "replay/share.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using replay::AckBatch;
using replay::OffsetRange;
using replay::ShareKey;
using replay::ShareLedger;
using test::Bytes;

const ProgramSet& ps() { return ProgramSet::release(); }

// A topic id: 16 bytes of `fill`, raw as the ledger keys it.
std::string topic_id(uint8_t fill) { return std::string(16, static_cast<char>(fill)); }

const std::string kMember = "GcQmOjwkQLumTFN9aUCIUA";

TEST(ShareLedger, TheKthRecordHeldInTheCaptureStandsForTheKthHeldLive) {
  ShareLedger l;
  const ShareKey k{kMember, topic_id(7), 0};
  l.acquired(k, {{10, 12}}, {{20, 21}});
  // Release the first, accept the other two: live, release 20 and accept 21.
  const auto live = l.translate(k, {{10, 12, {2, 1, 1}}});
  EXPECT_EQ(live, (std::vector<AckBatch>{{20, 20, {2}}, {21, 21, {1}}}));
  EXPECT_TRUE(l.held(k, false)->empty());
  EXPECT_TRUE(l.held(k, true)->empty());
}

TEST(ShareLedger, WhatTheLiveMemberHoldsBeyondIsAcknowledgedAsTheLastRecordedRecord) {
  ShareLedger l;
  const ShareKey k{kMember, topic_id(7), 3};
  l.acquired(k, {{5, 6}}, {{5, 9}});
  EXPECT_EQ(l.translate(k, {{5, 6, {1}}}), (std::vector<AckBatch>{{5, 9, {1}}}));
  EXPECT_TRUE(l.held(k, true)->empty());
}

TEST(ShareLedger, APartialAcknowledgementLeavesTheRestHeldOnBothSides) {
  ShareLedger l;
  const ShareKey k{kMember, topic_id(7), 0};
  l.acquired(k, {{0, 3}}, {{40, 42}});
  EXPECT_EQ(l.translate(k, {{0, 1, {1}}}), (std::vector<AckBatch>{{40, 41, {1}}}));
  EXPECT_EQ(*l.held(k, false), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*l.held(k, true), (std::vector<int64_t>{42}));
  // Offsets 2 and 3 are now the first two held: the live side has one of them.
  EXPECT_EQ(l.translate(k, {{2, 3, {3}}}), (std::vector<AckBatch>{{42, 42, {3}}}));
}

TEST(ShareLedger, ARenewKeepsTheRecordsHeld) {
  ShareLedger l;
  const ShareKey k{kMember, topic_id(7), 0};
  l.acquired(k, {{0, 1}}, {{8, 9}});
  EXPECT_EQ(l.translate(k, {{0, 1, {replay::kAckRenew}}}), (std::vector<AckBatch>{{8, 9, {replay::kAckRenew}}}));
  EXPECT_EQ(l.held(k, true)->size(), 2u);
  EXPECT_EQ(l.held(k, false)->size(), 2u);
}

TEST(ShareLedger, OffsetsItDoesNotKnowGoAsRecorded) {
  ShareLedger l;
  const ShareKey k{kMember, topic_id(7), 0};
  EXPECT_EQ(l.translate(k, {{4, 6, {1}}}), (std::vector<AckBatch>{{4, 6, {1}}}));
  l.acquired(k, {{0, 0}}, {{0, 0}});
  EXPECT_EQ(l.translate(k, {{0, 0, {1}}, {9, 9, {3}}}), (std::vector<AckBatch>{{0, 0, {1}}, {9, 9, {3}}}));
}

TEST(ShareLedger, SettleAcknowledgesWhatOnlyTheLiveMemberHolds) {
  ShareLedger l;
  const ShareKey a{kMember, topic_id(7), 0}, b{kMember, topic_id(7), 1}, other{"other", topic_id(7), 0};
  l.acquired(a, {}, {{7, 8}});
  l.acquired(b, {{3, 3}}, {{3, 4}});   // the recorded member still holds 3: not settled
  l.acquired(other, {}, {{9, 9}});
  auto s = l.settle(kMember);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, a);
  EXPECT_EQ(s[0].second, (std::vector<AckBatch>{{7, 8, {replay::kAckAccept}}}));
  EXPECT_TRUE(l.settle(kMember).empty());
  // With the type the member used last.
  l.translate(b, {{3, 3, {3}}});   // reject 3, and (all held) 4 with it
  l.acquired(a, {}, {{10, 10}});
  s = l.settle(kMember);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].second, (std::vector<AckBatch>{{10, 10, {3}}}));
}

TEST(ShareLedger, BatchesJoinConsecutiveOffsetsOfOneType) {
  EXPECT_EQ(replay::ack_batches({{3, 1}, {1, 1}, {2, 1}, {5, 1}, {6, 2}, {6, 1}}),
            (std::vector<AckBatch>{{1, 3, {1}}, {5, 5, {1}}, {6, 6, {2}}}));
}

std::string text(const std::vector<OffsetRange>& rs) {
  std::string out;
  for (const auto& r : rs) out += (out.empty() ? "" : " ") + std::to_string(r.first) + "-" + std::to_string(r.last);
  return out;
}

TEST(ShareLedger, RecordsAcquiredInTheCaptureByNoLiveMemberAreNamed) {
  replay::OffsetSet s, t;
  s.add(0, 4);
  s.add(10, 12);
  s.add(5, 6);   // joins 0-4
  t.add(2, 3);
  t.add(11, 20);
  const auto lack = s.minus(t);
  ASSERT_EQ(lack.size(), 3u);
  EXPECT_EQ(text(lack), "0-1 4-6 10-10");

  ShareLedger l;
  // Two members of group g: the capture's a took 0-4 and b 5-9; live, a took 0-6 and b 8-9.
  l.acquired({"a", topic_id(7), 0}, {{0, 4}}, {{0, 6}}, "g", 11);
  l.acquired({"b", topic_id(7), 0}, {{5, 9}}, {{8, 9}}, "g", 12);
  const auto never = l.never_acquired();
  ASSERT_EQ(never.size(), 1u);
  EXPECT_EQ(never[0].where.group, "g");
  EXPECT_EQ(never[0].exchange, 12u);
  EXPECT_EQ(text(never[0].offsets), "7-7");
  EXPECT_TRUE(never[0].in_last);   // b's answer was the last to acquire, 7 among them
  l.acquired({"a", topic_id(7), 0}, {{10, 10}}, {{10, 10}}, "g", 13);
  ASSERT_EQ(l.never_acquired().size(), 1u);
  EXPECT_EQ(l.never_acquired()[0].exchange, 13u);
  EXPECT_FALSE(l.never_acquired()[0].in_last);
}

// The frame points into `bytes`, which must outlive it.
Frame decode_request(const std::vector<uint8_t>& bytes) {
  FrameDecoder d(ps());
  d.set_nested(false);
  Frame f;
  d.decode_request(bytes, f);
  EXPECT_TRUE(f.ok());
  return f;
}

// ShareAcknowledge v2: GroupId, MemberId, ShareSessionEpoch, IsRenewAck,
// Topics [TopicId, Partitions [PartitionIndex, AcknowledgementBatches
// [FirstOffset, LastOffset, AcknowledgeTypes]]].
using Partitions = std::vector<std::pair<int, std::vector<AckBatch>>>;

// A topic's Partitions array of acknowledgements, and the topic's tags.
void put_partitions(Bytes& b, const Partitions& partitions) {
  b.carr(partitions.size());
  for (const auto& [p, batches] : partitions) {
    b.i32(p).carr(batches.size());
    for (const AckBatch& a : batches) {
      b.i64(a.first).i64(a.last).carr(a.types.size());
      for (int8_t t : a.types) b.i8(t);
      b.tags0();
    }
    b.tags0();
  }
  b.tags0();
}

std::vector<uint8_t> share_acknowledge(const Partitions& partitions) {
  Bytes b = test::request_header_v2(79, 2, 9, "kwire-share-a");
  b.cstr("share-app").cstr(kMember).i32(4).boolean(false).carr(1).uuid(7);
  put_partitions(b, partitions);
  b.tags0();
  return b.message();
}

std::vector<uint8_t> encode(const Frame& f) {
  std::vector<uint8_t> out;
  std::string error;
  EXPECT_TRUE(FrameEncoder(ps()).encode(f, out, error)) << error;
  return out;
}

TEST(ShareAcknowledgements, ARequestCarriesTheLiveMembersOffsets) {
  ShareLedger l;
  l.acquired({kMember, topic_id(7), 0}, {{100, 102}}, {{200, 201}});
  l.acquired({kMember, topic_id(7), 1}, {{50, 50}}, {{50, 50}});
  const auto recorded = share_acknowledge({{0, {{100, 100, {2}}, {101, 102, {1}}}}, {1, {{50, 50, {1}}}}});
  Frame f = decode_request(recorded);
  EXPECT_EQ(replay::translate_acknowledgements(f, ps(), l), 1);   // partition 1 stays as it was
  EXPECT_EQ(encode(f), share_acknowledge({{0, {{200, 200, {2}}, {201, 201, {1}}}}, {1, {{50, 50, {1}}}}}));
}

// ShareFetch v2 with no acknowledgements and no partitions (an incremental
// fetch of a share session), or with the given ones.
std::vector<uint8_t> share_fetch(uint8_t topic, const Partitions& partitions) {
  Bytes b = test::request_header_v2(78, 2, 10, "kwire-share-a");
  b.cstr("share-app").cstr(kMember).i32(5).i32(500).i32(1).i32(52428800).i32(500).i32(500).i8(0).boolean(false);
  if (partitions.empty()) {
    b.carr(0);
  } else {
    b.carr(1).uuid(topic);
    put_partitions(b, partitions);
  }
  b.carr(0).tags0();
  return b.message();
}

TEST(ShareAcknowledgements, RecordsOnlyTheLiveMemberHoldsAreAcknowledgedInItsNextFetch) {
  ShareLedger l;
  l.acquired({kMember, topic_id(9), 2}, {}, {{7, 8}});
  const auto recorded = share_fetch(9, {});
  Frame f = decode_request(recorded);
  EXPECT_EQ(replay::translate_acknowledgements(f, ps(), l), 1);
  EXPECT_EQ(encode(f), share_fetch(9, {{2, {{7, 8, {1}}}}}));
  // Once acknowledged, nothing more to add.
  Frame again = decode_request(recorded);
  EXPECT_EQ(replay::translate_acknowledgements(again, ps(), l), 0);
}

// ShareFetch v2 answer with one topic (id of `topic`) and partition 0 that
// acquired `ranges` (no records: AcquiredRecords is what is read).
std::vector<uint8_t> share_fetch_answer(uint8_t topic, const std::vector<OffsetRange>& ranges) {
  Bytes b;
  b.i32(10).tags0();                       // response header v1
  b.i32(0).i16(0).cnull().i32(30000);      // ThrottleTimeMs, ErrorCode, ErrorMessage, AcquisitionLockTimeoutMs
  b.carr(1).uuid(topic).carr(1);
  b.i32(0).i16(0).cnull().i16(0).cnull();  // PartitionIndex, ErrorCode, ErrorMessage, AcknowledgeErrorCode, ...Message
  b.i32(1).i32(0).tags0();                 // CurrentLeader
  b.uvarint(1);                            // Records: none (empty)
  b.carr(ranges.size());
  for (const auto& r : ranges) b.i64(r.first).i64(r.last).i16(1).tags0();
  b.tags0().tags0();
  b.carr(0).tags0();                       // NodeEndpoints
  return b.message();
}

TEST(ShareAcknowledgements, WhatAFetchAcquiredIsReadFromBothAnswers) {
  FrameDecoder d(ps());
  d.set_nested(false);
  Frame rec, live;
  const auto rec_bytes = share_fetch_answer(9, {{0, 2}, {5, 5}}), live_bytes = share_fetch_answer(9, {{3, 4}});
  d.decode_response(rec_bytes, 78, 2, rec);
  d.decode_response(live_bytes, 78, 2, live);
  ASSERT_TRUE(rec.ok()) << (rec.errors.empty() ? "" : rec.errors.front().reason);
  ASSERT_TRUE(live.ok());
  ShareLedger l;
  const auto request = share_fetch(9, {});
  replay::learn_acquired(decode_request(request), rec, live, ps(), l, 3);
  const ShareKey k{kMember, topic_id(9), 0};
  ASSERT_TRUE(l.knows(k));
  EXPECT_EQ(*l.held(k, false), (std::vector<int64_t>{0, 1, 2, 5}));
  EXPECT_EQ(*l.held(k, true), (std::vector<int64_t>{3, 4}));
  const auto never = l.never_acquired();
  ASSERT_EQ(never.size(), 1u);
  EXPECT_EQ(never[0].where.group, "share-app");
  EXPECT_EQ(text(never[0].offsets), "0-2 5-5");
}

// DescribeShareGroupOffsets v1 answer: group share-app, topic share-in, partition 0.
std::vector<uint8_t> share_offsets_answer(int64_t start, int64_t lag) {
  Bytes b;
  b.i32(6).tags0();
  b.i32(0).carr(1).cstr("share-app").carr(1).cstr("share-in").uuid(9).carr(1);
  b.i32(0).i64(start).i32(0).i64(lag).i16(0).cnull().tags0();
  b.tags0().i16(0).cnull().tags0().tags0();
  return b.message();
}

TEST(ShareAcknowledgements, AStartOffsetWithNothingLeftToAcknowledgeFollowsTheBatching) {
  FrameDecoder d(ps());
  d.set_nested(false);
  Frame rec, live, lagging;
  const auto a = share_offsets_answer(59, 0), b = share_offsets_answer(58, 0), c = share_offsets_answer(58, 1);
  d.decode_response(a, 90, 1, rec);
  d.decode_response(b, 90, 1, live);
  d.decode_response(c, 90, 1, lagging);
  ASSERT_TRUE(rec.ok() && live.ok() && lagging.ok());
  std::vector<replay::Difference> diffs = {{"body.groups[0].topics[0].partitions[0].startOffset", "59", "58", "", false}};
  replay::settled_start_offsets(rec, live, ps(), diffs);
  EXPECT_TRUE(diffs[0].ignored);
  diffs[0] = {"body.groups[0].topics[0].partitions[0].startOffset", "59", "58", "", false};
  replay::settled_start_offsets(rec, lagging, ps(), diffs);
  EXPECT_FALSE(diffs[0].ignored);   // a record left unacknowledged on the target
}

TEST(ShareAcknowledgements, ErrorCodesInAnAnswersTextAreFound) {
  EXPECT_FALSE(replay::json_names_error(R"({"partitionIndex":0,"errorCode":0,"acknowledgeErrorCode":0})"));
  EXPECT_TRUE(replay::json_names_error(R"({"partitionIndex":0,"errorCode":0,"acknowledgeErrorCode":121})"));
  EXPECT_TRUE(replay::json_names_error(R"({"errorCode":-1})"));
}

}  // namespace
}  // namespace kwire
