#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <sstream>
#include <vector>

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"
#include "wire/wire.hpp"

namespace kwire {

namespace {

// Appends the value of a leaf node ("3", "\"app\"", "NONE(0)").
void value_text(TextBuffer& out, const ProgramSet& ps, const Node& n, std::string_view api) {
  const FieldOp& o = ps.op(n.desc);
  if (n.is_null()) { out += "null"; return; }
  if (o.flags & kSensitive) {
    out += "<redacted ";
    append_int(out, n.aux);
    out += " bytes>";
    return;
  }
  switch (n.type) {
    case WireType::Bool: out += n.v.i ? "true" : "false"; return;
    case WireType::Float64: { char b[32]; snprintf(b, sizeof b, "%g", n.v.f); out += b; return; }
    case WireType::Uuid: out.commit(wire::uuid_to(out.room(wire::kUuidTextSize), n.v.p)); return;
    case WireType::String: case WireType::VarString: json_string(out, n.str()); return;
    case WireType::Bytes: case WireType::VarBytes: case WireType::Records: {
      append_int(out, n.aux);
      out += " bytes";
      if (n.type != WireType::Records && n.aux <= 32) {
        if (printable_text(n.str())) { out += ' '; json_string(out, n.str()); }
      }
      return;
    }
    case WireType::Struct: case WireType::Array: return;
    default: break;
  }
  if (n.desc == kDescCrc || n.desc == kDescLegacyCrc) {
    char b[16];
    snprintf(b, sizeof b, "0x%08" PRIx64, static_cast<uint64_t>(n.v.i));
    out += b;
    return;
  }
  if (!(o.marks & kMarkCodeNames) || o.type == WireType::Array) { append_int(out, n.v.i); return; }
  auto name = code_name(api, ps.field(n.desc), n.v.i);
  if (name.empty()) { append_int(out, n.v.i); return; }
  out += name;
  out += '(';
  append_int(out, n.v.i);
  out += ')';
}

bool primitive_array(const Node& n, const FieldOp& o) {
  return n.type == WireType::Array && o.elem != WireType::Struct && n.desc >= kBuiltinDescCount;
}

// `n` spaces.
constexpr char kSpaces[] = "                                                                ";
static_assert(sizeof kSpaces - 1 >= 2 * TextBuffer::kPadded);
[[gnu::always_inline]] inline void indent_to(TextBuffer& out, int indent) {
  const auto n = static_cast<size_t>(std::max(indent, 0));
  if (n <= TextBuffer::kPadded) out.append_padded({kSpaces, n});
  else out.append(n, ' ');
}

// A record on one line: records are payload, often thousands per message,
// and their fields read best side by side.
void record_line(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t rec) {
  for (uint32_t c : Children(f, rec)) {
    const Node& n = f.nodes[c];
    switch (n.desc) {
      case kDescRecordLength: continue;
      case kDescRecordAttributes: if (n.v.i == 0) continue; out += " attributes="; append_int(out, n.v.i); continue;
      case kDescOffsetDelta: out += " offsetDelta="; append_int(out, n.v.i); continue;
      case kDescTimestampDelta: out += " timestampDelta="; append_int(out, n.v.i); continue;
      case kDescKey: out += " key="; value_text(out, ps, n, {}); continue;
      case kDescValue: out += " value="; value_text(out, ps, n, {}); continue;
      case kDescHeadersArray: {
        if (n.aux == 0) continue;
        out += " headers=[";
        bool first = true;
        for (uint32_t h : Children(f, c)) {
          if (!first) out += ", ";
          first = false;
          for (uint32_t kv : Children(f, h)) {
            const Node& x = f.nodes[kv];
            if (x.desc == kDescHeaderKey) { json_string(out, x.str()); out += '='; }
            else value_text(out, ps, x, {});
          }
        }
        out += ']';
        continue;
      }
      default: continue;
    }
  }
}

// "name: 123" at `indent`: an integer field without a code name, most of
// the lines -V writes. From one room check, and inlined into the loops over
// children, so without a call per line. False, having written nothing, for
// any other node.
[[gnu::always_inline]] inline bool int_line(TextBuffer& out, const ProgramSet& ps, const Node& n, int indent) {
  if (!is_plain_int(ps, n) || (n.flags & kElement) || (ps.op(n.desc).marks & kMarkCodeNames) ||
      n.desc == kDescCrc || n.desc == kDescLegacyCrc)
    return false;
  const std::string_view name = ps.padded_name(n.desc);
  if (indent > static_cast<int>(TextBuffer::kPadded) || name.size() > TextBuffer::kPadded) [[unlikely]] return false;
  char* p = out.room(2 * TextBuffer::kPadded + 2 + 20 + 1);
  std::memcpy(p, kSpaces, TextBuffer::kPadded);
  p += indent;
  std::memcpy(p, name.data(), TextBuffer::kPadded);
  p += name.size();
  p[0] = ':';
  p[1] = ' ';
  p = write_int(p + 2, n.v.i);
  *p = '\n';
  out.commit(p + 1);
  return true;
}

// The node and its subtree, `indent` deep.
void tree(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i, int indent, std::string_view api);

// The children of node `i`, `indent` deep.
[[gnu::always_inline]] inline void children(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i,
                                            int indent, std::string_view api) {
  for (uint32_t c : Children(f, i))
    if (!int_line(out, ps, f.nodes[c], indent)) tree(out, ps, f, c, indent, api);
}

void tree(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i, int indent, std::string_view api) {
  const Node& n = f.nodes[i];
  indent_to(out, indent);
  if (n.desc == kDescUnknownTag) {
    out += "UnknownTaggedField[tag ";
    append_int(out, n.tag);
    out += "]: ";
    append_int(out, n.aux);
    out += " bytes\n";
    return;
  }
  if (!(n.flags & kElement)) out.append_padded(ps.padded_name(n.desc));
  if (n.type == WireType::Array) {
    if (n.is_null()) { out += ": null\n"; return; }
    const FieldOp& o = ps.op(n.desc);
    if (primitive_array(n, o) && o.elem <= WireType::Uint32 && !(o.flags & kSensitive)) {
      // Integer elements (replica lists, partition indexes): leaves, never
      // null, never a code name; room for all of them at once.
      char* p = out.room(5 + 22 * static_cast<size_t>(n.end - i - 1));
      std::memcpy(p, ": [", 3);
      p += 3;
      for (uint32_t c = i + 1; c < n.end; ++c) {
        if (c > i + 1) { p[0] = ','; p[1] = ' '; p += 2; }
        p = write_int(p, f.nodes[c].v.i);
      }
      p[0] = ']';
      p[1] = '\n';
      out.commit(p + 2);
      return;
    }
    if (primitive_array(n, o)) {
      out += ": [";
      bool first = true;
      for (uint32_t c : Children(f, i)) {
        if (!first) out += ", ";
        value_text(out, ps, f.nodes[c], api);
        first = false;
      }
      out += "]\n";
      return;
    }
    out += " (";
    append_int(out, n.aux);
    out += ")\n";
    uint32_t k = 0;
    for (uint32_t c : Children(f, i)) {
      const Node& e = f.nodes[c];
      if (e.desc == kDescRecord) {
        indent_to(out, indent + 2);
        out += '[';
        append_int(out, k++);
        out += ']';
        record_line(out, ps, f, c);
        out += '\n';
      } else if (e.type == WireType::Struct && (e.flags & kElement)) {
        indent_to(out, indent + 2);
        out += '[';
        append_int(out, k++);
        out += "]\n";
        children(out, ps, f, c, indent + 4, api);
      } else {
        tree(out, ps, f, c, indent + 2, api);  // an element: never an int_line
      }
    }
    return;
  }
  if (n.type == WireType::Struct) {
    if (n.is_null()) { out += ": null\n"; return; }
    out += '\n';
    children(out, ps, f, i, indent + 2, api);
    return;
  }
  out += ": ";
  value_text(out, ps, n, api);
  out += '\n';
  // Records, and payloads decoded inside a bytes field, below the field.
  if (n.type == WireType::Records || (n.flags & kNested))
    children(out, ps, f, i, indent + 2, api);
}

// Fields worth a place on the summary line, with their short names.
struct SummaryField { std::string_view field, label; };
constexpr SummaryField kSummaryFields[] = {
  {"GroupId", "group"}, {"MemberId", "member"}, {"MemberEpoch", "epoch"}, {"GenerationId", "generation"},
  {"TopologyEpoch", "topologyEpoch"}, {"TransactionalId", "txn"}, {"ErrorCode", "error"},
};

// The first node from `first` on for which `match` is true, not looking
// inside records fields (record data holds no message fields) or payloads
// nested in bytes fields (theirs are another message's); null if none.
template <class Match>
const Node* find_message_node(const Frame& f, uint32_t first, Match&& match) {
  for (uint32_t i = first; i < f.nodes.size();) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records || (n.flags & kNested)) { i = n.end; continue; }
    if (match(n)) return &n;
    ++i;
  }
  return nullptr;
}

}  // namespace

bool has_error_code(const ProgramSet& ps, const Frame& f) {
  if (!f.program) return false;
  return find_message_node(f, f.body, [&](const Node& n) {
    return n.type == WireType::Int16 && n.v.i != 0 && (ps.op(n.desc).flags & kErrorCode);
  }) != nullptr;
}

std::string summarize(const ProgramSet& ps, const Frame& f, const FrameContext* ctx) {
  TextBuffer s;
  append_summary(s, ps, f, ctx);
  return s.str();
}

void append_summary(TextBuffer& o, const ProgramSet& ps, const Frame& f, const FrameContext* ctx) {
  bool request = f.direction == Direction::Request;
  if (ctx && ctx->not_kafka) {
    o += "Not Kafka: ";
    o += ctx->note;
    return;
  }
  if (f.program) {
    o += f.program->api_name;
  } else if (f.api_key >= 0) {
    o += "ApiKey ";
    append_int(o, f.api_key);
  }
  if (f.api_key >= 0) {
    o += " v";
    append_int(o, f.api_version);
    o += ' ';
  }
  o += request ? "Request" : "Response";
  o += " corr=";
  append_int(o, f.correlation_id);
  if (ctx && ctx->unmatched && !f.guessed) o += " (unmatched: request not captured)";
  if (f.program && f.body && f.body < f.nodes.size()) {
    // The summary fields at the top level of the body, in one pass.
    constexpr size_t kFields = std::size(kSummaryFields);
    const Node* top[kFields] = {};
    for (uint32_t c : Children(f, f.body)) {
      const std::string_view name = ps.field(f.nodes[c].desc).name;
      for (size_t k = 0; k < kFields; ++k)
        if (!top[k] && name == kSummaryFields[k].field) top[k] = &f.nodes[c];
    }
    // Then, in one pass over the rest of the message: for batched group
    // APIs (describe, delete) without a top-level GroupId, the group ids
    // anywhere in the body; and the first non-zero error code below the
    // top level.
    static_assert(kSummaryFields[0].field == "GroupId");
    const bool want_groups = !top[0];
    std::string_view first_group;
    size_t groups = 0;
    const Node* nested_error = nullptr;
    // Error codes are int16 and group ids strings: the descriptor is looked
    // at only for those (and for error codes, only when not zero).
    find_message_node(f, f.body + 1, [&](const Node& n) {
      if (n.type == WireType::Int16) {
        if (!nested_error && n.v.i != 0 && n.parent != f.body && !(n.flags & kElement) &&
            (ps.op(n.desc).flags & kErrorCode))
          nested_error = &n;
      } else if (want_groups && n.type == WireType::String && !n.is_null() &&
                 (ps.op(n.desc).marks & kMarkGroupId) && groups++ == 0) {
        first_group = n.str();
      }
      return false;  // all of them
    });
    if (groups) {
      o += " group=";
      o += first_group;
      if (groups > 1) { o += "(+"; append_int(o, static_cast<int64_t>(groups - 1)); o += ')'; }
    }
    for (size_t k = 0; k < kFields; ++k) {
      const SummaryField& sf = kSummaryFields[k];
      const Node* n = top[k];
      if (!n || n->is_null()) continue;
      o += ' ';
      o += sf.label;
      o += '=';
      if (n->type == WireType::String) o += n->str();
      else if (sf.field == "ErrorCode" && !error_name(n->v.i).empty()) o += error_name(n->v.i);
      else append_int(o, n->v.i);
    }
    if (const Node* e = nested_error) {
      o += ' ';
      o += node_path(f, ps, static_cast<uint32_t>(e - f.nodes.data()));
      o += '=';
      o += error_name(e->v.i);
    }
  }
  if (f.program && f.program->overlay) { o += " ["; o += f.program->origin; o += ']'; }
  if (f.guessed) o += " [version guessed: request not captured]";
  for (const auto& e : f.errors) {
    o += " [malformed at offset ";
    append_int(o, e.offset);
    o += ": ";
    o += e.reason;
    o += ']';
  }
}

void write_tree(TextBuffer& out, const ProgramSet& ps, const Frame& f, int indent) {
  if (f.nodes.empty()) return;
  std::string_view api = f.program ? f.program->api_name : std::string_view{};
  indent_to(out, indent);
  out += "Header (v";
  append_int(out, f.header_version);
  out += ")\n";
  children(out, ps, f, 0, indent + 2, api);
  if (f.body) {
    indent_to(out, indent);
    out += f.program->spec_name;
    out += " v";
    append_int(out, f.api_version);
    out += '\n';
    children(out, ps, f, f.body, indent + 2, api);
  }
}

void write_layout(std::ostream& out, const ProgramSet& ps, const MessageProgram& m) {
  out << m.spec_name << " v" << m.version << " (api key " << m.api_key << ", "
      << (m.flexible ? "flexible" : "classic") << (m.unstable ? ", unstable" : "") << ", " << m.origin << ")\n";
  int hv = m.direction == Direction::Request ? request_header_version(m.api_key, m.version, m.flexible)
                                             : response_header_version(m.api_key, m.flexible);
  out << "  header: " << (m.direction == Direction::Request ? "request" : "response") << " header v" << hv << "\n";
  // Rows first, then columns as wide as their widest cell: nested paths get long.
  struct Row { std::string path, type, size, versions; };
  std::vector<Row> rows{{"field", "type", "size", "versions"}};
  struct Walk {
    std::vector<Row>& rows;
    const ProgramSet& ps;
    void field(const FieldDesc& d, const std::string& path) {
      std::string type;
      std::string size = "var";
      WireType t = d.type == WireType::Array ? d.elem : d.type;
      std::string base = t == WireType::Struct ? std::string(ps.structure(d.sub).name) : std::string(wire_type_name(t));
      if (uint32_t n = fixed_size(t)) size = std::to_string(n);
      if (t == WireType::String || t == WireType::Bytes || t == WireType::Records)
        base = (d.compact() ? "compact " : "") + base;
      if (d.type == WireType::Array) { type = (d.compact() ? "compact []" : "[]") + base; size = "var"; }
      else type = base;
      if (d.nullable()) type += "?";
      std::string vers(d.versions);
      if (d.tagged()) vers += " tag " + std::to_string(d.tag);
      rows.push_back({path, type, size, vers});
      if (t == WireType::Struct) structure(static_cast<uint32_t>(d.sub), path + ".");
    }
    void structure(uint32_t spi, const std::string& prefix) {
      const StructProgram& sp = ps.structure(spi);
      for (uint32_t i = 0; i < sp.field_count; ++i)
        field(ps.field(sp.first_field + i), prefix + std::string(ps.field(sp.first_field + i).name));
      if (sp.flexible) {
        rows.push_back({prefix + "<tagged fields>", "tagged fields", "var", ""});
        for (uint32_t i = 0; i < sp.tagged_count; ++i)
          field(ps.field(sp.first_tagged + i), prefix + std::string(ps.field(sp.first_tagged + i).name));
      }
    }
  } walk{rows, ps};
  walk.structure(static_cast<uint32_t>(ps.field(m.root).sub), "");
  size_t w_path = 0, w_type = 0, w_size = 0;
  for (const Row& r : rows) {
    w_path = std::max(w_path, r.path.size());
    w_type = std::max(w_type, r.type.size());
    w_size = std::max(w_size, r.size.size());
  }
  for (const Row& r : rows) {
    std::string line = "  " + r.path;
    line.append(w_path + 2 - r.path.size(), ' ');
    line += r.type;
    line.append(w_type + 2 - r.type.size(), ' ');
    line += r.size;
    line.append(w_size + 2 - r.size.size(), ' ');
    line += r.versions;
    while (line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

void append_skip(TextBuffer& o, const FrameContext& ctx, uint64_t length, std::string_view reason) {
  o += "[skipped ";
  append_int(o, static_cast<int64_t>(length));
  o += " bytes at stream offset ";
  append_int(o, static_cast<int64_t>(ctx.stream_offset));
  o += ": ";
  o += reason;
  o += ']';
}

}  // namespace kwire
