// Views of decoded frames: one-line summaries, the -V field tree, JSON lines
// (field names as in Kafka's generated JSON converters), and wire layouts of
// message versions. All read the same Frame. The hot ones append to a
// std::string: printing is most of the cost of `kwire decode -V`.
#pragma once

#include <charconv>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire {

// "StreamsGroupHeartbeat v1 Response corr=7 group=app member=Xy epoch=3 error=NONE"
std::string summarize(const ProgramSet& ps, const Frame& f, const FrameContext* ctx);
void append_summary(std::string& out, const ProgramSet& ps, const Frame& f, const FrameContext* ctx);
// The field tree, indented, one field per line.
void write_tree(std::string& out, const ProgramSet& ps, const Frame& f, int indent);
// One JSON object (no newline). `time` is seconds since the epoch.
void write_json(std::string& out, const ProgramSet& ps, const Frame& f, const FrameContext& ctx);
// The wire layout of one message version: path, type, size, versions.
void write_layout(std::ostream& out, const ProgramSet& ps, const MessageProgram& m);
// True when any error code field in the frame is non-zero.
bool has_error_code(const ProgramSet& ps, const Frame& f);

// A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD.
void json_string(std::string& out, std::string_view s);

inline void append_int(std::string& out, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, r.ptr);
}

}  // namespace kwire
