// Display filters and field extraction over decoded frames, in the manner of
// Wireshark's -Y and -T fields. Paths are the JSON names of `kwire decode -T
// json` ("apiName", "header.clientId", "body.groups.groupId"; an array on the
// way means "any element"). An expression is compiled once; each path is
// resolved to field descriptors once per message layout (the descriptor of
// the header or body root) and cached, so matching a frame walks the node
// tape comparing descriptor indices, never names or JSON text. The caches
// make a Filter single-threaded: one per thread.
//
//   Filter f = Filter::compile("apiName == StreamsGroupHeartbeat && body.memberEpoch > 3", ps, err);
//   FilterSelector sel(*f);               // one per capture: keeps request.* facts
//   ... in FrameHandler::on_frame:  if (sel.select(ctx, frame)) print(...);
//
// Syntax (see docs/decode.md, "Display filters"):
//   PATH                       present and not null
//   PATH OP VALUE              OP: == != < <= > >= (also eq ne lt le gt ge),
//                              contains, matches / ~ (regular expression, "(?i)" prefix
//                              for no case), in {V V ..} (V or LOW..HIGH)
//   PATH == null, PATH != null
//   error, malformed           shorthands: any non-zero error code or a decode error;
//                              a decode error
//   ! not, && and, || or, ( )  not binds tightest, then and, then or
//   request.PATH               the field of the matched request (of a request: its own)
// VALUE: 42, -1, 0x10, 1.5, "text" (\" \\ escapes), or a bare word: an error code
// name (UNKNOWN_TOPIC_OR_PARTITION), a documented code name (STALE_TOPOLOGY), an
// api name (for apiKey), request/response, true/false, or a string.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dissector/output/text_buffer.hpp"
#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire::filter {

struct CompileError {
  std::string expression;
  size_t column = 0;        // 0-based offset into expression
  std::string message;      // "unknown path 'body.grupId'"
  std::string hint;         // more lines: the paths of the named api, or how to find them
  // "MESSAGE\n  EXPR\n  ^ (column N)\nHINT"
  std::string format() const;
};

struct Program;   // the compiled expression (filter.cpp)

class Filter {
 public:
  // A filter that selects every message.
  Filter();
  ~Filter();
  Filter(Filter&&) noexcept;
  Filter& operator=(Filter&&) noexcept;

  static std::optional<Filter> compile(std::string_view expr, const ProgramSet& ps, CompileError& error);

  // Whether the message matches. `request` (and `request_ctx`, for
  // request.frame and the like) is the request a response answers; without
  // it request.* conditions are false on responses. On a request, request.*
  // is the request itself.
  bool match(const Frame& f, const FrameContext& ctx, const Frame* request = nullptr,
             const FrameContext* request_ctx = nullptr) const;
  // True when the expression has request.* conditions on a response's behalf.
  bool uses_request() const;
  const std::string& expression() const;

 private:
  friend class FilterSelector;
  std::unique_ptr<Program> p_;
};

// Runs a filter over a capture in order, keeping what request.* conditions
// need of each request in flight (one bit per such condition, per
// connection, dropped when answered or when the connection ends, at most
// `max_pending` per connection), so that a response can be selected by its
// request without the request's frame.
class FilterSelector {
 public:
  explicit FilterSelector(const Filter& f, size_t max_pending = 4096);
  // Call for every message in capture order, selected or not.
  bool select(const FrameContext& ctx, const Frame& f);
  void connection_end(uint32_t conn_id);
  size_t remembered() const;   // requests held, for tests

 private:
  struct Held { int32_t corr; std::vector<bool> bits; };
  const Filter& f_;
  size_t max_pending_;
  std::unordered_map<uint32_t, std::deque<Held>> pending_;
  std::vector<bool> bits_;
};

// -T fields: values of paths, one line per message (as tshark -T fields -E ...).
struct FieldsFormat {
  std::string separator = "\t";
  std::string aggregator = ",";
  char quote = 0;           // 0, '"' or '\''
  bool header = false;
};
// Parses one -E option ("separator=,", "quote=d", "header=y", "aggregator=/s");
// false with a message.
bool parse_fields_option(std::string_view opt, FieldsFormat& fmt, std::string& error);

class FieldExtractor {
 public:
  FieldExtractor();
  ~FieldExtractor();
  FieldExtractor(FieldExtractor&&) noexcept;
  FieldExtractor& operator=(FieldExtractor&&) noexcept;
  // Compiles the -e paths (no request.* paths); column is into that path.
  static std::optional<FieldExtractor> compile(const std::vector<std::string>& paths, const FieldsFormat& fmt,
                                               const ProgramSet& ps, CompileError& error);
  // The header line (the paths), with a newline.
  void append_header(TextBuffer& out) const;
  // One line for the message, with a newline. Absent and null values are
  // empty; numbers, enums and error codes as numbers; strings raw; bytes in
  // base64 and uuids as -T json writes them; structs as JSON objects; several
  // values (arrays on the way) joined by the aggregator.
  void append_line(TextBuffer& out, const Frame& f, const FrameContext& ctx) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Every path of an api's messages (all versions, both directions), in spec
// order: "body.groupId" ... For error messages and `kwire specs`.
std::vector<std::string> api_paths(const ProgramSet& ps, int16_t api_key, Direction d);

}  // namespace kwire::filter
