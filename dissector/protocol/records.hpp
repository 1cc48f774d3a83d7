// The `records` field: Kafka's record batches (magic 2) and legacy message
// sets (magic 0 and 1), decoded into Frame nodes, and an encoder that builds
// them for tests and generators.
//
// Wire layout, RecordBatch v2 (all integers big-endian):
//   baseOffset int64, batchLength int32 (bytes after this field),
//   partitionLeaderEpoch int32, magic int8 (= 2), crc uint32 (CRC-32C of
//   everything from attributes to the end of the batch), attributes int16
//   (bits 0-2 codec, bit 3 timestamp type, bit 4 transactional, bit 5
//   control), lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
//   producerId int64, producerEpoch int16, baseSequence int32, recordCount
//   int32, then the records (compressed as one blob when a codec is set).
//   Record: length varint, attributes int8, timestampDelta varlong,
//   offsetDelta varint, key (varint length, -1 null), value (same), header
//   count varint, headers (key: varint length + utf-8, value: like the value).
//   Varints are zig-zag; at most 5 bytes (varint) or 10 bytes (varlong).
//
// Legacy message set entry: offset int64, messageSize int32, crc uint32
//   (CRC-32 of magic..end), magic int8, attributes int8 (bits 0-2 codec),
//   timestamp int64 (magic 1 only), key bytes (int32 length, -1 null), value
//   bytes. A compressed "wrapper" message carries a whole compressed message
//   set in its value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"

namespace kwire {

// Bounds on what one `records` field may make the decoder allocate. Kafka's
// own limits (max.message.bytes, default 1 MiB per batch) are far below these.
struct RecordsLimits {
  size_t max_batch_decompressed = size_t{64} << 20;   // per batch / wrapper message
  size_t max_total_decompressed = size_t{256} << 20;  // per decode_records call
  int max_legacy_nesting = 2;  // compressed wrappers inside wrappers (Kafka writes 1)
  // Well-formed records are read in one pass and their nodes written as a
  // block; false sends every record through the field-by-field decoder
  // (which reports what is wrong when the one pass gives up). Both build the
  // same tape: tests decode with each and compare.
  bool one_pass_records = true;
};

// Decodes the bytes of a `records` field (one or more RecordBatch v2 or legacy
// message sets v0/v1, possibly ending with a partial batch cut at a fetch byte
// limit) into child nodes of `parent` (already opened by the caller; not
// closed here). `data` are the field's bytes; `base` is the wire offset of
// data[0] from the start of the message; `inner` is 0 or kInner (data lives in
// a decompressed buffer).
//
// Node layout:
//   RecordBatch (Struct): BaseOffset .. RecordCount, then RecordsArray (Array)
//     of Record (Struct, kElement): RecordLength, RecordAttributes,
//     TimestampDelta, OffsetDelta, Key, Value, HeadersArray (Array) of Header
//     (Struct, kElement): HeaderKey, HeaderValue.
//     In a compressed batch the RecordsArray spans the compressed bytes on the
//     wire and its records carry kInner, with offsets into the decompressed
//     buffer (owned by the Frame).
//   LegacyMessage (Struct): LegacyOffset, LegacySize, LegacyCrc, LegacyMagic,
//     LegacyAttributes, [LegacyTimestamp], LegacyKey, LegacyValue, and for a
//     compressed wrapper LegacyInner (Array, spans the compressed value) of
//     LegacyMessage (kElement | kInner).
//   PartialBatch (Bytes): the rest of the field when it ends with a batch or
//     message cut short (Fetch responses do this); not an error.
// An array's aux is the number of its element nodes: the declared count, or
// fewer when decoding failed inside it. Integers are in Node::v.i (Uint32 CRCs in v.u); bytes and strings are views
// (v.p, aux = length) with kNull for null. Node::length includes length
// prefixes.
//
// Problems are reported with f.fail(wire offset, reason) and end decoding of
// this field; nodes already made stay (every container is closed). A CRC
// mismatch is reported but the batch and the ones after it are still decoded.
// Inside decompressed data the reported offset is that of the enclosing batch
// or outermost wrapper message on the wire; the reason gives the position in
// the decompressed data.
void decode_records(Frame& f, uint32_t parent, std::span<const uint8_t> data, uint32_t base, uint8_t inner);
void decode_records(Frame& f, uint32_t parent, std::span<const uint8_t> data, uint32_t base, uint8_t inner,
                    const RecordsLimits& limits);

enum class Codec : uint8_t { None = 0, Gzip = 1, Snappy = 2, Lz4 = 3, Zstd = 4 };

struct RecordHeaderSpec {
  std::string key;
  std::optional<std::string> value;
};

struct RecordSpec {
  int64_t timestamp_delta = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeaderSpec> headers;
};

struct BatchSpec {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = 0;
  int64_t base_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  bool transactional = false;
  bool control = false;
  Codec codec = Codec::None;
  bool snappy_xerial = true;          // Snappy: xerial framing (Java clients) or raw
  bool frame_content_size = false;    // Lz4/Zstd: write the content size in the frame header
  std::vector<RecordSpec> records;    // record i gets offsetDelta i
};

// Encodes a RecordBatch v2 (correct CRC-32C, compression as requested).
// Throws std::runtime_error if a compression library fails.
std::vector<uint8_t> encode_record_batch(const BatchSpec& b);

// Encodes a legacy message set entry (magic 0 or 1) for tests. With a codec,
// a wrapper message (null key) whose value is the compressed one-message set
// {key, value}; the inner offset is 0 for magic 1 (relative) and `offset` for
// magic 0. Magic 0 LZ4 gets the wrong frame header checksum Kafka 0.8/0.9
// wrote (KAFKA-3160). Codec::Zstd makes a message Kafka would reject.
std::vector<uint8_t> encode_legacy_message(int magic, int64_t offset, int64_t timestamp,
                                           const std::optional<std::string>& key,
                                           const std::optional<std::string>& value, Codec codec = Codec::None);

// A wrapper message (null key) whose value is `message_set` compressed with
// `codec`; for tests of multi-message and nested wrappers.
std::vector<uint8_t> encode_legacy_wrapper(int magic, int64_t offset, int64_t timestamp,
                                           std::span<const uint8_t> message_set, Codec codec);

// CRC-32C (Castagnoli), as in RecordBatch v2. Chains:
// crc32c(b, crc32c(a)) == crc32c(a + b). Uses SSE4.2 when the CPU has it.
uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc = 0);

namespace detail {
// The table-driven (slice-by-8) CRC-32C, whatever the CPU.
uint32_t crc32c_portable(std::span<const uint8_t> data, uint32_t crc = 0);
// xxHash32, the hash in LZ4 frame headers and content checksums.
uint32_t xxh32(std::span<const uint8_t> data, uint32_t seed = 0);
}  // namespace detail

}  // namespace kwire
