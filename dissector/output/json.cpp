#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "dissector/output/output.hpp"
#include "wire/wire.hpp"

namespace kwire {

int utf8_sequence(const uint8_t* p, const uint8_t* end) {
  const uint8_t c = *p;
  const int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (len == 0 || end - p < len) return 0;
  uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (int k = 1; k < len; ++k) {
    if ((p[k] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (p[k] & 0x3f);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  return cp >= kMin[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? len : 0;
}

bool printable_text(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    if (*p < 0x80) {
      if (*p < 0x20 || *p == 0x7f) return false;
      ++p;
      continue;
    }
    const int len = utf8_sequence(p, end);
    if (!len) return false;
    // C1 controls (U+0080-U+009F) are not text either.
    if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) return false;
    p += len;
  }
  return true;
}

namespace {

// Whether any of the 8 bytes in `x` needs more than a copy into a JSON
// string: a control character, a quote, a backslash, or a byte of a
// multi-byte UTF-8 sequence (checked on its own). Word-at-a-time tests,
// exact as yes/no answers: x has a byte equal to c where x ^ c has a zero
// byte, and a byte below n (n <= 128) where x - n * 0x01..01 borrows.
[[gnu::always_inline]] inline bool needs_care(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t below_space = (x - 0x20 * kOnes) & ~x & kHigh;
  return ((x & kHigh) | below_space | has_zero(x ^ ('"' * kOnes)) | has_zero(x ^ ('\\' * kOnes))) != 0;
}

}  // namespace

void json_string(TextBuffer& out, std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  // The most a byte can become is six (a control byte's escape); U+FFFD for
  // one bad byte is three.
  char* o = out.room(2 + 6 * s.size());
  *o++ = '"';
  while (p < end) {
    // Plain ASCII eight bytes at a time.
    while (end - p >= 8) {
      uint64_t x;
      std::memcpy(&x, p, 8);
      if (needs_care(x)) break;
      std::memcpy(o, p, 8);
      o += 8;
      p += 8;
    }
    if (p == end) break;
    const uint8_t c = *p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') { *o++ = static_cast<char>(c); ++p; continue; }
    if (c == '"' || c == '\\') { o[0] = '\\'; o[1] = static_cast<char>(c); o += 2; ++p; continue; }
    if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::memcpy(o, "\\u00", 4);
      o[4] = kHex[c >> 4];
      o[5] = kHex[c & 15];
      o += 6;
      ++p;
      continue;
    }
    const int len = utf8_sequence(p, end);
    if (len) { std::memcpy(o, p, static_cast<size_t>(len)); o += len; p += len; }
    else { std::memcpy(o, "\xef\xbf\xbd", 3); o += 3; ++p; }
  }
  *o++ = '"';
  out.commit(o);
}

namespace {

void value(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i);
void object(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i);

// A record as the records decoder lays it out (the record, then Length,
// Attributes, TimestampDelta, OffsetDelta, Key, Value, Headers, then three
// nodes per header): records are most of a Produce or Fetch, and their
// seven fields are written here from one room check instead of a dispatch
// per field. False, having written nothing, for any other layout.
bool record(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  const Node* n = &f.nodes[i];
  if (n[0].end - i < 8 || n[1].desc != kDescRecordLength || n[2].desc != kDescRecordAttributes ||
      n[3].desc != kDescTimestampDelta || n[4].desc != kDescOffsetDelta || n[5].desc != kDescKey ||
      n[6].desc != kDescValue || n[7].desc != kDescHeadersArray || n[7].end != n[0].end)
    return false;
  constexpr size_t kKey = TextBuffer::kPadded;   // json_key's readable bytes
  size_t room = 1 + 4 * (kKey + 21) + 2 * (kKey + 7) + kKey + 3;
  for (int k = 5; k <= 6; ++k)
    if (!n[k].is_null()) room += wire::base64_size(n[k].aux);
  char* p = out.room(room);
  *p++ = '{';
  auto key = [&](uint32_t desc) {
    const std::string_view k = ps.json_key(desc);
    std::memcpy(p, k.data(), kKey);
    p += k.size();
  };
  for (int k = 1; k <= 4; ++k) {
    key(n[k].desc);
    p = write_int(p, n[k].v.i);
    *p++ = ',';
  }
  for (int k = 5; k <= 6; ++k) {
    key(n[k].desc);
    if (n[k].is_null()) {
      std::memcpy(p, "null", 4);
      p += 4;
    } else {
      *p++ = '"';
      p = wire::base64_to(p, n[k].bytes());
      *p++ = '"';
    }
    *p++ = ',';
  }
  key(kDescHeadersArray);
  if (n[7].aux == 0) {   // most records have no headers
    std::memcpy(p, "[]}", 3);
    out.commit(p + 3);
    return true;
  }
  out.commit(p);
  value(out, ps, f, i + 7);
  out += '}';
  return true;
}

void object(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  if (f.nodes[i].desc == kDescRecord && record(out, ps, f, i)) return;
  out += '{';
  bool first = true;
  bool unknown_open = false;
  for (uint32_t c : Children(f, i)) {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag) {
      // Kafka's converters drop unknown tagged fields; kwire keeps them.
      if (unknown_open) out += ',';
      else out += first ? "\"_unknownTaggedFields\":[" : ",\"_unknownTaggedFields\":[";
      out += "{\"tag\":";
      append_int(out, n.tag);
      out += ",\"data\":\"";
      out.commit(wire::base64_to(out.room(wire::base64_size(n.bytes().size())), n.bytes()));
      out += "\"}";
      unknown_open = true;
      first = false;
      continue;
    }
    if (unknown_open) { out += ']'; unknown_open = false; }
    const std::string_view key = ps.json_key(n.desc);
    // Integers, most of the fields of most messages: separator, key and
    // digits from one room check, without the call.
    if (is_plain_int(ps, n) && key.size() <= TextBuffer::kPadded) [[likely]] {
      char* p = out.room(1 + TextBuffer::kPadded + 20);
      *p = ',';
      p += !first;
      std::memcpy(p, key.data(), TextBuffer::kPadded);
      p += key.size();
      out.commit(write_int(p, n.v.i));
      first = false;
      continue;
    }
    if (!first) out += ',';
    out.append_padded(key);
    first = false;
    value(out, ps, f, c);
  }
  if (unknown_open) out += ']';
  out += '}';
}

// A bytes field whose payload decoded, in place of its base64: a data
// struct as its object ({"version":3,"topics":[...],...}), an enveloped
// message as {"header":{...},"body":{...}}.
void nested(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  Children c(f, i);
  auto it = c.begin();
  if (!(f.nodes[i].flags & kNestedMessage)) { object(out, ps, f, *it); return; }
  out += "{\"header\":";
  object(out, ps, f, *it);
  out += ",\"body\":";
  object(out, ps, f, *++it);
  out += '}';
}

void value(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t i) {
  const Node& n = f.nodes[i];
  if (n.is_null()) { out += "null"; return; }
  if (ps.op(n.desc).flags & kSensitive) { out += "\"<redacted>\""; return; }
  switch (n.type) {
    case WireType::Bool: out += n.v.i ? "true" : "false"; return;
    case WireType::Float64: {
      // As Kafka's converters (Jackson) write doubles: shortest round-trip
      // digits, always with a fraction or exponent (-0.0 stays -0.0), and
      // the non-finite values as the strings "NaN", "Infinity", "-Infinity".
      double x = n.v.f;
      if (std::isnan(x)) { out += "\"NaN\""; return; }
      if (std::isinf(x)) { out += x > 0 ? "\"Infinity\"" : "\"-Infinity\""; return; }
      char b[32];
      auto r = std::to_chars(b, b + sizeof b, x);
      std::string_view digits(b, static_cast<size_t>(r.ptr - b));
      out += digits;
      if (digits.find_first_of(".e") == std::string_view::npos) out += ".0";
      return;
    }
    case WireType::Uuid:
      out += '"';
      out.commit(wire::uuid_to(out.room(wire::kUuidTextSize), n.v.p));
      out += '"';
      return;
    case WireType::String: case WireType::VarString: json_string(out, n.str()); return;
    case WireType::Bytes: case WireType::VarBytes:
      if ((n.flags & (kNested | kNestedFailed)) == kNested) { nested(out, ps, f, i); return; }
      out += '"';
      out.commit(wire::base64_to(out.room(wire::base64_size(n.bytes().size())), n.bytes()));
      out += '"';
      return;
    case WireType::Records: case WireType::Array: {
      const FieldOp& o = ps.op(n.desc);
      if (n.type == WireType::Array && (o.elem <= WireType::Uint32) && !(o.flags & kSensitive)) {
        // Integer elements: leaves, one node each, never null; room for all at once.
        char* p = out.room(2 + 21 * static_cast<size_t>(n.end - i - 1));
        *p++ = '[';
        for (uint32_t c = i + 1; c < n.end; ++c) {
          p = write_int(p, f.nodes[c].v.i);
          *p++ = ',';
        }
        p[-1 + (n.end == i + 1)] = ']';   // over the last comma, or after '[' when empty
        out.commit(p + (n.end == i + 1));
        return;
      }
      // Records as their batches rather than Kafka's opaque byte count.
      out += '[';
      bool first = true;
      for (uint32_t c : Children(f, i)) {
        if (!first) out += ',';
        first = false;
        value(out, ps, f, c);   // integer elements took the path above
      }
      out += ']';
      return;
    }
    case WireType::Struct: object(out, ps, f, i); return;
    default: append_int(out, n.v.i); return;
  }
}

}  // namespace

void write_json(TextBuffer& out, const ProgramSet& ps, const Frame& f, const FrameContext& ctx) {
  out += "{\"frame\":";
  append_int(out, static_cast<int64_t>(ctx.packet.number ? ctx.packet.number : ctx.number));
  out += ",\"message\":";
  append_int(out, static_cast<int64_t>(ctx.number));
  out += ",\"time\":";
  append_time(out, ctx.packet.ts_sec, ctx.packet.ts_usec);
  out += ",\"src\":\"";
  append_endpoint(out, ctx.src);
  out += "\",\"dst\":\"";
  append_endpoint(out, ctx.dst);
  out += f.direction == Direction::Request ? "\",\"direction\":\"request\"" : "\",\"direction\":\"response\"";
  out += ",\"apiKey\":";
  if (f.api_key >= 0) append_int(out, f.api_key); else out += "null";
  out += ",\"apiVersion\":";
  if (f.api_key >= 0) append_int(out, f.api_version); else out += "null";
  out += ",\"apiName\":";
  if (f.program) json_string(out, f.program->api_name); else out += "null";
  out += ",\"correlationId\":";
  append_int(out, f.correlation_id);
  if (ctx.unmatched) out += ",\"unmatched\":true";
  if (f.guessed) out += ",\"guessed\":true";
  if (f.program && f.program->overlay) { out += ",\"overlay\":"; json_string(out, f.program->origin); }
  if (ctx.not_kafka) { out += ",\"notKafka\":"; json_string(out, ctx.note); }
  out += ",\"header\":";
  if (!f.nodes.empty()) object(out, ps, f, 0); else out += "null";
  out += ",\"body\":";
  if (f.body) object(out, ps, f, f.body); else out += "null";
  if (!f.errors.empty()) {
    out += ",\"error\":{\"offset\":";
    append_int(out, f.errors.front().offset);
    out += ",\"reason\":";
    json_string(out, f.errors.front().reason);
    out += '}';
  }
  out += '}';
}

void write_json_value(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t node) {
  value(out, ps, f, node);
}

void write_skip_json(TextBuffer& out, const FrameContext& ctx, uint64_t length, std::string_view reason) {
  out += "{\"skipped\":{\"streamOffset\":";
  append_int(out, static_cast<int64_t>(ctx.stream_offset));
  out += ",\"length\":";
  append_int(out, static_cast<int64_t>(length));
  out += ",\"reason\":";
  json_string(out, reason);
  out += "},\"time\":";
  append_time(out, ctx.packet.ts_sec, ctx.packet.ts_usec);
  out += ",\"src\":\"";
  append_endpoint(out, ctx.src);
  out += "\",\"dst\":\"";
  append_endpoint(out, ctx.dst);
  out += "\"}";
}

}  // namespace kwire
