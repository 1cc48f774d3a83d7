// FrameDecoder: runs the generated programs over one Kafka message and fills
// a Frame. Errors are values: a malformed message yields a Frame with
// `errors` set (offset and reason) and every field decoded before the problem.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "wire/wire.hpp"

namespace kwire {

// The request header fields that identify a request, read from a message
// (size prefix included): api key, version, correlation id and the length of
// the client id, which every request header version carries as a classic
// nullable string.
struct RequestHead {
  int32_t size = 0;
  int16_t api_key = -1;
  int16_t api_version = -1;
  int32_t correlation_id = 0;
  int16_t client_id_length = -1;
};
constexpr size_t kRequestHeadBytes = 14;
// False when fewer than kRequestHeadBytes are given. The decoder reads
// requests through it; session framing uses it to recognise them.
inline bool read_request_head(std::span<const uint8_t> b, RequestHead& h) {
  if (b.size() < kRequestHeadBytes) return false;
  h.size = static_cast<int32_t>(wire::load_be32(b.data()));
  h.api_key = static_cast<int16_t>(wire::load_be16(b.data() + 4));
  h.api_version = static_cast<int16_t>(wire::load_be16(b.data() + 6));
  h.correlation_id = static_cast<int32_t>(wire::load_be32(b.data() + 8));
  h.client_id_length = static_cast<int16_t>(wire::load_be16(b.data() + 12));
  return true;
}


// Payloads inside payloads. Some bytes fields carry serialized Kafka
// structures, which the decoder decodes into child nodes of the bytes node
// (Node flag kNested):
//   Envelope (58) request RequestData: a whole request (header, body) a
//     broker forwards to the controller; RequestPrincipal: DefaultPrincipalData.
//   Envelope response ResponseData: the response to the enveloped request
//     (header, body), read with the api key and version of that request.
//   JoinGroup (11) Protocols[].Metadata, response Members[].Metadata:
//     ConsumerProtocolSubscription; SyncGroup (14) Assignments[].Assignment,
//     response Assignment: ConsumerProtocolAssignment. Only when the group's
//     protocol type is "consumer": the message's own ProtocolType field, or
//     for a response without one, its request's. A SyncGroup response's
//     empty Assignment (a failed SyncGroup's) carries none.
//   DescribeGroups (15) response Groups[].Members[].MemberMetadata and
//     MemberAssignment: the same, by the group's own ProtocolType; empty
//     ones (a group that is not Stable) carry none.
// Data structs are version-prefixed (int16, then the struct at that
// version): node layout bytes -> struct (desc: the data spec's root) ->
// Version (kDescNestedVersion), the fields, and TrailingBytes
// (kDescNestedTrailing) when bytes follow the struct. A consumer protocol
// version newer than the specs know is read as the newest known one, the
// rest ignored, as Kafka's ConsumerProtocol does.
// A payload that does not decode adds an error to the frame (offset into the
// outer message) and sets kNestedFailed on the bytes node; the outer message
// goes on decoding. The bytes stay the field's value: the encoder writes them
// as they came, whatever the nested nodes say.
//
// The bytes fields that carry payloads, and what each carries: see
// NestedPayload and nested_payloads() in program.hpp.

// What a response's decoding needs from its request beyond api key and
// version: the layouts of nested payloads the request decides. A request
// can need it too: a SyncGroup before v5 names no protocol type, which the
// session learns from the group's JoinGroup.
struct ResponseHint {
  bool consumer_protocol = false;  // JoinGroup/SyncGroup: the request's ProtocolType is "consumer"
  int16_t inner_api_key = -1;      // Envelope: api key and version of the enveloped request
  int16_t inner_api_version = -1;
};
// The hint for the response to `request` (a decoded request frame).
ResponseHint response_hint(const ProgramSet& ps, const Frame& request);

// Which groups are consumer groups, learnt from their JoinGroup requests in
// capture order (on any connection): a SyncGroup before v5 names no
// protocol type, and its assignments are consumer protocol payloads only in
// such groups. `kwire decode`'s sessions and the Wireshark plugin keep one.
// Bounded: forgotten wholesale past kMaxGroups.
class GroupProtocols {
 public:
  // After a request is decoded into `request` with `ps`: learns from a JoinGroup, and returns
  // the hint for its response; for a SyncGroup before v5, also the one it is
  // to be decoded again with (redecode()).
  ResponseHint learn(const ProgramSet& ps, const Frame& request);
  // Whether `request`, decoded without a hint, is to be decoded again with `hint`.
  static bool redecode(const Frame& request, const ResponseHint& hint) {
    return request.api_key == 14 && request.api_version < 5 && hint.consumer_protocol;
  }
  void clear() { consumer_.clear(); }

 private:
  static constexpr size_t kMaxGroups = 1 << 16;
  std::unordered_map<std::string, bool> consumer_;   // group id -> protocol type is "consumer"
};

class FrameDecoder {
 public:
  explicit FrameDecoder(const ProgramSet& ps) : ps_(ps) {}

  // `message` is one whole Kafka message including its 4-byte size prefix.
  // `cut`: the capture ends inside the message; what is there is decoded and
  // the frame says it was truncated.
  // `hint`: what the request's own fields do not say about its nested
  // payloads (a SyncGroup before v5 of a consumer group: consumer_protocol).
  void decode_request(std::span<const uint8_t> message, Frame& out, bool cut = false,
                      const ResponseHint* hint = nullptr) const;
  void decode_response(std::span<const uint8_t> message, int16_t api_key, int16_t api_version,
                       Frame& out, bool cut = false, const ResponseHint& hint = {}) const;
  // Whether payloads inside bytes fields are decoded (on by default). Replay
  // turns it off: it sends those bytes as recorded and edits no value in them.
  void set_nested(bool on) { nested_ = on; }
  // Whether the release's structs are read by their generated decoders (on
  // by default) or all by the interpreter, which reads the same nodes and
  // errors; tests compare the two.
  void set_compiled(bool on) { compiled_ = on; }
  // Reads only what identifies a request: api key, version, correlation id.
  struct RequestId { int16_t api_key; int16_t api_version; int32_t correlation_id; };
  static bool peek_request(std::span<const uint8_t> message, RequestId& id);

  const ProgramSet& programs() const { return ps_; }

 private:
  const ProgramSet& ps_;
  bool nested_ = true;
  bool compiled_ = true;
};

}  // namespace kwire
