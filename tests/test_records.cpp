// The `records` field: record batches v2 and legacy message sets, encoded
// with encode_record_batch / encode_legacy_message and decoded back into
// Frame nodes.
#include "dissector/protocol/records.hpp"

#include <gtest/gtest.h>
#include <lz4frame.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wire/wire.hpp"

namespace kwire {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytes_of(std::string_view s) { return {s.begin(), s.end()}; }
Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
uint32_t get32(const Bytes& b, size_t at) { return wire::load_be32(b.data() + at); }
void set32(Bytes& b, size_t at, uint32_t v) { wire::store_be32(b.data() + at, v); }

// Makes a v2 batch at `pos` consistent again after a test edited it.
void fix_batch(Bytes& b, size_t pos = 0) {
  set32(b, pos + 8, static_cast<uint32_t>(b.size() - pos - 12));
  set32(b, pos + 17, crc32c({b.data() + pos + 21, b.size() - pos - 21}));
}
// Same for a legacy message (CRC-32 from magic on).
void fix_legacy(Bytes& b, size_t pos = 0) {
  set32(b, pos + 8, static_cast<uint32_t>(b.size() - pos - 12));
  set32(b, pos + 12, static_cast<uint32_t>(crc32(0, b.data() + pos + 16, static_cast<uInt>(b.size() - pos - 16))));
}

// A v2 batch around hand-made record bytes: how the malformed-record tests
// build their input.
Bytes batch_with_body(const Bytes& body, int32_t count) {
  Bytes b = encode_record_batch({});
  b.insert(b.end(), body.begin(), body.end());
  set32(b, 57, static_cast<uint32_t>(count));
  fix_batch(b);
  return b;
}

constexpr uint32_t kBase = 100;  // where the records field starts in the message

// The tape must stay well formed whatever the input: every node lies inside
// its parent's subtree.
void expect_well_formed(const Frame& f) {
  for (uint32_t i = 0; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    ASSERT_GT(n.end, i) << "node " << i;
    ASSERT_LE(n.end, f.nodes.size()) << "node " << i;
    if (n.parent == i) continue;
    ASSERT_LT(n.parent, i) << "node " << i;
    ASSERT_LE(n.end, f.nodes[n.parent].end) << "node " << i;
  }
}

void decode_into(Frame& f, std::span<const uint8_t> data, const RecordsLimits& limits, uint8_t inner) {
  uint32_t field = f.open(kDescUnknownTag, WireType::Records, Frame::kRoot, kBase);
  decode_records(f, field, data, kBase, inner, limits);
  f.close(field, kBase + static_cast<uint32_t>(data.size()));
  expect_well_formed(f);
}

// Decodes `data` the way the message decoder does: as the bytes of a records
// field at wire offset kBase, under a Records node (node 0). The nodes view
// `data`, which must outlive the frame...
Frame decode(const Bytes& data, const RecordsLimits& limits = {}, uint8_t inner = 0) {
  Frame f;
  decode_into(f, data, limits, inner);
  return f;
}
// ... unless it is a temporary: then the frame keeps a copy (Frame::own).
Frame decode(Bytes&& data, const RecordsLimits& limits = {}, uint8_t inner = 0) {
  Frame f;
  std::string_view kept = f.own(std::string(data.begin(), data.end()));
  decode_into(f, {reinterpret_cast<const uint8_t*>(kept.data()), kept.size()}, limits, inner);
  return f;
}

std::vector<uint32_t> children(const Frame& f, uint32_t node) {
  std::vector<uint32_t> out;
  for (uint32_t c : Children(f, node)) out.push_back(c);
  return out;
}
std::vector<uint32_t> descs(const Frame& f, uint32_t node) {
  std::vector<uint32_t> out;
  for (uint32_t c : Children(f, node)) out.push_back(f.nodes[c].desc);
  return out;
}
const Node& child(const Frame& f, uint32_t node, uint32_t desc) {
  for (uint32_t c : Children(f, node))
    if (f.nodes[c].desc == desc) return f.nodes[c];
  ADD_FAILURE() << "node " << node << " has no child with desc " << desc;
  static const Node none;
  return none;
}
uint32_t child_index(const Frame& f, uint32_t node, uint32_t desc) {
  for (uint32_t c : Children(f, node))
    if (f.nodes[c].desc == desc) return c;
  ADD_FAILURE() << "node " << node << " has no child with desc " << desc;
  return node;
}
std::optional<std::string> text(const Node& n) {
  if (n.is_null()) return std::nullopt;
  return std::string(n.str());
}
std::string errors_of(const Frame& f) {
  std::string s;
  for (const DecodeError& e : f.errors) s += "@" + std::to_string(e.offset) + " " + e.reason + "\n";
  return s;
}

// A decoded record, for comparison with the RecordSpec it came from.
struct DecodedRecord {
  int64_t timestamp_delta;
  int64_t offset_delta;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  bool operator==(const DecodedRecord&) const = default;
};

DecodedRecord expected(const RecordSpec& r, int64_t offset_delta) {
  DecodedRecord d{r.timestamp_delta, offset_delta, r.key, r.value, {}};
  for (const RecordHeaderSpec& h : r.headers) d.headers.emplace_back(h.key, h.value);
  return d;
}

std::vector<DecodedRecord> records_of(const Frame& f, uint32_t batch) {
  std::vector<DecodedRecord> out;
  for (uint32_t r : Children(f, child_index(f, batch, kDescRecordsArray))) {
    DecodedRecord d{child(f, r, kDescTimestampDelta).v.i, child(f, r, kDescOffsetDelta).v.i,
                    text(child(f, r, kDescKey)), text(child(f, r, kDescValue)), {}};
    for (uint32_t h : Children(f, child_index(f, r, kDescHeadersArray)))
      d.headers.emplace_back(*text(child(f, h, kDescHeaderKey)), text(child(f, h, kDescHeaderValue)));
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<DecodedRecord> expected_records(const BatchSpec& b) {
  std::vector<DecodedRecord> out;
  for (size_t i = 0; i < b.records.size(); ++i) out.push_back(expected(b.records[i], static_cast<int64_t>(i)));
  return out;
}

BatchSpec sample_batch(Codec codec = Codec::None) {
  BatchSpec b;
  b.base_offset = 4200;
  b.partition_leader_epoch = 7;
  b.base_timestamp = 1700000000000;
  b.producer_id = 31;
  b.producer_epoch = 2;
  b.base_sequence = 90;
  b.codec = codec;
  b.records = {
      {0, "user-1", "clicked", {{"trace", "abc"}, {"tombstone", std::nullopt}}},
      {5, std::nullopt, "no key", {}},
      {12, "user-2", std::nullopt, {}},  // a tombstone
  };
  return b;
}

// ---------------------------------------------------------------------------
// Checksums

TEST(Crc32c, MatchesTheCastagnoliCheckValue) {
  Bytes check = bytes_of("123456789");
  EXPECT_EQ(crc32c(check), 0xE3069283u);
  EXPECT_EQ(detail::crc32c_portable(check), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
}

TEST(Crc32c, ChainsAcrossPieces) {
  Bytes check = bytes_of("123456789");
  uint32_t first = crc32c({check.data(), 4});
  EXPECT_EQ(crc32c({check.data() + 4, 5}, first), 0xE3069283u);
}

TEST(Crc32c, HardwareAndPortableAgreeForEveryLengthAndAlignment) {
  std::mt19937 rng(1);
  Bytes data(2000);  // past two rounds of the three-stream loop (768 bytes each)
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  for (size_t start = 0; start < 8; ++start)
    for (size_t len = 0; start + len <= data.size(); len += len < 300 ? 7 : 61) {
      std::span<const uint8_t> s{data.data() + start, len};
      ASSERT_EQ(crc32c(s), detail::crc32c_portable(s)) << start << "+" << len;
    }
}

TEST(Xxh32, MatchesTheChecksumLz4WritesAfterAFrame) {
  EXPECT_EQ(detail::xxh32({}), 0x02CC5D05u);
  for (size_t len : {1, 3, 4, 15, 16, 17, 31, 32, 33, 100, 4099}) {
    Bytes data(len);
    for (size_t i = 0; i < len; ++i) data[i] = static_cast<uint8_t>(i * 37 + 11);
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    Bytes frame(LZ4F_compressFrameBound(len, &prefs));
    frame.resize(LZ4F_compressFrame(frame.data(), frame.size(), data.data(), len, &prefs));
    const uint8_t* t = frame.data() + frame.size() - 4;  // little-endian xxh32 of the content
    uint32_t lz4_says = uint32_t(t[0]) | uint32_t(t[1]) << 8 | uint32_t(t[2]) << 16 | uint32_t(t[3]) << 24;
    EXPECT_EQ(detail::xxh32(data), lz4_says) << "length " << len;
  }
}

// ---------------------------------------------------------------------------
// Record batches

TEST(RecordBatch, UncompressedBatchHasTheDocumentedLayout) {
  BatchSpec spec = sample_batch();
  Bytes wire = encode_record_batch(spec);
  Frame f = decode(wire);
  ASSERT_TRUE(f.ok()) << errors_of(f);

  ASSERT_EQ(children(f, 0).size(), 1u);
  const uint32_t batch = 1;
  const Node& b = f.nodes[batch];
  EXPECT_EQ(b.desc, kDescRecordBatch);
  EXPECT_EQ(b.type, WireType::Struct);
  EXPECT_EQ(b.offset, kBase);
  EXPECT_EQ(b.length, wire.size());
  EXPECT_EQ(descs(f, batch),
            (std::vector<uint32_t>{kDescBaseOffset, kDescBatchLength, kDescPartitionLeaderEpoch, kDescMagic, kDescCrc,
                                   kDescAttributes, kDescLastOffsetDelta, kDescBaseTimestamp, kDescMaxTimestamp,
                                   kDescProducerId, kDescProducerEpoch, kDescBaseSequence, kDescRecordCount,
                                   kDescRecordsArray}));
  EXPECT_EQ(child(f, batch, kDescBaseOffset).v.i, 4200);
  EXPECT_EQ(child(f, batch, kDescBatchLength).v.i, static_cast<int64_t>(wire.size() - 12));
  EXPECT_EQ(child(f, batch, kDescPartitionLeaderEpoch).v.i, 7);
  EXPECT_EQ(child(f, batch, kDescMagic).v.i, 2);
  EXPECT_EQ(child(f, batch, kDescCrc).v.u, get32(wire, 17));
  EXPECT_EQ(child(f, batch, kDescCrc).type, WireType::Uint32);
  EXPECT_EQ(child(f, batch, kDescAttributes).v.i, 0);
  EXPECT_EQ(child(f, batch, kDescLastOffsetDelta).v.i, 2);
  EXPECT_EQ(child(f, batch, kDescBaseTimestamp).v.i, 1700000000000);
  EXPECT_EQ(child(f, batch, kDescMaxTimestamp).v.i, 1700000000012);
  EXPECT_EQ(child(f, batch, kDescProducerId).v.i, 31);
  EXPECT_EQ(child(f, batch, kDescProducerEpoch).v.i, 2);
  EXPECT_EQ(child(f, batch, kDescBaseSequence).v.i, 90);
  EXPECT_EQ(child(f, batch, kDescRecordCount).v.i, 3);

  // Header fields sit at their wire offsets.
  EXPECT_EQ(child(f, batch, kDescCrc).offset, kBase + 17);
  EXPECT_EQ(child(f, batch, kDescCrc).length, 4u);
  EXPECT_EQ(child(f, batch, kDescRecordCount).offset, kBase + 57);

  const uint32_t array = child_index(f, batch, kDescRecordsArray);
  EXPECT_EQ(f.nodes[array].type, WireType::Array);
  EXPECT_EQ(f.nodes[array].aux, 3u);
  EXPECT_EQ(f.nodes[array].offset, kBase + 61);
  EXPECT_EQ(f.nodes[array].offset + f.nodes[array].length, kBase + wire.size());

  const uint32_t first = children(f, array)[0];
  const Node& rec = f.nodes[first];
  EXPECT_EQ(rec.desc, kDescRecord);
  EXPECT_EQ(rec.flags, kElement);
  EXPECT_EQ(rec.offset, kBase + 61);
  EXPECT_EQ(descs(f, first), (std::vector<uint32_t>{kDescRecordLength, kDescRecordAttributes, kDescTimestampDelta,
                                                    kDescOffsetDelta, kDescKey, kDescValue, kDescHeadersArray}));
  EXPECT_EQ(child(f, first, kDescRecordLength).type, WireType::Varint);
  EXPECT_EQ(child(f, first, kDescRecordLength).v.i + 1, static_cast<int64_t>(rec.length));  // 1-byte varint
  EXPECT_EQ(child(f, first, kDescTimestampDelta).type, WireType::Varlong);

  // The key is a view into the message bytes: offset at its length varint,
  // length including the varint, v.p at the data.
  const Node& key = child(f, first, kDescKey);
  EXPECT_EQ(key.type, WireType::VarBytes);
  EXPECT_EQ(key.str(), "user-1");
  EXPECT_EQ(key.length, 1u + 6u);
  EXPECT_EQ(key.v.p, wire.data() + (key.offset - kBase) + 1);

  const uint32_t headers = child_index(f, first, kDescHeadersArray);
  EXPECT_EQ(f.nodes[headers].aux, 2u);
  const uint32_t h0 = children(f, headers)[0];
  EXPECT_EQ(f.nodes[h0].desc, kDescHeader);
  EXPECT_EQ(f.nodes[h0].flags, kElement);
  EXPECT_EQ(child(f, h0, kDescHeaderKey).type, WireType::VarString);
  EXPECT_EQ(child(f, h0, kDescHeaderKey).str(), "trace");

  EXPECT_EQ(records_of(f, batch), expected_records(spec));
}

TEST(RecordBatch, NullKeyAndValueAreMarkedNull) {
  BatchSpec spec;
  spec.records = {{0, std::nullopt, std::nullopt, {}}, {0, "", "", {}}};
  Frame f = decode(encode_record_batch(spec));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  std::vector<uint32_t> recs = children(f, child_index(f, 1, kDescRecordsArray));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_TRUE(child(f, recs[0], kDescKey).is_null());
  EXPECT_TRUE(child(f, recs[0], kDescValue).is_null());
  EXPECT_EQ(child(f, recs[0], kDescKey).length, 1u);  // just the varint -1
  // Empty is not null.
  EXPECT_FALSE(child(f, recs[1], kDescKey).is_null());
  EXPECT_EQ(child(f, recs[1], kDescValue).aux, 0u);
}

TEST(RecordBatch, HeadersKeepOrderAndNullValues) {
  BatchSpec spec;
  spec.records = {{3, "k", "v", {{"a", "1"}, {"b", std::nullopt}, {"a", ""}}}};
  Frame f = decode(encode_record_batch(spec));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  auto recs = records_of(f, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].headers, (std::vector<std::pair<std::string, std::optional<std::string>>>{
                                 {"a", "1"}, {"b", std::nullopt}, {"a", ""}}));
}

TEST(RecordBatch, TransactionalAndControlBitsShowInAttributes) {
  BatchSpec spec;
  spec.transactional = true;
  spec.control = true;
  spec.records = {{0, std::string("\0\0\0\1", 4), std::string("\0\0\0\0\0\0", 6), {}}};  // a COMMIT marker
  Frame f = decode(encode_record_batch(spec));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  EXPECT_EQ(child(f, 1, kDescAttributes).v.i, 0x30);
}

TEST(RecordBatch, EmptyFieldMakesNoNodes) {
  Frame f = decode({});
  EXPECT_TRUE(f.ok());
  EXPECT_EQ(f.nodes.size(), 1u);
}

TEST(RecordBatch, MultipleBatchesFollowEachOther) {
  BatchSpec a = sample_batch(), b = sample_batch(Codec::Zstd), c = sample_batch(Codec::Gzip);
  b.base_offset = 4203;
  c.base_offset = 4206;
  Bytes wa = encode_record_batch(a), wb = encode_record_batch(b), wc = encode_record_batch(c);
  Frame f = decode(concat({wa, wb, wc}));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  std::vector<uint32_t> batches = children(f, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(f.nodes[batches[0]].offset, kBase);
  EXPECT_EQ(f.nodes[batches[1]].offset, kBase + wa.size());
  EXPECT_EQ(f.nodes[batches[2]].offset, kBase + wa.size() + wb.size());
  EXPECT_EQ(child(f, batches[1], kDescBaseOffset).v.i, 4203);
  EXPECT_EQ(child(f, batches[2], kDescBaseOffset).v.i, 4206);
  // Two decompressed buffers; the first stays valid after the second is made.
  EXPECT_EQ(records_of(f, batches[1]), expected_records(b));
  EXPECT_EQ(records_of(f, batches[2]), expected_records(c));
  EXPECT_EQ(records_of(f, batches[0]), expected_records(a));
}

TEST(RecordBatch, InnerFlagOfTheFieldIsCarriedByEveryNode) {
  Frame f = decode(encode_record_batch(sample_batch()), {}, kInner);
  ASSERT_TRUE(f.ok()) << errors_of(f);
  for (uint32_t i = 1; i < f.nodes.size(); ++i) EXPECT_TRUE(f.nodes[i].flags & kInner) << "node " << i;
}

// Every codec, with values big enough to span several xerial / LZ4 blocks.
struct CodecCase {
  const char* name;
  Codec codec;
  bool xerial;
  bool content_size;
};

class CodecRoundTrip : public testing::TestWithParam<CodecCase> {};

TEST_P(CodecRoundTrip, DecodesToTheRecordsThatWereEncoded) {
  const CodecCase& c = GetParam();
  BatchSpec spec = sample_batch(c.codec);
  spec.snappy_xerial = c.xerial;
  spec.frame_content_size = c.content_size;
  std::string big(200000, 'x');
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  spec.records.push_back({20, "big", big, {{"h", "v"}}});
  Bytes wire = encode_record_batch(spec);
  if (c.codec == Codec::Snappy && c.xerial) {
    EXPECT_EQ(std::memcmp(wire.data() + 61, "\x82SNAPPY\0", 8), 0);
  }

  Frame f = decode(wire);
  ASSERT_TRUE(f.ok()) << errors_of(f);
  EXPECT_EQ(child(f, 1, kDescAttributes).v.i, static_cast<int>(c.codec));
  EXPECT_EQ(records_of(f, 1), expected_records(spec));

  // The array spans the compressed bytes on the wire; its records live in the
  // decompressed buffer, at offsets into it.
  const uint32_t array = child_index(f, 1, kDescRecordsArray);
  EXPECT_EQ(f.nodes[array].offset, kBase + 61);
  EXPECT_EQ(f.nodes[array].length, wire.size() - 61);
  EXPECT_EQ(f.nodes[array].aux, spec.records.size());
  EXPECT_EQ(f.nodes[array].flags & kInner, 0);
  const uint32_t first = children(f, array)[0];
  const uint8_t expect_inner = c.codec == Codec::None ? 0 : kInner;
  EXPECT_EQ(f.nodes[first].flags, kElement | expect_inner);
  EXPECT_EQ(f.nodes[first].offset, c.codec == Codec::None ? kBase + 61 : 0u);
  EXPECT_EQ(child(f, first, kDescKey).flags & kInner, expect_inner);
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, CodecRoundTrip,
    testing::Values(CodecCase{"None", Codec::None, false, false}, CodecCase{"Gzip", Codec::Gzip, false, false},
                    CodecCase{"SnappyXerial", Codec::Snappy, true, false},
                    CodecCase{"SnappyRaw", Codec::Snappy, false, false}, CodecCase{"Lz4", Codec::Lz4, false, false},
                    CodecCase{"Lz4WithContentSize", Codec::Lz4, false, true},
                    CodecCase{"ZstdStreamed", Codec::Zstd, false, false},
                    CodecCase{"ZstdWithContentSize", Codec::Zstd, false, true}),
    [](const testing::TestParamInfo<CodecCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------
// Legacy message sets

TEST(LegacyMessage, MagicZeroHasNoTimestamp) {
  Bytes wire = encode_legacy_message(0, 17, 0, "k", "hello");
  Frame f = decode(wire);
  ASSERT_TRUE(f.ok()) << errors_of(f);
  ASSERT_EQ(children(f, 0).size(), 1u);
  EXPECT_EQ(f.nodes[1].desc, kDescLegacyMessage);
  EXPECT_EQ(f.nodes[1].length, wire.size());
  EXPECT_EQ(descs(f, 1), (std::vector<uint32_t>{kDescLegacyOffset, kDescLegacySize, kDescLegacyCrc, kDescLegacyMagic,
                                                kDescLegacyAttributes, kDescLegacyKey, kDescLegacyValue}));
  EXPECT_EQ(child(f, 1, kDescLegacyOffset).v.i, 17);
  EXPECT_EQ(child(f, 1, kDescLegacySize).v.i, static_cast<int64_t>(wire.size() - 12));
  EXPECT_EQ(child(f, 1, kDescLegacyCrc).v.u, get32(wire, 12));
  EXPECT_EQ(child(f, 1, kDescLegacyMagic).v.i, 0);
  const Node& value = child(f, 1, kDescLegacyValue);
  EXPECT_EQ(value.type, WireType::Bytes);
  EXPECT_EQ(value.str(), "hello");
  EXPECT_EQ(value.length, 4u + 5u);
  EXPECT_EQ(value.offset + value.length, kBase + wire.size());
}

TEST(LegacyMessage, MagicOneCarriesATimestampAndNullKey) {
  Frame f = decode(encode_legacy_message(1, 5, 1600000000000, std::nullopt, "v"));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  EXPECT_EQ(child(f, 1, kDescLegacyTimestamp).v.i, 1600000000000);
  EXPECT_EQ(child(f, 1, kDescLegacyTimestamp).offset, kBase + 18);
  EXPECT_TRUE(child(f, 1, kDescLegacyKey).is_null());
  EXPECT_EQ(child(f, 1, kDescLegacyValue).str(), "v");
}

TEST(LegacyMessage, AMessageSetIsSeveralMessagesInARow) {
  Frame f = decode(concat({encode_legacy_message(1, 0, 1, "a", "1"), encode_legacy_message(1, 1, 2, "b", "2")}));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  std::vector<uint32_t> msgs = children(f, 0);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(child(f, msgs[1], kDescLegacyKey).str(), "b");
  EXPECT_EQ(f.nodes[msgs[1]].flags, 0);  // top-level entries are not array elements
}

TEST(LegacyMessage, CompressedWrapperIsDecodedIntoInnerMessages) {
  for (int magic : {0, 1}) {
    SCOPED_TRACE("magic " + std::to_string(magic));
    Bytes set = concat({encode_legacy_message(magic, 0, 10, "a", "first"),
                        encode_legacy_message(magic, 1, 11, std::nullopt, "second"),
                        encode_legacy_message(magic, 2, 12, "c", std::nullopt)});
    Bytes wire = encode_legacy_wrapper(magic, 2, 12, set, Codec::Gzip);
    Frame f = decode(wire);
    ASSERT_TRUE(f.ok()) << errors_of(f);
    EXPECT_EQ(child(f, 1, kDescLegacyAttributes).v.i, 1);
    EXPECT_TRUE(child(f, 1, kDescLegacyKey).is_null());

    const uint32_t inner = child_index(f, 1, kDescLegacyInner);
    EXPECT_EQ(f.nodes[inner].type, WireType::Array);
    EXPECT_EQ(f.nodes[inner].aux, 3u);
    // The array spans the compressed value on the wire.
    const Node& value = child(f, 1, kDescLegacyValue);
    EXPECT_EQ(f.nodes[inner].offset, value.offset + 4);
    EXPECT_EQ(f.nodes[inner].length, value.aux);

    std::vector<uint32_t> msgs = children(f, inner);
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(f.nodes[msgs[0]].desc, kDescLegacyMessage);
    EXPECT_EQ(f.nodes[msgs[0]].flags, kElement | kInner);
    EXPECT_EQ(f.nodes[msgs[0]].offset, 0u);  // offsets into the decompressed set
    EXPECT_EQ(f.nodes[msgs[1]].offset, 12u + static_cast<uint32_t>(get32(set, 8)));
    EXPECT_EQ(child(f, msgs[0], kDescLegacyValue).str(), "first");
    EXPECT_TRUE(child(f, msgs[1], kDescLegacyKey).is_null());
    EXPECT_TRUE(child(f, msgs[2], kDescLegacyValue).is_null());
    EXPECT_EQ(child(f, msgs[2], kDescLegacyOffset).v.i, 2);
  }
}

struct LegacyCase {
  const char* name;
  int magic;
  Codec codec;
};
class LegacyCodecs : public testing::TestWithParam<LegacyCase> {};

TEST_P(LegacyCodecs, WrappedMessageRoundTrips) {
  const LegacyCase& c = GetParam();
  std::string value(70000, 'q');  // more than one xerial / LZ4 block
  Frame f = decode(encode_legacy_message(c.magic, 9, 1234, "key", value, c.codec));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  std::vector<uint32_t> msgs = children(f, child_index(f, 1, kDescLegacyInner));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(child(f, msgs[0], kDescLegacyKey).str(), "key");
  EXPECT_EQ(child(f, msgs[0], kDescLegacyValue).str(), value);
  EXPECT_EQ(child(f, msgs[0], kDescLegacyOffset).v.i, c.magic == 0 ? 9 : 0);  // v1 inner offsets are relative
}

INSTANTIATE_TEST_SUITE_P(Codecs, LegacyCodecs,
                         testing::Values(LegacyCase{"V0Gzip", 0, Codec::Gzip}, LegacyCase{"V1Gzip", 1, Codec::Gzip},
                                         LegacyCase{"V0Snappy", 0, Codec::Snappy},
                                         LegacyCase{"V1Snappy", 1, Codec::Snappy}, LegacyCase{"V0Lz4", 0, Codec::Lz4},
                                         LegacyCase{"V1Lz4", 1, Codec::Lz4}),
                         [](const testing::TestParamInfo<LegacyCase>& i) { return std::string(i.param.name); });

// KAFKA-3160: Kafka 0.8/0.9 computed the LZ4 frame header checksum over the
// magic number too. Those frames are invalid to a strict LZ4 reader, and
// magic 0 messages carry them.
TEST(LegacyMessage, MagicZeroLz4ToleratesTheKafka3160HeaderChecksum) {
  Bytes wire = encode_legacy_message(0, 3, 0, "k", "old client", Codec::Lz4);
  const size_t value_at = 12 + 4 + 1 + 1 + 4 + 4;  // null key, then the value's data
  Bytes frame(wire.begin() + value_at, wire.end());
  LZ4F_dctx* d;
  ASSERT_FALSE(LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)));
  uint8_t out[256];
  size_t out_n = sizeof out, in_n = frame.size();
  size_t r = LZ4F_decompress(d, out, &out_n, frame.data(), &in_n, nullptr);
  LZ4F_freeDecompressionContext(d);
  ASSERT_TRUE(LZ4F_isError(r)) << "the frame should carry the wrong header checksum";

  Frame f = decode(wire);
  ASSERT_TRUE(f.ok()) << errors_of(f);
  uint32_t inner = children(f, child_index(f, 1, kDescLegacyInner))[0];
  EXPECT_EQ(child(f, inner, kDescLegacyValue).str(), "old client");
}

TEST(LegacyMessage, MagicOneLz4WithABadHeaderChecksumIsCorrupt) {
  Bytes wire = encode_legacy_message(1, 3, 0, "k", "new client", Codec::Lz4);
  const size_t hc_at = 12 + 4 + 1 + 1 + 8 + 4 + 4 + 6;  // value data, then magic, FLG, BD: HC
  wire[hc_at] ^= 0xff;
  fix_legacy(wire);
  Frame f = decode(wire);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase);
  EXPECT_NE(f.errors[0].reason.find("corrupt lz4 data"), std::string::npos) << f.errors[0].reason;
}

TEST(LegacyMessage, WrappersNestedDeeperThanTheLimitAreReported) {
  Bytes level1 = encode_legacy_message(1, 0, 0, "k", "deep", Codec::Gzip);
  Bytes level2 = encode_legacy_wrapper(1, 0, 0, level1, Codec::Gzip);
  Bytes level3 = encode_legacy_wrapper(1, 0, 0, level2, Codec::Gzip);

  Frame two = decode(level2);  // within the default limit of 2
  EXPECT_TRUE(two.ok()) << errors_of(two);

  Frame three = decode(level3);
  ASSERT_EQ(three.errors.size(), 1u);
  EXPECT_EQ(three.errors[0].offset, kBase);  // the outermost message on the wire
  EXPECT_NE(three.errors[0].reason.find("nested more than 2 deep"), std::string::npos) << three.errors[0].reason;
  EXPECT_NE(three.errors[0].reason.find("decompressed offset"), std::string::npos) << three.errors[0].reason;
}

TEST(LegacyMessage, FetchAfterAFormatUpgradeMixesMessagesAndBatches) {
  Bytes legacy = encode_legacy_message(1, 0, 5, "old", "format");
  Frame f = decode(concat({legacy, encode_record_batch(sample_batch())}));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  EXPECT_EQ(descs(f, 0), (std::vector<uint32_t>{kDescLegacyMessage, kDescRecordBatch}));
}

// ---------------------------------------------------------------------------
// Partial batches (fetch byte limit)

TEST(PartialBatch, BatchCutByTheFetchLimitIsNotAnError) {
  Bytes first = encode_record_batch(sample_batch());
  Bytes second = encode_record_batch(sample_batch(Codec::Lz4));
  for (size_t cut : {size_t{5}, size_t{12}, size_t{40}, second.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    Bytes wire = concat({first, Bytes(second.begin(), second.begin() + static_cast<long>(cut))});
    Frame f = decode(wire);
    ASSERT_TRUE(f.ok()) << errors_of(f);
    std::vector<uint32_t> top = children(f, 0);
    ASSERT_EQ(top.size(), 2u);
    const Node& partial = f.nodes[top[1]];
    EXPECT_EQ(partial.desc, kDescPartialBatch);
    EXPECT_EQ(partial.type, WireType::Bytes);
    EXPECT_EQ(partial.offset, kBase + first.size());
    EXPECT_EQ(partial.length, cut);
    EXPECT_EQ(partial.aux, cut);
    EXPECT_EQ(partial.v.p, wire.data() + first.size());
  }
}

TEST(PartialBatch, LegacyMessageCutShortIsPartialToo) {
  Bytes msg = encode_legacy_message(0, 0, 0, "k", "value");
  Frame f = decode(Bytes(msg.begin(), msg.end() - 2));
  ASSERT_TRUE(f.ok()) << errors_of(f);
  EXPECT_EQ(descs(f, 0), std::vector<uint32_t>{kDescPartialBatch});
}

TEST(PartialBatch, InsideACompressedWrapperATruncatedMessageIsAnError) {
  Bytes msg = encode_legacy_message(1, 0, 0, "k", "value");
  msg.resize(msg.size() - 3);
  Frame f = decode(encode_legacy_wrapper(1, 0, 0, msg, Codec::Gzip));
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  EXPECT_EQ(f.errors[0].offset, kBase);
  EXPECT_NE(f.errors[0].reason.find("too few for the message"), std::string::npos) << f.errors[0].reason;
}

// ---------------------------------------------------------------------------
// Malformed input: reported with the offset, decoding stops, nothing crashes

TEST(MalformedRecords, CrcMismatchIsReportedAndDecodingGoesOn) {
  Bytes first = encode_record_batch(sample_batch());
  Bytes second = encode_record_batch(sample_batch());
  second[second.size() - 3] ^= 0x01;  // a bit flip inside the last record
  Frame f = decode(concat({first, second, first}));
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  const uint32_t at = kBase + static_cast<uint32_t>(first.size());
  EXPECT_EQ(f.errors[0].offset, at);
  char expect[96];
  std::snprintf(expect, sizeof expect, "record batch at offset %u: crc 0x%08x != computed 0x", at, get32(second, 17));
  EXPECT_EQ(f.errors[0].reason.rfind(expect, 0), 0u) << f.errors[0].reason;
  // The damaged batch and the one after it are still decoded.
  std::vector<uint32_t> batches = children(f, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(records_of(f, batches[1]).size(), 3u);
  EXPECT_EQ(records_of(f, batches[2]), expected_records(sample_batch()));
}

TEST(MalformedRecords, LegacyCrcMismatchIsReported) {
  Bytes wire = encode_legacy_message(1, 0, 0, "k", "value");
  wire.back() ^= 0x20;
  Frame f = decode(wire);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase);
  EXPECT_NE(f.errors[0].reason.find("message at offset 100: crc 0x"), std::string::npos) << f.errors[0].reason;
  EXPECT_EQ(child(f, 1, kDescLegacyValue).str(), "valuE");
}

struct CorruptCase {
  const char* name;
  Codec codec;
  bool xerial;
  const char* library;  // as named in the reason
};
class CorruptCompressed : public testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptCompressed, GarbageAndTruncationAreReportedWithTheBatchOffset) {
  const CorruptCase& c = GetParam();
  BatchSpec spec = sample_batch(c.codec);
  spec.snappy_xerial = c.xerial;
  Bytes good = encode_record_batch(spec);
  const uint32_t at = kBase + static_cast<uint32_t>(good.size());  // the broken batch follows a good one

  Bytes garbage = good;
  for (size_t i = 61 + (c.xerial ? 20 : 0); i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 151 + 7);
  fix_batch(garbage);
  Bytes truncated(good.begin(), good.end() - 6);
  fix_batch(truncated);

  for (const Bytes* broken : {&garbage, &truncated}) {
    SCOPED_TRACE(broken == &garbage ? "garbage" : "truncated");
    Frame f = decode(concat({good, *broken, good}));
    ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
    EXPECT_EQ(f.errors[0].offset, at);
    const std::string& why = f.errors[0].reason;
    EXPECT_EQ(why.rfind("record batch at offset " + std::to_string(at) + ": corrupt " + c.library + " data: ", 0), 0u)
        << why;
    // The good batch before it is intact, the broken one has no records, and
    // decoding stopped there.
    std::vector<uint32_t> batches = children(f, 0);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(records_of(f, batches[0]), expected_records(spec));
    EXPECT_TRUE(records_of(f, batches[1]).empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CorruptCompressed,
                         testing::Values(CorruptCase{"Gzip", Codec::Gzip, false, "gzip"},
                                         CorruptCase{"SnappyXerial", Codec::Snappy, true, "snappy"},
                                         CorruptCase{"SnappyRaw", Codec::Snappy, false, "snappy"},
                                         CorruptCase{"Lz4", Codec::Lz4, false, "lz4"},
                                         CorruptCase{"Zstd", Codec::Zstd, false, "zstd"}),
                         [](const testing::TestParamInfo<CorruptCase>& i) { return std::string(i.param.name); });

TEST(MalformedRecords, BadMagicStopsDecoding) {
  Bytes wire = encode_record_batch(sample_batch());
  wire[16] = 3;
  Frame f = decode(wire);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase);
  EXPECT_EQ(f.errors[0].reason, "record batch at offset 100: bad magic 3");
  EXPECT_EQ(f.nodes.size(), 1u);
}

TEST(MalformedRecords, BatchLengthBelowTheHeaderSizeIsAnError) {
  Bytes wire = encode_record_batch(sample_batch());
  set32(wire, 8, 30);
  Frame f = decode(wire);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].reason, "record batch at offset 100: size 30 is below the minimum of 49");
}

// Record bytes written out by hand: length, attributes, timestamp delta,
// offset delta, key, value, header count (varints zig-zag: 2n for n >= 0).
TEST(MalformedRecords, KeyLengthPastTheEndOfTheRecord) {
  Bytes body = {2 * 9, 0, 0, 0, 2 * 50, 'a', 'b', 'c', 'd', 'e'};  // key of 50 bytes in a 9-byte record
  Frame f = decode(batch_with_body(body, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + 61 + 4);  // the key length varint
  EXPECT_EQ(f.errors[0].reason,
            "record batch at offset 100: record 0 at offset 161: key length 50 does not fit the 5 bytes left in the "
            "record");
  // What was read so far stays: the record with its length, attributes and deltas.
  const uint32_t array = child_index(f, 1, kDescRecordsArray);
  std::vector<uint32_t> recs = children(f, array);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(f.nodes[array].aux, 1u);
  EXPECT_EQ(descs(f, recs[0]), (std::vector<uint32_t>{kDescRecordLength, kDescRecordAttributes, kDescTimestampDelta,
                                                      kDescOffsetDelta}));
}

TEST(MalformedRecords, RecordLengthPastTheEndOfTheBatch) {
  Bytes body = {2 * 50, 0, 0, 0, 1, 1, 0};
  Frame f = decode(batch_with_body(body, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + 61);
  EXPECT_NE(f.errors[0].reason.find("record length 50 does not fit the 6 bytes left"), std::string::npos)
      << f.errors[0].reason;
}

TEST(MalformedRecords, RecordLongerThanItsFields) {
  Bytes body = {2 * 8, 0, 0, 0, 1, 1, 0, 0xAA, 0xBB};  // fields take 6 of 8 bytes
  Frame f = decode(batch_with_body(body, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("record length 8 but its fields end after 6 bytes"), std::string::npos)
      << f.errors[0].reason;
}

TEST(MalformedRecords, BytesAfterTheLastRecord) {
  Bytes body = {2 * 6, 0, 0, 0, 1, 1, 0, 0xAA};
  Frame f = decode(batch_with_body(body, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("1 bytes after the last of 1 records"), std::string::npos) << f.errors[0].reason;
}

TEST(MalformedRecords, TruncatedLegacyValue) {
  Bytes wire = encode_legacy_message(0, 0, 0, "k", "value");
  set32(wire, wire.size() - 9, 6);  // value length 6, but 5 bytes follow
  fix_legacy(wire);
  Frame f = decode(wire);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + wire.size() - 9);
  EXPECT_EQ(f.errors[0].reason, "message at offset 100: value length 6 does not fit the 5 bytes left in the message");
}

TEST(MalformedRecords, OverlongVarintIsRejected) {
  // Record length as a 6-byte varint: Kafka reads at most 5.
  Bytes overlong = {0x8c, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 1, 1, 0};
  Frame f = decode(batch_with_body(overlong, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + 61);
  EXPECT_NE(f.errors[0].reason.find("record length: overlong varint (more than 5 bytes)"), std::string::npos)
      << f.errors[0].reason;

  // A timestamp delta of 11 bytes: a varlong has at most 10.
  Bytes long_ts = {2 * 16, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 1, 1, 0};
  f = decode(batch_with_body(long_ts, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("timestamp delta: overlong varint (more than 10 bytes)"), std::string::npos)
      << f.errors[0].reason;

  // Five bytes, not minimal but within the limit, are accepted (as Kafka does).
  Bytes five = {2 * 10, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 1, 0};
  f = decode(batch_with_body(five, 1));
  EXPECT_TRUE(f.ok()) << errors_of(f);
}

TEST(MalformedRecords, HugeRecordCountWithTinyDataFailsWithoutAllocating) {
  Bytes one_record = {2 * 6, 0, 0, 0, 1, 1, 0};
  Frame f = decode(batch_with_body(one_record, INT32_MAX));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("record count 2147483647 but the records end after 1"), std::string::npos)
      << f.errors[0].reason;
  EXPECT_LT(f.nodes.size(), 40u);

  // Compressed: refused before decompressing, as no buffer within the limit
  // could hold that many records.
  Bytes zstd = encode_record_batch(sample_batch(Codec::Zstd));
  set32(zstd, 57, INT32_MAX);
  fix_batch(zstd);
  f = decode(zstd);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("decompressed size exceeds limit"), std::string::npos) << f.errors[0].reason;
}

TEST(MalformedRecords, HugeHeaderCountWithTinyData) {
  Bytes body = {2 * 10, 0, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f};  // header count INT32_MAX
  Frame f = decode(batch_with_body(body, 1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("header count 2147483647 but the record ends after 0"), std::string::npos)
      << f.errors[0].reason;
}

TEST(MalformedRecords, NegativeRecordCount) {
  Frame f = decode(batch_with_body({}, -1));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + 57);
  EXPECT_EQ(f.errors[0].reason, "record batch at offset 100: negative record count -1");
}

TEST(MalformedRecords, ZstdIsNotAllowedInLegacyMessages) {
  Frame f = decode(encode_legacy_message(1, 0, 0, "k", "v", Codec::Zstd));
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].reason.find("codec 4 (zstd) is not allowed before magic 2"), std::string::npos)
      << f.errors[0].reason;
}

// ---------------------------------------------------------------------------
// Decompression limits

TEST(DecompressionLimits, BatchLargerThanTheLimitIsReported) {
  RecordsLimits small;
  small.max_batch_decompressed = 1 << 20;
  for (Codec codec : {Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd}) {
    SCOPED_TRACE(static_cast<int>(codec));
    BatchSpec spec;
    spec.codec = codec;
    spec.records = {{0, std::nullopt, std::string(3 << 20, '\0'), {}}};  // compresses to almost nothing
    Frame f = decode(encode_record_batch(spec), small);
    ASSERT_EQ(f.errors.size(), 1u);
    EXPECT_EQ(f.errors[0].reason.rfind("record batch at offset 100: decompressed size exceeds limit (1048576 bytes)", 0),
              0u)
        << f.errors[0].reason;
  }
}

TEST(DecompressionLimits, SizeDeclaredInTheFrameIsCheckedBeforeDecompressing) {
  RecordsLimits small;
  small.max_batch_decompressed = 1 << 20;
  BatchSpec spec;
  spec.codec = Codec::Zstd;
  spec.frame_content_size = true;
  spec.records = {{0, std::nullopt, std::string(2 << 20, '\0'), {}}};
  Frame f = decode(encode_record_batch(spec), small);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].reason,
            "record batch at offset 100: decompressed size exceeds limit (1048576 bytes): the zstd frame declares "
            "2097165 bytes");  // the value, its 4-byte length, the 4-byte record length and 5 small fields
}

TEST(DecompressionLimits, ExactlyTheLimitIsAllowed) {
  BatchSpec spec;
  spec.codec = Codec::Gzip;
  spec.records = {{0, std::nullopt, std::string(1000, 'z'), {}}};
  RecordsLimits exact;
  Frame probe = decode(encode_record_batch(spec));
  ASSERT_TRUE(probe.ok());
  const Node& rec = probe.nodes[children(probe, child_index(probe, 1, kDescRecordsArray))[0]];
  exact.max_batch_decompressed = rec.length;  // the whole decompressed buffer is this one record
  Frame f = decode(encode_record_batch(spec), exact);
  EXPECT_TRUE(f.ok()) << errors_of(f);
  exact.max_batch_decompressed = rec.length - 1;
  EXPECT_FALSE(decode(encode_record_batch(spec), exact).ok());
}

TEST(DecompressionLimits, TheBudgetCoversAllBatchesOfAField) {
  BatchSpec spec;
  spec.codec = Codec::Lz4;
  spec.records = {{0, std::nullopt, std::string(600 << 10, 'a'), {}}};
  Bytes one = encode_record_batch(spec);
  RecordsLimits limits;
  limits.max_total_decompressed = 1 << 20;  // room for one batch of ~600 KiB, not two
  Frame f = decode(concat({one, one}), limits);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].offset, kBase + one.size());
  EXPECT_NE(f.errors[0].reason.find("decompressed size exceeds limit"), std::string::npos) << f.errors[0].reason;
  EXPECT_EQ(records_of(f, children(f, 0)[0]).size(), 1u);
}

// ---------------------------------------------------------------------------
// Robustness: random damage never crashes and never leaves a broken tape.

TEST(Robustness, DamagedInputNeverCrashes) {
  Bytes clean = concat({encode_record_batch(sample_batch()), encode_record_batch(sample_batch(Codec::Gzip)),
                        encode_record_batch(sample_batch(Codec::Snappy)), encode_record_batch(sample_batch(Codec::Lz4)),
                        encode_record_batch(sample_batch(Codec::Zstd)),
                        encode_legacy_message(0, 0, 0, "k", "v", Codec::Lz4),
                        encode_legacy_message(1, 0, 0, "k", "v", Codec::Snappy)});
  std::mt19937 rng(2024);
  Frame f;
  for (int round = 0; round < 3000; ++round) {
    Bytes data = clean;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) data[rng() % data.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) data.resize(rng() % data.size());
    f.clear();
    uint32_t field = f.open(kDescUnknownTag, WireType::Records, Frame::kRoot, 0);
    decode_records(f, field, data, 0, 0);
    f.close(field, static_cast<uint32_t>(data.size()));
    expect_well_formed(f);
    if (testing::Test::HasFatalFailure()) return;
    // Every byte view points into the input or a buffer the frame owns; read them all.
    size_t sum = 0;
    for (const Node& n : f.nodes)
      if ((n.type == WireType::VarBytes || n.type == WireType::VarString || n.type == WireType::Bytes) &&
          !n.is_null())
        for (uint8_t b : n.bytes()) sum += b;
    (void)sum;
  }
}

// The one-pass record reader and the field-by-field one build the same tape
// and report the same errors, on clean and on damaged input.
void expect_same_tape(const Frame& a, const Frame& b, const std::string& what) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size()) << what;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    // Byte views point into each frame's own decompression buffer: compare what they hold.
    bool view = (x.type == WireType::VarBytes || x.type == WireType::VarString) && !x.is_null();
    bool same_value = view ? x.bytes().size() == y.bytes().size() &&
                                 std::equal(x.bytes().begin(), x.bytes().end(), y.bytes().begin())
                           : x.v.u == y.v.u;
    ASSERT_TRUE(x.desc == y.desc && x.offset == y.offset && x.length == y.length && x.end == y.end &&
                x.parent == y.parent && x.aux == y.aux && same_value && x.flags == y.flags && x.type == y.type &&
                x.tag == y.tag)
        << what << ": node " << i << " differs: desc " << x.desc << "/" << y.desc << " offset " << x.offset << "/"
        << y.offset << " length " << x.length << "/" << y.length << " end " << x.end << "/" << y.end << " parent "
        << x.parent << "/" << y.parent << " aux " << x.aux << "/" << y.aux << " flags " << int(x.flags) << "/"
        << int(y.flags);
  }
  ASSERT_EQ(errors_of(a), errors_of(b)) << what;
}

TEST(Robustness, OnePassAndFieldByFieldRecordsAgree) {
  std::mt19937 rng(1071);
  auto maybe_text = [&](size_t max) -> std::optional<std::string> {
    if (rng() % 8 == 0) return std::nullopt;
    // Lengths across the one-, two- and three-byte varint forms.
    size_t n = rng() % 3 == 0 ? rng() % (max + 1) : rng() % 70;
    std::string s(n, 'a');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  const Codec codecs[] = {Codec::None, Codec::None, Codec::Gzip, Codec::Lz4, Codec::Zstd};
  RecordsLimits field_by_field;
  field_by_field.one_pass_records = false;
  Frame a, b;
  int clean = 0, reported = 0;
  for (int round = 0; round < 400; ++round) {
    BatchSpec spec;
    spec.codec = codecs[rng() % 5];
    size_t records = rng() % 20;
    for (size_t r = 0; r < records; ++r) {
      RecordSpec rec;
      rec.timestamp_delta = static_cast<int64_t>(rng()) * (rng() % 2 ? 1 : -(1ll << 20));
      rec.key = maybe_text(300);
      rec.value = maybe_text(9000);
      for (size_t h = rng() % 4; h > 0; --h) rec.headers.push_back({maybe_text(80).value_or(""), maybe_text(200)});
      spec.records.push_back(std::move(rec));
    }
    Bytes data = encode_record_batch(spec);
    if (round % 2 && data.size() > 61) {  // damage after the batch header, where the records are
      int flips = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < flips; ++i) data[61 + rng() % (data.size() - 61)] ^= static_cast<uint8_t>(1 + rng() % 255);
      if (spec.codec == Codec::None) fix_batch(data);
    }
    std::string what = "round " + std::to_string(round);
    a.clear();
    decode_into(a, data, RecordsLimits{}, 0);
    b.clear();
    decode_into(b, data, field_by_field, 0);
    expect_same_tape(a, b, what);
    if (testing::Test::HasFatalFailure()) return;
    ++(a.ok() ? clean : reported);
  }
  // Both kinds of input were seen: the comparison covered the records the
  // one pass takes and the ones it hands back.
  EXPECT_GT(clean, 200);
  EXPECT_GT(reported, 100);
}

}  // namespace
}  // namespace kwire
