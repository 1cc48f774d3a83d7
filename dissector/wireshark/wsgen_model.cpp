#include "dissector/wireshark/wsgen_model.hpp"

#include "dissector/protocol/codes.hpp"
#include "dissector/wireshark/field_names.hpp"

namespace kwire::wireshark {

GenType gen_type(WireType t, uint32_t desc) {
  switch (t) {
    case WireType::Int8: return GenType::Int8;
    case WireType::Int16: return GenType::Int16;
    case WireType::Int32: case WireType::Varint: return GenType::Int32;
    case WireType::Int64: case WireType::Varlong: return GenType::Int64;
    case WireType::Uint16: return GenType::Uint16;
    case WireType::Uint32: return desc == kDescCrc || desc == kDescLegacyCrc ? GenType::Uint32Hex : GenType::Uint32;
    case WireType::Float64: return GenType::Double;
    case WireType::Bool: return GenType::Bool;
    case WireType::Uuid: case WireType::String: case WireType::VarString: return GenType::String;
    case WireType::Bytes: case WireType::VarBytes: return GenType::Bytes;
    case WireType::Records: case WireType::Struct: case WireType::Array: return GenType::None;
  }
  return GenType::None;
}

namespace {

bool is_int(GenType t) {
  return t == GenType::Int8 || t == GenType::Int16 || t == GenType::Int32 || t == GenType::Int64 ||
         t == GenType::Uint16 || t == GenType::Uint32;
}

// One field that versions type differently (AcceptableRecoveryLag: int32 in
// v0, int64 in v1) gets a type that holds every version's values.
std::optional<GenType> merge(GenType a, GenType b) {
  if (a == b) return a;
  if (!is_int(a) || !is_int(b)) return std::nullopt;
  auto is_unsigned = [](GenType t) { return t == GenType::Uint16 || t == GenType::Uint32; };
  auto rank = [](GenType t) {
    switch (t) {
      case GenType::Int8: return 1;
      case GenType::Int16: case GenType::Uint16: return 2;
      case GenType::Int32: case GenType::Uint32: return 3;
      default: return 4;
    }
  };
  int r = std::max(rank(a), rank(b));
  if (is_unsigned(a) && is_unsigned(b)) return r == 3 ? GenType::Uint32 : GenType::Uint16;
  if (is_unsigned(a) || is_unsigned(b)) {
    // A signed type must hold the unsigned one's values too.
    int ur = is_unsigned(a) ? rank(a) : rank(b);
    r = std::max(r, ur + 1);
  }
  return r == 1 ? GenType::Int8 : r == 2 ? GenType::Int16 : r == 3 ? GenType::Int32 : GenType::Int64;
}

struct Builder {
  const ProgramSet& ps;
  FieldModel& m;
  std::string& error;

  bool add(const std::string& abbrev, const FieldDesc& d, uint32_t desc, std::string_view where,
           std::string_view api_name) {
    GenType t = gen_type(value_type(d), desc);
    auto it = m.index.find(abbrev);
    if (it == m.index.end()) {
      ModelField f;
      f.abbrev = abbrev;
      f.name = std::string(d.name);
      f.blurb = std::string(where) + ": " + std::string(wire_type_name(d.type));
      if (d.type == WireType::Array) f.blurb += " of " + std::string(wire_type_name(d.elem));
      if (!d.versions.empty()) f.blurb += ", versions " + std::string(d.versions);
      f.type = t;
      f.error_code = is_error_code_field(d);
      if (!f.error_code && is_integer(value_type(d)) && d.type != WireType::Array) {
        for (int32_t v = 0; v < 8; ++v) {
          auto n = code_name(api_name, d, v);
          if (!n.empty()) f.values.emplace_back(v, std::string(n));
        }
      }
      m.index.emplace(abbrev, m.fields.size());
      m.fields.push_back(std::move(f));
      return true;
    }
    ModelField& f = m.fields[it->second];
    auto merged = merge(f.type, t);
    if (!merged) {
      error = abbrev + ": versions disagree on its type (" + std::string(wire_type_name(d.type)) + ")";
      return false;
    }
    f.type = *merged;
    return true;
  }

  bool walk(uint32_t sidx, const std::string& prefix, const std::string& where, std::string_view api_name) {
    const StructProgram& s = ps.structure(sidx);
    auto each = [&](uint32_t first, uint32_t count) {
      for (uint32_t i = first; i < first + count; ++i) {
        const FieldDesc& d = ps.field(i);
        std::string abbrev = child_abbrev(prefix, d.name);
        std::string path = where + "." + std::string(d.name);
        if (!add(abbrev, d, i, path, api_name)) return false;
        if (d.sub >= 0 && !walk(static_cast<uint32_t>(d.sub), abbrev, path, api_name)) return false;
        if (!payload(i, abbrev, path)) return false;
      }
      return true;
    };
    return each(s.first_field, s.field_count) && each(s.first_tagged, s.tagged_count);
  }

  // A bytes field that carries a data struct (nested_payloads()): the
  // struct's version, its fields at every version of the data spec, and
  // the bytes after it, as fields below the bytes field. An enveloped
  // message needs none: its header and body are shown with the fields of
  // top-level messages.
  bool payload(uint32_t desc, const std::string& abbrev, const std::string& path) {
    const NestedPayload* p = ps.nested_payload(desc);
    if (!p || p->payload == "request" || p->payload == "response") return true;
    std::string where = path + " (" + std::string(p->payload) + ")";
    if (!add(child_abbrev(abbrev, "Version"), ps.field(kDescNestedVersion), kDescNestedVersion, where + ".Version", {}))
      return false;
    for (const DataProgram& dp : ps.data())
      if (dp.name == p->payload && !walk(static_cast<uint32_t>(ps.field(dp.root).sub), abbrev, where, {}))
        return false;
    return add(child_abbrev(abbrev, "TrailingBytes"), ps.field(kDescNestedTrailing), kDescNestedTrailing,
               where + ".TrailingBytes", {});
  }

  bool root(uint32_t desc, std::string_view api_name) {
    const FieldDesc& d = ps.field(desc);
    std::string abbrev = root_abbrev(d.name);
    if (!add(abbrev, d, desc, d.name, api_name)) return false;
    return walk(static_cast<uint32_t>(d.sub), abbrev, std::string(d.name), api_name);
  }
};

}  // namespace

std::optional<FieldModel> build_field_model(const ProgramSet& ps, std::string& error) {
  FieldModel m;
  Builder b{ps, m, error};
  for (uint32_t desc = 0; desc < kBuiltinDescCount; ++desc) {
    const FieldDesc& d = ps.field(desc);
    std::string abbrev = builtin_abbrev(desc, d.name);
    if (!abbrev.empty() && !b.add(abbrev, d, desc, "records." + std::string(d.name), {})) return std::nullopt;
  }
  for (int v = 0; v < 3; ++v)
    if (!b.root(ps.request_header(v), {})) return std::nullopt;
  for (int v = 0; v < 2; ++v)
    if (!b.root(ps.response_header(v), {})) return std::nullopt;
  for (const auto& msg : ps.messages()) {
    m.api_names.emplace(msg.api_key, std::string(msg.api_name));
    if (!b.root(msg.root, msg.api_name)) return std::nullopt;
  }
  for (size_t i = 0; i < kErrorCodeCount; ++i) m.error_names.emplace_back(kErrorCodes[i].code, kErrorCodes[i].name);
  return m;
}

}  // namespace kwire::wireshark
