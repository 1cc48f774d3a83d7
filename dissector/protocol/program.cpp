#include "dissector/protocol/program.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <string>

#include "dissector/protocol/codes.hpp"
#include "dissector/protocol/generated.hpp"

namespace kwire {

std::string_view wire_type_name(WireType t) {
  switch (t) {
    case WireType::Int8: return "int8";
    case WireType::Int16: return "int16";
    case WireType::Int32: return "int32";
    case WireType::Int64: return "int64";
    case WireType::Uint16: return "uint16";
    case WireType::Uint32: return "uint32";
    case WireType::Float64: return "float64";
    case WireType::Bool: return "bool";
    case WireType::Uuid: return "uuid";
    case WireType::String: return "string";
    case WireType::Bytes: return "bytes";
    case WireType::Records: return "records";
    case WireType::Struct: return "struct";
    case WireType::Array: return "array";
    case WireType::Varint: return "varint";
    case WireType::Varlong: return "varlong";
    case WireType::VarBytes: return "varbytes";
    case WireType::VarString: return "varstring";
  }
  return "?";
}

bool is_integer(WireType t) {
  switch (t) {
    case WireType::Int8: case WireType::Int16: case WireType::Int32: case WireType::Int64:
    case WireType::Uint16: case WireType::Uint32: case WireType::Varint: case WireType::Varlong:
      return true;
    default:
      return false;
  }
}

namespace {

struct Builtin { BuiltinDesc id; std::string_view name; std::string_view json; WireType type; };

// Record batches and legacy messages are not described by message specs;
// their fields are fixed by the log format.
constexpr Builtin kBuiltins[] = {
  {kDescUnknownTag, "UnknownTaggedField", "unknownTaggedField", WireType::Bytes},
  {kDescRecordBatch, "RecordBatch", "recordBatch", WireType::Struct},
  {kDescBaseOffset, "BaseOffset", "baseOffset", WireType::Int64},
  {kDescBatchLength, "BatchLength", "batchLength", WireType::Int32},
  {kDescPartitionLeaderEpoch, "PartitionLeaderEpoch", "partitionLeaderEpoch", WireType::Int32},
  {kDescMagic, "Magic", "magic", WireType::Int8},
  {kDescCrc, "Crc", "crc", WireType::Uint32},
  {kDescAttributes, "Attributes", "attributes", WireType::Int16},
  {kDescLastOffsetDelta, "LastOffsetDelta", "lastOffsetDelta", WireType::Int32},
  {kDescBaseTimestamp, "BaseTimestamp", "baseTimestamp", WireType::Int64},
  {kDescMaxTimestamp, "MaxTimestamp", "maxTimestamp", WireType::Int64},
  {kDescProducerId, "ProducerId", "producerId", WireType::Int64},
  {kDescProducerEpoch, "ProducerEpoch", "producerEpoch", WireType::Int16},
  {kDescBaseSequence, "BaseSequence", "baseSequence", WireType::Int32},
  {kDescRecordCount, "RecordCount", "recordCount", WireType::Int32},
  {kDescRecordsArray, "Records", "records", WireType::Array},
  {kDescRecord, "Record", "record", WireType::Struct},
  {kDescRecordLength, "Length", "length", WireType::Varint},
  {kDescRecordAttributes, "Attributes", "attributes", WireType::Int8},
  {kDescTimestampDelta, "TimestampDelta", "timestampDelta", WireType::Varlong},
  {kDescOffsetDelta, "OffsetDelta", "offsetDelta", WireType::Varint},
  {kDescKey, "Key", "key", WireType::VarBytes},
  {kDescValue, "Value", "value", WireType::VarBytes},
  {kDescHeadersArray, "Headers", "headers", WireType::Array},
  {kDescHeader, "Header", "header", WireType::Struct},
  {kDescHeaderKey, "Key", "key", WireType::VarString},
  {kDescHeaderValue, "Value", "value", WireType::VarBytes},
  {kDescLegacyMessage, "Message", "message", WireType::Struct},
  {kDescLegacyOffset, "Offset", "offset", WireType::Int64},
  {kDescLegacySize, "MessageSize", "messageSize", WireType::Int32},
  {kDescLegacyCrc, "Crc", "crc", WireType::Uint32},
  {kDescLegacyMagic, "Magic", "magic", WireType::Int8},
  {kDescLegacyAttributes, "Attributes", "attributes", WireType::Int8},
  {kDescLegacyTimestamp, "Timestamp", "timestamp", WireType::Int64},
  {kDescLegacyKey, "Key", "key", WireType::Bytes},
  {kDescLegacyValue, "Value", "value", WireType::Bytes},
  {kDescLegacyInner, "InnerMessages", "innerMessages", WireType::Array},
  {kDescPartialBatch, "PartialBatch", "partialBatch", WireType::Bytes},
  {kDescNestedVersion, "Version", "version", WireType::Int16},
  {kDescNestedTrailing, "TrailingBytes", "_trailingBytes", WireType::Bytes},
};
static_assert(std::size(kBuiltins) == kBuiltinDescCount);

uint32_t index_key(int16_t api, int16_t version, Direction d) {
  return (static_cast<uint32_t>(static_cast<uint16_t>(api)) << 17) |
         (static_cast<uint32_t>(static_cast<uint16_t>(version)) << 1) | (d == Direction::Response ? 1u : 0u);
}

}  // namespace

ProgramSet::ProgramSet() {
  for (const auto& b : kBuiltins) {
    FieldDesc d;
    d.name = b.name;
    d.json_name = b.json;
    d.type = b.type;
    d.elem = b.type == WireType::Array ? WireType::Struct : b.type;
    add_field(d);
  }
}

void ProgramSet::add_field(const FieldDesc& d) {
  fields_.push_back(d);
  uint8_t marks = 0;
  if (d.entity == "groupId") marks |= kMarkGroupId;
  if (has_code_names(d)) marks |= kMarkCodeNames;
  ops_.push_back({d.type, d.elem, d.flags, d.sub, marks});
  // Spec names are plain ASCII: no escaping. 32 NULs follow the last name,
  // so every key and name has 32 readable bytes.
  constexpr size_t kPad = 32;
  if (key_text_.size() >= kPad) key_text_.resize(key_text_.size() - kPad);
  text_.push_back({static_cast<uint32_t>(key_text_.size()), static_cast<uint16_t>(d.json_name.size() + 3),
                   static_cast<uint16_t>(d.name.size())});
  key_text_ += '"';
  key_text_ += d.json_name;
  key_text_ += "\":";
  key_text_ += d.name;
  key_text_.append(kPad, '\0');
}

ProgramSet ProgramSet::build_release() {
  ProgramSet ps;
  // The generated decoders name fields and structs by their index here:
  // the builtins, then the release's tables.
  ps.add(generated::release_tables());
  const auto compiled = generated::compiled_structs();
  if (compiled.size() == ps.structs_.size()) ps.compiled_ = compiled;
  return ps;
}

const ProgramSet& ProgramSet::release() {
  static const ProgramSet set = build_release();
  return set;
}


void ProgramSet::add(const ProgramTablesView& t, std::shared_ptr<const void> owner) {
  if (owner) owners_.push_back(std::move(owner));
  const uint32_t fbase = static_cast<uint32_t>(fields_.size());
  const uint32_t sbase = static_cast<uint32_t>(structs_.size());
  // Grown once: the release's tables are tens of thousands of fields.
  fields_.reserve(fields_.size() + t.fields.size());
  ops_.reserve(ops_.size() + t.fields.size());
  text_.reserve(text_.size() + t.fields.size());
  size_t text = key_text_.size();
  for (const FieldDesc& f : t.fields) text += f.json_name.size() + f.name.size() + 3;
  key_text_.reserve(text + 32);
  structs_.reserve(structs_.size() + t.structs.size());
  messages_.reserve(messages_.size() + t.messages.size());
  for (FieldDesc f : t.fields) {
    if (f.sub >= 0) f.sub += static_cast<int32_t>(sbase);
    add_field(f);
  }
  for (StructProgram s : t.structs) {
    s.first_field += fbase;
    s.first_tagged += fbase;
    structs_.push_back(s);
  }
  if (t.request_header[2] || t.request_header[1]) {
    for (int v = 0; v < 3; ++v) request_header_[v] = t.request_header[v] + fbase;
  }
  if (t.response_header[0] || t.response_header[1]) {
    for (int v = 0; v < 2; ++v) response_header_[v] = t.response_header[v] + fbase;
  }
  // An added spec replaces every version of the same (api, direction) and
  // every message of the same name.
  if (!index_.empty()) {
    std::set<std::pair<int16_t, Direction>> replaced;
    std::set<std::string_view> names;
    for (const auto& m : t.messages) {
      replaced.insert({m.api_key, m.direction});
      names.insert(m.spec_name);
    }
    for (auto it = index_.begin(); it != index_.end();) {
      const auto& old = messages_[it->second];
      if (replaced.count({old.api_key, old.direction}) || names.count(old.spec_name)) it = index_.erase(it);
      else ++it;
    }
  }
  index_.reserve(index_.size() + t.messages.size());
  for (DataProgram d : t.data) {
    d.root += fbase;
    // A data spec of the same name and version replaces the earlier one.
    auto same = std::find_if(data_.begin(), data_.end(),
                             [&](const DataProgram& o) { return o.name == d.name && o.version == d.version; });
    if (same != data_.end()) *same = d;
    else data_.push_back(d);
  }
  for (MessageProgram m : t.messages) {
    m.root += fbase;
    index_[index_key(m.api_key, m.version, m.direction)] = static_cast<uint32_t>(messages_.size());
    messages_.push_back(m);
    index_nested(m);
  }
  rebuild_dense();
}

void ProgramSet::rebuild_dense() {
  constexpr int kMaxDense = 4096;
  for (auto& d : dense_) d.clear();
  for (const auto& [k, idx] : index_) {
    const MessageProgram& m = messages_[idx];
    if (m.api_key < 0 || m.api_key >= kMaxDense || m.version < 0 || m.version >= kMaxDense) continue;
    auto& by_api = dense_[m.direction == Direction::Response ? 1 : 0];
    if (by_api.size() <= static_cast<size_t>(m.api_key)) by_api.resize(static_cast<size_t>(m.api_key) + 1);
    auto& by_version = by_api[static_cast<size_t>(m.api_key)];
    if (by_version.size() <= static_cast<size_t>(m.version)) by_version.resize(static_cast<size_t>(m.version) + 1);
    by_version[static_cast<size_t>(m.version)] = idx + 1;
  }
}

// Marks the bytes fields of `m` that carry payloads (nested_payloads()).
void ProgramSet::index_nested(const MessageProgram& m) {
  std::vector<const NestedPayload*> carried;
  for (const NestedPayload& p : nested_payloads())
    if (p.api_key == m.api_key && p.direction == m.direction) carried.push_back(&p);
  if (carried.empty()) return;
  auto walk = [&](auto& self, int32_t sub, int depth) -> void {
    if (sub < 0 || depth > 16) return;
    const StructProgram& sp = structs_[static_cast<uint32_t>(sub)];
    auto each = [&](uint32_t d) {
      const FieldDesc& f = fields_[d];
      if (f.type == WireType::Bytes)
        for (const NestedPayload* p : carried)
          if (p->field == f.name) nested_[d] = p;
      if (f.type == WireType::Struct || (f.type == WireType::Array && f.elem == WireType::Struct)) self(self, f.sub, depth + 1);
    };
    for (uint32_t i = 0; i < sp.field_count; ++i) each(sp.first_field + i);
    for (uint32_t i = 0; i < sp.tagged_count; ++i) each(sp.first_tagged + i);
  };
  walk(walk, fields_[m.root].sub, 0);
}

std::span<const NestedPayload> nested_payloads() {
  static constexpr NestedPayload kPayloads[] = {
    {11, Direction::Request, "Metadata", "Protocols[].Metadata", "ConsumerProtocolSubscription", true},
    {11, Direction::Response, "Metadata", "Members[].Metadata", "ConsumerProtocolSubscription", true},
    {14, Direction::Request, "Assignment", "Assignments[].Assignment", "ConsumerProtocolAssignment", true},
    {14, Direction::Response, "Assignment", "Assignment", "ConsumerProtocolAssignment", true, true},
    // A group that is not Stable is described with empty metadata and assignments.
    {15, Direction::Response, "MemberMetadata", "Groups[].Members[].MemberMetadata", "ConsumerProtocolSubscription", true,
     true},
    {15, Direction::Response, "MemberAssignment", "Groups[].Members[].MemberAssignment", "ConsumerProtocolAssignment",
     true, true},
    {58, Direction::Request, "RequestData", "RequestData", "request", false},
    {58, Direction::Request, "RequestPrincipal", "RequestPrincipal", "DefaultPrincipalData", false},
    {58, Direction::Response, "ResponseData", "ResponseData", "response", false},
  };
  return kPayloads;
}

const MessageProgram* ProgramSet::find(int16_t api, int16_t version, Direction d) const {
  const auto& by_api = dense_[d == Direction::Response ? 1 : 0];
  if (api >= 0 && version >= 0 && static_cast<size_t>(api) < by_api.size()) {
    const auto& by_version = by_api[static_cast<size_t>(api)];
    if (static_cast<size_t>(version) >= by_version.size() || !by_version[static_cast<size_t>(version)]) return nullptr;
    return &messages_[by_version[static_cast<size_t>(version)] - 1];
  }
  auto it = index_.find(index_key(api, version, d));
  return it == index_.end() ? nullptr : &messages_[it->second];
}

const DataProgram* ProgramSet::find_data(std::string_view name, int version) const {
  for (const auto& d : data_)
    if (d.version == version && d.name == name) return &d;
  return nullptr;
}

std::vector<const MessageProgram*> ProgramSet::versions(int16_t api, Direction d) const {
  std::vector<const MessageProgram*> out;
  for (int v = 0; v < 128; ++v)
    if (const auto* m = find(api, static_cast<int16_t>(v), d)) out.push_back(m);
  return out;
}

const MessageProgram* ProgramSet::find_api(std::string_view name_or_key) const {
  int key = -1;
  auto [p, ec] = std::from_chars(name_or_key.data(), name_or_key.data() + name_or_key.size(), key);
  bool numeric = ec == std::errc() && p == name_or_key.data() + name_or_key.size();
  for (const auto& [k, idx] : index_) {
    const auto& m = messages_[idx];
    if (numeric ? m.api_key == key : (m.api_name == name_or_key || m.spec_name == name_or_key)) return &m;
  }
  if (numeric) return nullptr;
  // Names in any case: "fetch", "streamsgroupheartbeat".
  auto same = [&](std::string_view a) {
    return a.size() == name_or_key.size() &&
           std::equal(a.begin(), a.end(), name_or_key.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const auto& [k, idx] : index_)
    if (same(messages_[idx].api_name) || same(messages_[idx].spec_name)) return &messages_[idx];
  return nullptr;
}

int request_header_version(int16_t api_key, int16_t version, bool flexible) {
  if (api_key == 7 && version == 0) return 0;  // ControlledShutdown v0
  return flexible ? 2 : 1;
}

int response_header_version(int16_t api_key, bool flexible) {
  if (api_key == 18) return 0;  // ApiVersions: always v0 so any client can read it
  return flexible ? 1 : 0;
}

}  // namespace kwire
