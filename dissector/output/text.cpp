#include <cinttypes>
#include <cstring>
#include <sstream>
#include <vector>

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"
#include "dissector/wire/wire.hpp"

namespace kwire {

namespace {

std::string quoted(std::string_view s) {
  std::ostringstream o;
  json_string(o, s);
  return o.str();
}

// The value of a leaf node as text ("3", "\"app\"", "NONE(0)").
std::string value_text(const ProgramSet& ps, const Node& n, std::string_view api) {
  const FieldDesc& d = ps.field(n.desc);
  if (n.is_null()) return "null";
  if (d.flags & kSensitive) return "<redacted " + std::to_string(n.aux) + " bytes>";
  switch (n.type) {
    case WireType::Bool: return n.v.i ? "true" : "false";
    case WireType::Float64: { std::ostringstream o; o << n.v.f; return o.str(); }
    case WireType::Uuid: return wire::uuid_to_string(n.v.p);
    case WireType::String: case WireType::VarString: return quoted(n.str());
    case WireType::Bytes: case WireType::VarBytes: case WireType::Records: {
      std::string s = std::to_string(n.aux) + " bytes";
      if (n.type != WireType::Records && n.aux <= 32) {
        bool printable = true;
        for (uint8_t c : n.bytes()) printable &= c >= 0x20 && c < 0x7f;
        if (printable) s += " " + quoted(n.str());
      }
      return s;
    }
    case WireType::Struct: case WireType::Array: return {};
    default: break;
  }
  std::string s = std::to_string(n.v.i);
  if (n.type == WireType::Uint32 && (n.desc == kDescCrc || n.desc == kDescLegacyCrc)) {
    char b[16];
    snprintf(b, sizeof b, "0x%08" PRIx64, static_cast<uint64_t>(n.v.i));
    return b;
  }
  auto name = code_name(api, d, n.v.i);
  return name.empty() ? s : std::string(name) + "(" + s + ")";
}

bool primitive_array(const Node& n, const FieldDesc& d) {
  return n.type == WireType::Array && d.elem != WireType::Struct && n.desc >= kBuiltinDescCount;
}

void tree(std::ostream& out, const ProgramSet& ps, const Frame& f, uint32_t i, int indent, std::string_view api) {
  const Node& n = f.nodes[i];
  const FieldDesc& d = ps.field(n.desc);
  std::string pad(static_cast<size_t>(indent), ' ');
  if (n.desc == kDescUnknownTag) {
    out << pad << "UnknownTaggedField[tag " << n.tag << "]: " << n.aux << " bytes\n";
    return;
  }
  std::string label = (n.flags & kElement) ? "" : std::string(d.name);
  if (n.type == WireType::Array) {
    out << pad << label;
    if (n.is_null()) { out << ": null\n"; return; }
    if (primitive_array(n, d)) {
      out << ": [";
      bool first = true;
      for (uint32_t c : Children(f, i)) {
        out << (first ? "" : ", ") << value_text(ps, f.nodes[c], api);
        first = false;
      }
      out << "]\n";
      return;
    }
    out << " (" << n.aux << ")\n";
    uint32_t k = 0;
    for (uint32_t c : Children(f, i)) {
      const Node& e = f.nodes[c];
      if (e.type == WireType::Struct && (e.flags & kElement)) {
        out << pad << "  [" << k++ << "]\n";
        for (uint32_t g : Children(f, c)) tree(out, ps, f, g, indent + 4, api);
      } else {
        tree(out, ps, f, c, indent + 2, api);
      }
    }
    return;
  }
  if (n.type == WireType::Struct) {
    out << pad << label;
    if (n.is_null()) { out << ": null\n"; return; }
    out << "\n";
    for (uint32_t c : Children(f, i)) tree(out, ps, f, c, indent + 2, api);
    return;
  }
  out << pad << label << ": " << value_text(ps, n, api) << "\n";
  if (n.type == WireType::Records)
    for (uint32_t c : Children(f, i)) tree(out, ps, f, c, indent + 2, api);
}

// Fields worth a place on the summary line, with their short names.
struct SummaryField { std::string_view field, label; };
constexpr SummaryField kSummaryFields[] = {
  {"GroupId", "group"}, {"MemberId", "member"}, {"MemberEpoch", "epoch"}, {"GenerationId", "generation"},
  {"TopologyEpoch", "topologyEpoch"}, {"TransactionalId", "txn"}, {"ErrorCode", "error"},
};

// First non-zero error code anywhere below the top level.
const Node* nested_error(const ProgramSet& ps, const Frame& f) {
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.parent != f.body && n.v.i != 0 && !(n.flags & kElement) && is_error_code_field(ps.field(n.desc))) return &n;
  }
  return nullptr;
}

}  // namespace

bool has_error_code(const ProgramSet& ps, const Frame& f) {
  if (!f.program) return false;
  for (uint32_t i = f.body; i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Int16 && n.v.i != 0 && is_error_code_field(ps.field(n.desc))) return true;
  }
  return false;
}

std::string summarize(const ProgramSet& ps, const Frame& f, const FrameContext* ctx) {
  std::ostringstream o;
  bool request = f.direction == Direction::Request;
  if (ctx && ctx->not_kafka) {
    o << "Not Kafka: " << ctx->note;
    return o.str();
  }
  if (f.program) {
    o << f.program->api_name << " v" << f.api_version << (request ? " Request" : " Response");
  } else if (f.api_key >= 0) {
    o << "ApiKey " << f.api_key << " v" << f.api_version << (request ? " Request" : " Response");
  } else {
    o << (request ? "Request" : "Response");
  }
  o << " corr=" << f.correlation_id;
  if (ctx && ctx->unmatched && !f.guessed) o << " (unmatched: request not captured)";
  if (f.program && f.body && f.body < f.nodes.size()) {
    if (!find_field(f, ps, f.body, "GroupId")) {
      // Batched group APIs (describe, delete): the group ids anywhere in the body.
      std::vector<std::string_view> groups;
      for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
        const Node& n = f.nodes[i];
        if (n.type == WireType::String && !n.is_null() && ps.field(n.desc).entity == "groupId") groups.push_back(n.str());
      }
      if (!groups.empty()) {
        o << " group=" << groups.front();
        if (groups.size() > 1) o << "(+" << groups.size() - 1 << ")";
      }
    }
    for (const auto& sf : kSummaryFields) {
      const Node* n = find_field(f, ps, f.body, sf.field);
      if (!n || n->is_null()) continue;
      o << " " << sf.label << "=";
      if (n->type == WireType::String) o << n->str();
      else o << (sf.field == "ErrorCode" && !error_name(n->v.i).empty() ? std::string(error_name(n->v.i)) : std::to_string(n->v.i));
    }
    if (const Node* e = nested_error(ps, f))
      o << " " << node_path(f, ps, static_cast<uint32_t>(e - f.nodes.data())) << "=" << error_name(e->v.i);
  }
  if (f.program && f.program->overlay) o << " [" << f.program->origin << "]";
  if (f.guessed) o << " [version guessed: request not captured]";
  for (const auto& e : f.errors) o << " [malformed at offset " << e.offset << ": " << e.reason << "]";
  return o.str();
}

void write_tree(std::ostream& out, const ProgramSet& ps, const Frame& f, int indent) {
  if (f.nodes.empty()) return;
  std::string_view api = f.program ? f.program->api_name : std::string_view{};
  std::string pad(static_cast<size_t>(indent), ' ');
  out << pad << "Header (v" << f.header_version << ")\n";
  for (uint32_t c : Children(f, 0)) tree(out, ps, f, c, indent + 2, api);
  if (f.body) {
    out << pad << f.program->spec_name << " v" << f.api_version << "\n";
    for (uint32_t c : Children(f, f.body)) tree(out, ps, f, c, indent + 2, api);
  }
}

void write_layout(std::ostream& out, const ProgramSet& ps, const MessageProgram& m) {
  out << m.spec_name << " v" << m.version << " (api key " << m.api_key << ", "
      << (m.flexible ? "flexible" : "classic") << (m.unstable ? ", unstable" : "") << ", " << m.origin << ")\n";
  int hv = m.direction == Direction::Request ? request_header_version(m.api_key, m.version, m.flexible)
                                             : response_header_version(m.api_key, m.flexible);
  out << "  header: " << (m.direction == Direction::Request ? "request" : "response") << " header v" << hv << "\n";
  char line[256];
  snprintf(line, sizeof line, "  %-52s %-22s %-10s %s\n", "field", "type", "size", "versions");
  out << line;
  struct Walk {
    std::ostream& out;
    const ProgramSet& ps;
    void field(const FieldDesc& d, const std::string& path) {
      std::string type;
      std::string size;
      WireType t = d.type == WireType::Array ? d.elem : d.type;
      std::string base = t == WireType::Struct ? std::string(ps.structure(d.sub).name) : std::string(wire_type_name(t));
      switch (t) {
        case WireType::Int8: case WireType::Bool: size = "1"; break;
        case WireType::Int16: case WireType::Uint16: size = "2"; break;
        case WireType::Int32: case WireType::Uint32: size = "4"; break;
        case WireType::Int64: case WireType::Float64: size = "8"; break;
        case WireType::Uuid: size = "16"; break;
        default: size = "var"; break;
      }
      if (t == WireType::String || t == WireType::Bytes || t == WireType::Records)
        base = (d.compact() ? "compact " : "") + base;
      if (d.type == WireType::Array) { type = (d.compact() ? "compact []" : "[]") + base; size = "var"; }
      else type = base;
      if (d.nullable()) type += "?";
      std::string vers(d.versions);
      if (d.tagged()) vers += " tag " + std::to_string(d.tag);
      char line[512];
      snprintf(line, sizeof line, "  %-52s %-22s %-10s %s\n", path.c_str(), type.c_str(), size.c_str(), vers.c_str());
      out << line;
      if (t == WireType::Struct) structure(static_cast<uint32_t>(d.sub), path + ".");
    }
    void structure(uint32_t spi, const std::string& prefix) {
      const StructProgram& sp = ps.structure(spi);
      for (uint32_t i = 0; i < sp.field_count; ++i)
        field(ps.field(sp.first_field + i), prefix + std::string(ps.field(sp.first_field + i).name));
      if (sp.flexible) {
        char line[256];
        snprintf(line, sizeof line, "  %-52s %-22s %-10s %s\n", (prefix + "<tagged fields>").c_str(), "tagged fields", "var", "");
        out << line;
        for (uint32_t i = 0; i < sp.tagged_count; ++i)
          field(ps.field(sp.first_tagged + i), prefix + std::string(ps.field(sp.first_tagged + i).name));
      }
    }
  } walk{out, ps};
  walk.structure(static_cast<uint32_t>(ps.field(m.root).sub), "");
}

}  // namespace kwire
