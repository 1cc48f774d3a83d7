#include "dissector/codegen/compiler.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace kwire {

std::string json_field_name(std::string_view n) {
  std::string s(n);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

std::string api_name_of(std::string_view n) {
  for (std::string_view suffix : {"Request", "Response"}) {
    if (n.size() > suffix.size() && n.substr(n.size() - suffix.size()) == suffix)
      return std::string(n.substr(0, n.size() - suffix.size()));
  }
  return std::string(n);
}

bool is_sensitive_field(std::string_view message, std::string_view field) {
  // SASL tokens, delegation token HMACs and SCRAM credentials.
  if (field == "AuthBytes") return message.rfind("SaslAuthenticate", 0) == 0;
  if (field == "Hmac") return message.find("DelegationToken") != std::string_view::npos;
  if (field == "SaltedPassword" || field == "Salt") return message.rfind("AlterUserScramCredentials", 0) == 0;
  return false;
}

static WireType primitive_type(std::string_view t) {
  if (t == "int8") return WireType::Int8;
  if (t == "int16") return WireType::Int16;
  if (t == "int32") return WireType::Int32;
  if (t == "int64") return WireType::Int64;
  if (t == "uint16") return WireType::Uint16;
  if (t == "uint32") return WireType::Uint32;
  if (t == "float64") return WireType::Float64;
  if (t == "bool") return WireType::Bool;
  if (t == "uuid") return WireType::Uuid;
  if (t == "string") return WireType::String;
  if (t == "bytes") return WireType::Bytes;
  if (t == "records") return WireType::Records;
  return WireType::Struct;
}

SpecCompiler::SpecCompiler(std::string origin, bool overlay) : origin_(std::move(origin)), overlay_(overlay) {
  t_.origin = s(origin_);
}

std::string_view SpecCompiler::s(std::string v) {
  auto it = interned_.find(v);
  if (it != interned_.end()) return it->second;
  strings_.push_back(v);
  std::string_view view = strings_.back();
  interned_.emplace(std::move(v), view);
  return view;
}

FieldDesc SpecCompiler::compile_field(const spec::MessageSpec& m, const spec::FieldSpec& f, int v) {
  FieldDesc d;
  d.name = s(f.name);
  d.json_name = s(json_field_name(f.name));
  d.entity = s(f.entity);
  d.default_value = s(f.default_value);
  d.versions = s(f.versions.str());
  bool flexible = f.flexible ? f.flexible->contains(v) : m.flexible.contains(v);
  if (f.nullable.contains(v)) d.flags |= kNullable;
  if (flexible) d.flags |= kCompact;
  if (f.tagged.contains(v)) { d.flags |= kTagged; d.tag = f.tag; }
  if (f.ignorable) d.flags |= kIgnorable;
  if (f.map_key) d.flags |= kMapKey;
  if (is_sensitive_field(m.name, f.name)) d.flags |= kSensitive;
  std::string_view n = f.name;
  if (f.type == "int16" && n.size() >= 9 && n.substr(n.size() - 9) == "ErrorCode") d.flags |= kErrorCode;
  auto et = f.element_type();
  WireType base = primitive_type(et);
  if (base == WireType::Struct) {
    const auto* fields = f.fields.empty() ? m.struct_fields(et) : &f.fields;
    d.sub = static_cast<int32_t>(compile_struct(m, et, *fields, v));
  }
  if (f.is_array()) {
    d.type = WireType::Array;
    d.elem = base;
  } else {
    d.type = base;
    d.elem = base;
  }
  return d;
}

uint32_t SpecCompiler::compile_struct(const spec::MessageSpec& m, std::string_view name,
                                      const std::vector<spec::FieldSpec>& fields, int v) {
  std::vector<FieldDesc> regular, tagged;
  for (const auto& f : fields) {
    if (!f.versions.contains(v)) continue;
    FieldDesc d = compile_field(m, f, v);
    (d.tagged() ? tagged : regular).push_back(d);
  }
  std::sort(tagged.begin(), tagged.end(), [](const FieldDesc& a, const FieldDesc& b) { return a.tag < b.tag; });
  bool flexible = m.flexible.contains(v);

  // Identical layouts across versions share one program.
  std::string key(name);
  key += flexible ? "|F" : "|C";
  uint32_t min_size = flexible ? 1 : 0;
  for (const auto* list : {&regular, &tagged}) {
    for (const auto& d : *list) {
      key += '|';
      key += d.name; key += ':'; key += std::to_string(int(d.type)); key += ':';
      key += std::to_string(int(d.elem)); key += ':'; key += std::to_string(d.flags); key += ':';
      key += std::to_string(d.tag); key += ':'; key += std::to_string(d.sub); key += ':';
      key += d.entity; key += ':'; key += d.default_value;
      if (d.tagged()) continue;
      if (d.type == WireType::Array || d.type == WireType::Bytes || d.type == WireType::Records)
        min_size += d.compact() ? 1 : 4;  // length prefix
      else if (d.type == WireType::String) min_size += d.compact() ? 1 : 2;
      else if (d.type == WireType::Struct) min_size += d.nullable() ? 1 : t_.structs[d.sub].min_size;
      else min_size += fixed_size(d.type);
    }
  }
  if (auto it = dedup_.find(key); it != dedup_.end()) return it->second;

  StructProgram sp;
  sp.name = s(std::string(name));
  sp.flexible = flexible;
  sp.min_size = min_size;
  sp.first_field = static_cast<uint32_t>(t_.fields.size());
  sp.field_count = static_cast<uint32_t>(regular.size());
  t_.fields.insert(t_.fields.end(), regular.begin(), regular.end());
  sp.first_tagged = static_cast<uint32_t>(t_.fields.size());
  sp.tagged_count = static_cast<uint32_t>(tagged.size());
  t_.fields.insert(t_.fields.end(), tagged.begin(), tagged.end());
  uint32_t idx = static_cast<uint32_t>(t_.structs.size());
  t_.structs.push_back(sp);
  dedup_.emplace(std::move(key), idx);
  return idx;
}

uint32_t SpecCompiler::root(const spec::MessageSpec& m, int v) {
  FieldDesc d;
  d.name = s(m.name);
  d.json_name = s(json_field_name(m.name));
  d.type = WireType::Struct;
  d.elem = WireType::Struct;
  d.sub = static_cast<int32_t>(compile_struct(m, m.name, m.fields, v));
  t_.fields.push_back(d);
  return static_cast<uint32_t>(t_.fields.size() - 1);
}

void SpecCompiler::add(const spec::MessageSpec& m) {
  if (m.type == "header") {
    if (m.name == "RequestHeader") {
      for (int v = 0; v <= 2; ++v) t_.request_header[v] = root(m, v);
      has_req_header_ = true;
    } else if (m.name == "ResponseHeader") {
      for (int v = 0; v <= 1; ++v) t_.response_header[v] = root(m, v);
      has_resp_header_ = true;
    }
    return;
  }
  if (m.type == "data") {
    for (int v = m.valid.lo; v <= m.valid.hi; ++v) {
      DataProgram d;
      d.name = s(m.name);
      d.version = static_cast<int16_t>(v);
      d.flexible = m.flexible.contains(v);
      d.root = root(m, v);
      t_.data.push_back(d);
    }
    return;
  }
  if (!m.is_api()) return;
  for (int v = m.valid.lo; v <= m.valid.hi; ++v) add_version(m, v, t_.origin, false);  // removed APIs have "none"
}

void SpecCompiler::add_version(const spec::MessageSpec& m, int v, std::string_view origin, bool older) {
  MessageProgram p;
  p.api_name = s(api_name_of(m.name));
  p.spec_name = s(m.name);
  p.origin = origin;
  p.api_key = static_cast<int16_t>(m.api_key);
  p.version = static_cast<int16_t>(v);
  p.direction = m.type == "request" ? Direction::Request : Direction::Response;
  p.flexible = m.flexible.contains(v);
  p.unstable = m.latest_unstable && v == m.valid.hi;
  p.overlay = overlay_;
  p.older = older;
  p.root = root(m, v);
  p.controller_only = !m.listeners.empty() &&
                      std::find(m.listeners.begin(), m.listeners.end(), "broker") == m.listeners.end();
  t_.messages.push_back(p);
}

void SpecCompiler::add_older(const std::vector<spec::MessageSpec>& messages, const std::string& origin) {
  std::set<std::tuple<int, int, int>> have;
  for (const auto& p : t_.messages) have.emplace(p.api_key, p.version, int(p.direction));
  std::set<std::pair<int, int>> unstable;  // (api key, version)
  for (const auto& m : messages)
    if (m.is_api() && m.type == "request" && m.latest_unstable) unstable.emplace(m.api_key, m.valid.hi);
  std::string_view o = s(origin);
  for (const auto& m : messages) {
    if (!m.is_api()) continue;
    int dir = int(m.type == "request" ? Direction::Request : Direction::Response);
    for (int v = m.valid.lo; v <= m.valid.hi; ++v)
      if (!have.count({m.api_key, v, dir}) && !unstable.count({m.api_key, v})) add_version(m, v, o, true);
  }
}

}  // namespace kwire
