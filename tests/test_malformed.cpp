// Malformed input: each problem is reported with its offset and a reason
// that names it, and what decoded before the problem is kept.
#include <gtest/gtest.h>

#include <deque>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/records.hpp"
#include "tests/test_support.hpp"

using namespace kwire;
using kwire::test::Bytes;

namespace {

// Frames are views into their message bytes, so the bytes must outlive the
// Frame: the helper keeps every message for the rest of the test program.
Frame decode_request(std::vector<uint8_t> bytes) {
  static std::deque<std::vector<uint8_t>> kept;
  kept.push_back(std::move(bytes));
  Frame f;
  FrameDecoder(ProgramSet::release()).decode_request(kept.back(), f);
  return f;
}

}  // namespace

TEST(Malformed, WellFormedHeartbeatDecodes) {
  Frame f = decode_request(test::heartbeat_request(7, "m1", 3));
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_EQ(f.program->api_name, "StreamsGroupHeartbeat");
  EXPECT_EQ(test::at(f, ProgramSet::release(), "MemberEpoch")->v.i, 3);
}

TEST(Malformed, TruncatedFrameKeepsTheFieldsBeforeTheCut) {
  auto bytes = test::heartbeat_request(7, "member-1", 3);
  bytes.resize(bytes.size() - 10);
  // Fix the size prefix so only the body is short.
  uint32_t n = static_cast<uint32_t>(bytes.size() - 4);
  bytes[0] = uint8_t(n >> 24); bytes[1] = uint8_t(n >> 16); bytes[2] = uint8_t(n >> 8); bytes[3] = uint8_t(n);
  Frame f = decode_request(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors.front().offset, bytes.size());
  EXPECT_EQ(f.errors.front().reason, "ActiveTasks: length varint runs past the end");
  const auto& ps = ProgramSet::release();
  EXPECT_EQ(test::at(f, ps, "GroupId")->str(), "orders-app");
  EXPECT_EQ(test::at(f, ps, "MemberId")->str(), "member-1");
  EXPECT_EQ(test::at(f, ps, "MemberEpoch")->v.i, 3);
}

TEST(Malformed, SizePrefixThatDisagreesWithTheBytes) {
  auto bytes = test::heartbeat_request(7, "m", 1);
  bytes[3] += 5;
  Frame f = decode_request(bytes);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, 0u);
  EXPECT_NE(f.errors[0].reason.find("size prefix"), std::string::npos);
}

TEST(Malformed, NegativeStringLength) {
  // DeleteGroups v1 (classic): GroupsNames [ "a", <length -5> ]
  Bytes b;
  b.i16(42).i16(1).i32(9).str("c").i32(2).str("a").i16(-5);
  Frame f = decode_request(b.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors[0].offset, 4u + 10 + 1 + 4 + 3);
  EXPECT_NE(f.errors[0].reason.find("negative length -5"), std::string::npos) << f.errors[0].reason;
}

TEST(Malformed, HugeStringAndArrayLengthsAreNotTrusted) {
  Bytes s;
  s.i16(42).i16(1).i32(9).str("c").i32(1).i16(30000).raw("abc");
  Frame f = decode_request(s.message());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.errors[0].reason.find("length 30000 exceeds the 3 bytes left"), std::string::npos) << f.errors[0].reason;

  Bytes a;
  a.i16(42).i16(1).i32(9).str("c").i32(0x7fffffff);
  f = decode_request(a.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors[0].offset, 4u + 10 + 1);
  EXPECT_NE(f.errors[0].reason.find("array length 2147483647 cannot fit"), std::string::npos) << f.errors[0].reason;
}

TEST(Malformed, OverlongVarint) {
  // DeleteGroups v2 (flexible): compact array length as a 6-byte varint.
  Bytes b;
  b.i16(42).i16(2).i32(9).str("c").tags0();
  for (int i = 0; i < 5; ++i) b.i8(0x81);
  b.i8(0x01);
  Frame f = decode_request(b.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors[0].offset, 4u + 12);  // header: 2+2+4, client id 3, tags 1
  EXPECT_NE(f.errors[0].reason.find("overlong"), std::string::npos) << f.errors[0].reason;
}

TEST(Malformed, UnknownApiKeyAndVersion) {
  Bytes k;
  k.i16(999).i16(0).i32(5).str("c");
  Frame f = decode_request(k.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.correlation_id, 5);
  EXPECT_EQ(f.errors[0].offset, 4u);
  EXPECT_EQ(f.errors[0].reason, "unknown api key 999");

  Bytes v;
  v.i16(88).i16(9).i32(6).str("c").tags0();
  f = decode_request(v.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors[0].offset, 6u);
  EXPECT_EQ(f.errors[0].reason, "unknown version 9 of StreamsGroupHeartbeat (known: 0-1)");
}

TEST(Malformed, TrailingBytesAfterTheMessage) {
  Bytes b;
  b.i16(42).i16(1).i32(9).str("c").i32(0).raw("xyz");
  Frame f = decode_request(b.message());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.errors[0].offset, 4u + 10 + 1 + 4);
  EXPECT_NE(f.errors[0].reason.find("3 bytes left after the end of DeleteGroupsRequest v1"), std::string::npos);
}

TEST(Malformed, CorruptCompressedRecordsInAProduceRequest) {
  BatchSpec batch;
  batch.codec = Codec::Zstd;
  batch.records.push_back({0, std::string("k"), std::string("value value value value"), {}});
  auto records = encode_record_batch(batch);
  // Damage the compressed payload (the last bytes of the batch).
  for (size_t i = records.size() - 6; i < records.size(); ++i) records[i] ^= 0x5a;
  // Produce v3 (classic): TransactionalId, Acks, TimeoutMs, TopicData[1]{Name, PartitionData[1]{Index, Records}}
  Bytes b;
  b.i16(0).i16(3).i32(11).str("c").i16(-1).i16(1).i32(1000).i32(1).str("orders").i32(1).i32(0)
      .i32(static_cast<int64_t>(records.size())).raw(records);
  Frame f = decode_request(b.message());
  ASSERT_FALSE(f.ok());
  const auto& e = f.errors.front();
  EXPECT_GE(e.offset, 4u + 10 + 1 + 2 + 2 + 4 + 4 + 8 + 4 + 4 + 4);
  EXPECT_LT(e.offset, b.message().size());
  EXPECT_FALSE(e.reason.empty());
  // The fields around the records are all there.
  const auto& ps = ProgramSet::release();
  EXPECT_EQ(test::at(f, ps, "TopicData[0].Name")->str(), "orders");
  EXPECT_EQ(test::at(f, ps, "TopicData[0].PartitionData[0].Records")->aux, records.size());
}
