// Lua 5.4 hooks of `kwire replay --script FILE.lua`: a script sees each
// recorded request before it is sent (and may edit or drop it) and each live
// response next to the recorded one (and may add expectations on it).
//
// What a script sees. A message is a table
//   {apiKey, apiName, apiVersion, correlationId, direction = "request"|"response",
//    header = {...}, body = {...}}
// whose header and body use the field names of `kwire decode -T json`
// (Kafka's JSON converter names) and its value conventions:
//   ints, bools       Lua integers (int64 stays a 64-bit integer) and booleans
//   float64           Lua floats
//   strings           Lua strings (the bytes as sent)
//   uuids             their text form (22 characters of URL-safe base64)
//   bytes             standard base64 with padding
//   null              kwire.null (a null field reads as kwire.null, never nil)
//   sensitive fields  the string "<redacted>" (as in the JSON output)
//   unknown tagged    `_unknownTaggedFields`: a fresh table of {tag, data}
//                     copied on each read
// A tagged field absent from the message, or a name the message does not
// have, reads as nil. Structs and arrays are proxies onto the decoded
// message, built only when read, so a hook that looks at nothing costs a few
// allocations per message: index them, assign to them, take # of arrays, and
// walk them with ipairs/pairs; table.concat and table.sort work on them,
// table.insert and table.remove fail (elements cannot be added or removed).
// type() calls them "userdata"; rawget, rawset and next do not see their
// fields. Arrays are 1-based. A proxy is only valid during the hook call that
// handed it out: kept in a global and used in a later call, it is an error.
//
// Records fields (Produce and Fetch data) read, like the JSON, as arrays of
// record batches (baseOffset, ..., records = {length, attributes, ...,
// key, value, headers}) and legacy message sets; they are re-sent as
// recorded, so any assignment inside them, or to the records field, is an
// error.
//
// Edits (on_request only). Assigning to a scalar field of msg.header or
// msg.body writes the new value into the Frame at once; the assignment fails,
// with the script's FILE:LINE and the field's JSON path ("body.topics[0].name",
// 0-based like kwire.expect paths), when the value has the wrong Lua type, an
// integer is out of the field's range (or a float has a fraction), a string is
// longer than 32767 bytes, a uuid or base64 text is malformed, the field is not
// nullable and the value is kwire.null, the field is sensitive, inside
// records, header.requestApiKey or header.requestApiVersion (they decide the
// body's layout), a tagged field absent from the message, a name the message
// does not have, or an array index past the end (elements cannot be added or
// removed). A nullable array or struct may be set to kwire.null (its
// contents are then not sent); any other assignment to an array or struct is
// an error: edit its fields instead (a nulled one keeps its nodes in the
// tape; the encoder skips them). Editing header.correlationId also sets
// Frame::correlation_id. Edited nodes keep the offset and length of the
// recorded bytes: FrameEncoder writes the result. When the hook fails, every
// edit it made is undone.
// The other fields of msg (apiKey, direction, ...) are copies: changing
// them has no effect.
//
// Responses (on_response) are read-only: assignments are ignored.
//
// The environment: all of Lua's standard libraries except os.execute,
// io.popen and os.exit; `print` writes like kwire.log, to stderr (stdout is
// replay's). This is no security boundary: a script can read and write files
// (io.open, os.remove, require) with replay's rights. Plus the table `kwire`:
//   kwire.null              the null value
//   kwire.log(...)          writes "script: " and its arguments (tostring,
//                           tab-separated) as one line to stderr
//   kwire.expect(path, v)   on_response only: the live response must have v at
//                           path. v is an integer (written in decimal), a
//                           float (as `kwire decode -T json` writes float64:
//                           "1.5", "2.0"; so use integers for integer fields),
//                           a boolean ("true"/"false"), a string (its content)
//                           or kwire.null ("null").
// The hooks: on_request(msg, ctx) and on_response(live, recorded, ctx), where
// ctx = {frame = packet number in the capture, connection = "a:p->b:p"}.
// on_request returning false (exactly false) drops the request; anything else
// sends it. The hooks are the functions the globals named so when the file
// had run. The file is text Lua (no precompiled chunks). A Script is one Lua
// state: one hook runs at a time, on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

// An expectation on a live response: the value at `path` (JSON names of `kwire decode -T json`,
// "body.errorCode", "body.results[0].errorCode") must equal `value`, written as text:
// a number in decimal, true/false, null, or a string's content (uuids in their text form).
struct Expectation {
  std::string path;
  std::string value;
};

struct HookContext {
  uint64_t frame = 0;          // packet number of the recorded message in the capture
  std::string connection;      // "127.0.0.1:51234->127.0.0.1:9092" as recorded
};

class Script {
 public:
  ~Script();
  // Loads FILE (a Lua 5.4 chunk defining global functions on_request and/or on_response).
  // Null with `error` set ("FILE:LINE: message") when it cannot be loaded or defines neither.
  // `ps` must outlive the Script.
  static std::unique_ptr<Script> load(const std::string& file, const ProgramSet& ps, std::string& error);
  bool has_on_request() const;
  bool has_on_response() const;
  // Runs on_request(msg, ctx); its edits are written into `frame` (see above).
  // The hook returning false means: do not send this request -> skip = true.
  // False with `error` on a Lua runtime error or an edit that cannot be
  // applied ("FILE:LINE: body.x: why"); `frame` is then as it came in.
  bool on_request(Frame& frame, const HookContext& ctx, bool& skip, std::string& error);
  // Runs on_response(live, recorded, ctx); the expectations it adds with
  // kwire.expect are appended to `add` (none when it fails).
  bool on_response(const Frame& live, const Frame& recorded, const HookContext& ctx,
                   std::vector<Expectation>& add, std::string& error);

 private:
  struct Impl;
  explicit Script(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::replay
