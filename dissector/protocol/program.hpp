// Decode/encode programs: the compiled, per-version form of Kafka's message
// specs. One StructProgram per (struct, version) shape, shared between
// versions whose layout is identical. The decoder, the encoder, the random
// message generator and every output walk these tables; nothing is
// hand-written per API.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kwire {

enum class WireType : uint8_t {
  Int8, Int16, Int32, Int64, Uint16, Uint32, Float64, Bool, Uuid,
  String, Bytes, Records, Struct, Array,
  // Only inside records (never in message specs):
  Varint, Varlong, VarBytes, VarString,
};

std::string_view wire_type_name(WireType t);
bool is_integer(WireType t);

// Bytes on the wire of a fixed-size type; 0 for the variable-size ones.
constexpr uint32_t fixed_size(WireType t) {
  switch (t) {
    case WireType::Int8: case WireType::Bool: return 1;
    case WireType::Int16: case WireType::Uint16: return 2;
    case WireType::Int32: case WireType::Uint32: return 4;
    case WireType::Int64: case WireType::Float64: return 8;
    case WireType::Uuid: return 16;
    default: return 0;
  }
}

// FieldDesc::flags
enum FieldFlag : uint16_t {
  kNullable = 1 << 0,   // may be null in this version
  kCompact = 1 << 1,    // compact (varint) length in this version
  kTagged = 1 << 2,     // a tagged field in this version
  kIgnorable = 1 << 3,
  kSensitive = 1 << 4,  // never printed (SASL tokens, passwords)
  kMapKey = 1 << 5,
  kErrorCode = 1 << 6,  // an int16 error code (ErrorCode, TopLevelErrorCode, ...)
};

// One field of one StructProgram.
struct FieldDesc {
  std::string_view name;        // as in the spec, e.g. "MemberEpoch"
  std::string_view json_name;   // Kafka's JSON converter name, "memberEpoch"
  std::string_view entity;      // entityType ("groupId", "topicName", ...) or empty
  std::string_view default_value;  // the spec's "default", or empty
  std::string_view versions;    // the spec's version range of the field, "0+"
  WireType type = WireType::Int8;
  WireType elem = WireType::Int8;  // element type of an Array
  uint16_t flags = 0;
  int32_t tag = -1;             // tag of a tagged field
  int32_t sub = -1;             // StructProgram of a Struct or Array of structs

  bool nullable() const { return flags & kNullable; }
  bool compact() const { return flags & kCompact; }
  bool tagged() const { return flags & kTagged; }
};

struct StructProgram {
  std::string_view name;        // struct name in the spec ("DescribedGroup")
  uint32_t first_field = 0;     // regular fields, in wire order
  uint32_t field_count = 0;
  uint32_t first_tagged = 0;    // tagged fields, ascending by tag
  uint32_t tagged_count = 0;
  bool flexible = false;        // has a tagged-field section
  uint32_t min_size = 0;        // smallest encoding, bytes
};

enum class Direction : uint8_t { Request, Response };

struct MessageProgram {
  std::string_view api_name;    // "StreamsGroupHeartbeat"
  std::string_view spec_name;   // "StreamsGroupHeartbeatRequest"
  std::string_view origin;      // "kafka 4.4.0", "kafka 3.9.1" (older) or "overlay <dir>"
  int16_t api_key = -1;
  int16_t version = 0;
  Direction direction = Direction::Request;
  bool flexible = false;
  bool unstable = false;        // latestVersionUnstable and this is the newest
  bool overlay = false;
  bool older = false;           // from an older release's specs: a version the pinned release dropped
  uint32_t root = 0;            // FieldDesc of the body (type Struct, sub = its StructProgram)
  // The spec's "listeners" name only the controller: a request brokers send
  // to the KRaft controller (BrokerHeartbeat, Envelope, ...), never a client.
  bool controller_only = false;
};

// A data spec (type "data" in Kafka's spec files: ConsumerProtocolSubscription,
// ConsumerProtocolAssignment, DefaultPrincipalData, ...) at one version.
// These are not messages on the wire of their own; they travel serialized
// inside bytes fields of messages (see nested.hpp).
struct DataProgram {
  std::string_view name;        // "ConsumerProtocolSubscription"
  int16_t version = 0;
  bool flexible = false;
  uint32_t root = 0;            // FieldDesc of the struct (type Struct, sub = its StructProgram)
};

// Flat tables read in place: the code generator's static arrays (see
// codegen/), or a ProgramTables. Indices are relative to the first field and
// struct; ProgramSet::add() rebases them.
struct ProgramTablesView {
  std::span<const FieldDesc> fields;
  std::span<const StructProgram> structs;
  std::span<const MessageProgram> messages;
  std::span<const DataProgram> data;
  std::array<uint32_t, 3> request_header{};   // root FieldDesc per header version
  std::array<uint32_t, 2> response_header{};
  std::string_view origin;
};

// The same tables owned, as the spec compiler builds them at run time from
// overlay specs (and kwire-codegen before it writes them out).
struct ProgramTables {
  std::vector<FieldDesc> fields;
  std::vector<StructProgram> structs;
  std::vector<MessageProgram> messages;
  std::vector<DataProgram> data;
  std::array<uint32_t, 3> request_header{};
  std::array<uint32_t, 2> response_header{};
  std::string_view origin;

  ProgramTablesView view() const {
    return {fields, structs, messages, data, request_header, response_header, origin};
  }
};

// Descriptors the records decoder and the frame builder use; they live at
// fixed indices at the start of every ProgramSet.
enum BuiltinDesc : uint32_t {
  kDescUnknownTag = 0,   // unknown tagged field: aux = tag, value = raw bytes
  kDescRecordBatch,
  kDescBaseOffset, kDescBatchLength, kDescPartitionLeaderEpoch, kDescMagic,
  kDescCrc, kDescAttributes, kDescLastOffsetDelta, kDescBaseTimestamp,
  kDescMaxTimestamp, kDescProducerId, kDescProducerEpoch, kDescBaseSequence,
  kDescRecordCount, kDescRecordsArray,
  kDescRecord, kDescRecordLength, kDescRecordAttributes, kDescTimestampDelta,
  kDescOffsetDelta, kDescKey, kDescValue, kDescHeadersArray,
  kDescHeader, kDescHeaderKey, kDescHeaderValue,
  kDescLegacyMessage, kDescLegacyOffset, kDescLegacySize, kDescLegacyCrc,
  kDescLegacyMagic, kDescLegacyAttributes, kDescLegacyTimestamp,
  kDescLegacyKey, kDescLegacyValue, kDescLegacyInner,
  kDescPartialBatch,     // trailing bytes of a batch cut at a fetch limit
  kDescNestedVersion,    // the int16 version prefix of a data struct inside a bytes field
  kDescNestedTrailing,   // bytes after a nested data struct that its version does not describe
  kBuiltinDescCount,
};

// A bytes field that carries a serialized Kafka structure (decoder.hpp says
// how the decoder reads it).
struct NestedPayload {
  int16_t api_key;
  Direction direction;
  std::string_view field;     // the bytes field's spec name
  std::string_view path;      // where it is in the message, for people
  std::string_view payload;   // a data spec, or "request" / "response": a whole message
  bool consumer_protocol;     // only in groups of protocol type "consumer"; newer versions read as the newest known
  // An empty value carries no payload: the group coordinator answers a
  // failed SyncGroup with an empty assignment, which clients never read,
  // and describes the members of a group that is not Stable with empty
  // metadata and assignments.
  bool empty_is_none = false;
};
// Every such field.
std::span<const NestedPayload> nested_payloads();

// What the decoder and the JSON writer read of a FieldDesc on every node,
// packed (a FieldDesc is mostly names, six cache lines for every ten fields).
struct FieldOp {
  WireType type = WireType::Int8;
  WireType elem = WireType::Int8;
  uint16_t flags = 0;
  int32_t sub = -1;
  uint8_t marks = 0;   // FieldMark
};
enum FieldMark : uint8_t {
  kMarkGroupId = 1 << 0,    // entityType groupId
  kMarkCodeNames = 1 << 1,  // its values may have names (codes.hpp: code_name)
};

namespace detail { class Run; }
// A struct decoder kwire-codegen generated for one StructProgram of the
// release (decoder_run.hpp).
using CompiledStruct = bool (*)(detail::Run&, uint32_t node);

class ProgramSet {
 public:
  ProgramSet();  // builtin descriptors only
  // The specs compiled into this binary (Kafka release + nothing else).
  static const ProgramSet& release();
  // A new set of the same specs, for a command to add overlays to (cheaper
  // than building release() and copying it).
  static ProgramSet build_release();

  // Appends tables (their indices are relative) and indexes their messages.
  // A message replaces any earlier one with the same (api key, version,
  // direction).
  // `owner` keeps the strings of run-time compiled tables alive.
  void add(const ProgramTablesView& t, std::shared_ptr<const void> owner = nullptr);
  void add(const ProgramTables& t, std::shared_ptr<const void> owner = nullptr) { add(t.view(), std::move(owner)); }

  const MessageProgram* find(int16_t api_key, int16_t version, Direction d) const;
  const MessageProgram* find_api(std::string_view name_or_key) const;  // any version
  // A data spec at one version (see DataProgram); null if unknown.
  const DataProgram* find_data(std::string_view name, int version) const;
  const std::vector<DataProgram>& data() const { return data_; }
  std::vector<const MessageProgram*> versions(int16_t api_key, Direction d) const;

  const FieldDesc& field(uint32_t i) const { return fields_[i]; }
  const FieldOp& op(uint32_t i) const { return ops_[i]; }
  // What a bytes field of a message carries (nested_payloads()), or null.
  // From the field's place in the specs; whether a payload is decoded also
  // depends on the message (decoder.hpp).
  const NestedPayload* nested_payload(uint32_t i) const {
    auto it = nested_.find(i);
    return it == nested_.end() ? nullptr : it->second;
  }
  // `"jsonName":`, as the JSON views write a field's key. The 32 bytes from
  // its start are readable whatever its length (TextBuffer::append_padded).
  std::string_view json_key(uint32_t i) const {
    const FieldText& k = text_[i];
    return {key_text_.data() + k.offset, k.json_length};
  }
  // The spec name, with the same 32 readable bytes.
  std::string_view padded_name(uint32_t i) const {
    const FieldText& k = text_[i];
    return {key_text_.data() + k.offset + k.json_length, k.name_length};
  }
  const StructProgram& structure(uint32_t i) const { return structs_[i]; }
  const std::vector<MessageProgram>& messages() const { return messages_; }
  uint32_t request_header(int v) const { return request_header_[v]; }
  uint32_t response_header(int v) const { return response_header_[v]; }
  size_t field_count() const { return fields_.size(); }
  // The generated decoders of the release's structs, by StructProgram index
  // (empty unless the set was built from the release).
  std::span<const CompiledStruct> compiled() const { return compiled_; }

 private:
  void add_field(const FieldDesc& d);
  void index_nested(const MessageProgram& m);

  struct FieldText {
    uint32_t offset;        // json key, then the name
    uint16_t json_length;
    uint16_t name_length;
  };
  std::vector<FieldDesc> fields_;
  std::vector<FieldOp> ops_;         // parallel to fields_
  std::vector<FieldText> text_;      // parallel to fields_, into key_text_
  std::string key_text_;
  std::vector<StructProgram> structs_;
  std::vector<MessageProgram> messages_;
  std::vector<DataProgram> data_;
  std::unordered_map<uint32_t, uint32_t> index_;  // key(api, version, dir) -> message
  // index_ for small api keys and versions, as find() asks once per message:
  // [direction][api key][version] -> message + 1, 0 for none.
  std::vector<std::vector<uint32_t>> dense_[2];
  void rebuild_dense();
  std::unordered_map<uint32_t, const NestedPayload*> nested_;  // bytes field -> what it carries
  uint32_t request_header_[3] = {0, 0, 0};
  uint32_t response_header_[2] = {0, 0};
  std::vector<std::shared_ptr<const void>> owners_;
  std::span<const CompiledStruct> compiled_;
};

// Header versions per Kafka's rules.
int request_header_version(int16_t api_key, int16_t version, bool flexible);
int response_header_version(int16_t api_key, bool flexible);

}  // namespace kwire
