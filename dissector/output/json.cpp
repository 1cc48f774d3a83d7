#include <cmath>
#include <cstdio>

#include "dissector/output/output.hpp"
#include "dissector/wire/wire.hpp"

namespace kwire {

void json_string(std::ostream& out, std::string_view s) {
  out << '"';
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    uint8_t c = *p;
    if (c == '"' || c == '\\') { out << '\\' << static_cast<char>(c); ++p; continue; }
    if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      out << b;
      ++p;
      continue;
    }
    if (c < 0x80) { out << static_cast<char>(c); ++p; continue; }
    // Copy valid UTF-8 sequences; replace invalid bytes with U+FFFD.
    int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && end - p >= len;
    for (int k = 1; ok && k < len; ++k) ok = (p[k] & 0xc0) == 0x80;
    if (ok) { out.write(reinterpret_cast<const char*>(p), len); p += len; }
    else { out << "\xef\xbf\xbd"; ++p; }
  }
  out << '"';
}

namespace {

void value(std::ostream& out, const ProgramSet& ps, const Frame& f, uint32_t i);

void object(std::ostream& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  out << '{';
  bool first = true;
  bool unknown_open = false;
  for (uint32_t c : Children(f, i)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag) {
      // Kafka's converters drop unknown tagged fields; kwire keeps them.
      out << (first ? "" : ",") << (unknown_open ? "" : "\"_unknownTaggedFields\":[");
      if (unknown_open) out << ',';
      out << "{\"tag\":" << n.tag << ",\"data\":\"" << wire::base64(n.bytes()) << "\"}";
      unknown_open = true;
      first = false;
      continue;
    }
    if (unknown_open) { out << ']'; unknown_open = false; }
    out << (first ? "" : ",");
    json_string(out, ps.field(n.desc).json_name);
    out << ':';
    value(out, ps, f, c);
    first = false;
  }
  if (unknown_open) out << ']';
  out << '}';
}

void value(std::ostream& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  const Node& n = f.nodes[i];
  const FieldDesc& d = ps.field(n.desc);
  if (n.is_null()) { out << "null"; return; }
  if (d.flags & kSensitive) { out << "\"<redacted>\""; return; }
  switch (n.type) {
    case WireType::Bool: out << (n.v.i ? "true" : "false"); return;
    case WireType::Float64:
      if (std::isfinite(n.v.f)) { char b[32]; snprintf(b, sizeof b, "%.17g", n.v.f); out << b; }
      else out << '"' << n.v.f << '"';
      return;
    case WireType::Uuid: out << '"' << wire::uuid_to_string(n.v.p) << '"'; return;
    case WireType::String: case WireType::VarString: json_string(out, n.str()); return;
    case WireType::Bytes: case WireType::VarBytes: out << '"' << wire::base64(n.bytes()) << '"'; return;
    case WireType::Records: {
      // Batches as objects rather than Kafka's opaque byte count.
      out << '[';
      bool first = true;
      for (uint32_t c : Children(f, i)) {
        out << (first ? "" : ",");
        value(out, ps, f, c);
        first = false;
      }
      out << ']';
      return;
    }
    case WireType::Struct: object(out, ps, f, i); return;
    case WireType::Array: {
      out << '[';
      bool first = true;
      for (uint32_t c : Children(f, i)) {
        out << (first ? "" : ",");
        value(out, ps, f, c);
        first = false;
      }
      out << ']';
      return;
    }
    default: out << n.v.i; return;
  }
}

}  // namespace

void write_json_struct(std::ostream& out, const ProgramSet& ps, const Frame& f, uint32_t node) {
  value(out, ps, f, node);
}

void write_json(std::ostream& out, const ProgramSet& ps, const Frame& f, const FrameContext& ctx) {
  char t[48];
  snprintf(t, sizeof t, "%lld.%06d", static_cast<long long>(ctx.packet.ts_sec), ctx.packet.ts_usec);
  out << "{\"frame\":" << ctx.number << ",\"time\":" << t << ",\"src\":\"" << ctx.src.str() << "\",\"dst\":\""
      << ctx.dst.str() << "\",\"direction\":\"" << (f.direction == Direction::Request ? "request" : "response")
      << "\",\"apiKey\":";
  if (f.api_key >= 0) out << f.api_key; else out << "null";
  out << ",\"apiVersion\":";
  if (f.api_key >= 0) out << f.api_version; else out << "null";
  out << ",\"apiName\":";
  if (f.program) json_string(out, f.program->api_name); else out << "null";
  out << ",\"correlationId\":" << f.correlation_id;
  if (ctx.unmatched) out << ",\"unmatched\":true";
  if (f.guessed) out << ",\"guessed\":true";
  if (f.program && f.program->overlay) { out << ",\"overlay\":"; json_string(out, f.program->origin); }
  if (ctx.not_kafka) { out << ",\"notKafka\":"; json_string(out, ctx.note); }
  out << ",\"header\":";
  if (!f.nodes.empty()) object(out, ps, f, 0); else out << "null";
  out << ",\"body\":";
  if (f.body) object(out, ps, f, f.body); else out << "null";
  if (!f.errors.empty()) {
    out << ",\"error\":{\"offset\":" << f.errors.front().offset << ",\"reason\":";
    json_string(out, f.errors.front().reason);
    out << '}';
  }
  out << '}';
}

}  // namespace kwire
