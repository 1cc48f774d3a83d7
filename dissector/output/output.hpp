// Views of decoded frames: one-line summaries, the -V field tree, JSON lines
// (field names as in Kafka's generated JSON converters), and wire layouts of
// message versions. All read the same Frame. The hot ones append to a
// TextBuffer: printing is most of the cost of `kwire decode -V`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "dissector/output/text_buffer.hpp"
#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire {

// "StreamsGroupHeartbeat v1 Response corr=7 group=app member=Xy epoch=3 error=NONE"
std::string summarize(const ProgramSet& ps, const Frame& f, const FrameContext* ctx);
void append_summary(TextBuffer& out, const ProgramSet& ps, const Frame& f, const FrameContext* ctx);
// The field tree, indented, one field per line.
void write_tree(TextBuffer& out, const ProgramSet& ps, const Frame& f, int indent);
// One JSON object (no newline). `frame` is the packet that completed the
// message (Wireshark's frame.number), `message` its index among the decoded
// messages, `time` seconds since the epoch.
void write_json(TextBuffer& out, const ProgramSet& ps, const Frame& f, const FrameContext& ctx);
// The JSON value of one node as write_json writes it (an object, array, string, number).
void write_json_value(TextBuffer& out, const ProgramSet& ps, const Frame& f, uint32_t node);
// Bytes of a Kafka stream that are in no message (FrameHandler::on_skip):
// "[skipped 120 bytes at stream offset 4096: REASON]" and, as JSON,
// {"skipped":{"streamOffset":..,"length":..,"reason":..},"time":..,"src":..,"dst":..}.
void append_skip(TextBuffer& out, const FrameContext& ctx, uint64_t length, std::string_view reason);
void write_skip_json(TextBuffer& out, const FrameContext& ctx, uint64_t length, std::string_view reason);
// The wire layout of one message version: path, type, size, versions.
void write_layout(std::ostream& out, const ProgramSet& ps, const MessageProgram& m);
// True when any error code field in the frame is non-zero.
bool has_error_code(const ProgramSet& ps, const Frame& f);

// "127.0.0.1:9092", written in place (no allocation, unlike Endpoint::str).
inline void append_endpoint(TextBuffer& out, const Endpoint& e) {
  char* p = out.room(Endpoint::kTextSize);
  out.commit(p + e.format(p));
}
// Seconds and microseconds as "1700000000.000042".
inline void append_time(TextBuffer& out, int64_t sec, int32_t usec) {
  append_int(out, sec);
  char* p = out.room(7);
  p[0] = '.';
  for (int i = 6; i >= 1; --i, usec /= 10) p[i] = static_cast<char>('0' + usec % 10);
  out.commit(p + 7);
}

// A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD.
void json_string(TextBuffer& out, std::string_view s);
// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF) of two to four bytes at p, or 0.
int utf8_sequence(const uint8_t* p, const uint8_t* end);
// True when s is well-formed UTF-8 text without control characters: bytes
// that read as text, worth a preview next to their length.
bool printable_text(std::string_view s);

// An integer node that prints as its bare value in every view: not null, not
// redacted. Most leaves of most messages; the views write them without a call.
[[gnu::always_inline]] inline bool is_plain_int(const ProgramSet& ps, const Node& n) {
  static_assert(WireType::Int8 < WireType::Uint32 && WireType::Float64 > WireType::Uint32);
  return (n.type <= WireType::Uint32 || n.type == WireType::Varint || n.type == WireType::Varlong) &&
         !(n.flags & kNull) && !(ps.op(n.desc).flags & kSensitive);
}

}  // namespace kwire
