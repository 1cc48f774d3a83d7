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

// A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD.
void json_string(TextBuffer& out, std::string_view s);


}  // namespace kwire
