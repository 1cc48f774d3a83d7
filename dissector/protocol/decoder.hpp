// FrameDecoder: runs the generated programs over one Kafka message and fills
// a Frame. Errors are values: a malformed message yields a Frame with
// `errors` set (offset and reason) and every field decoded before the problem.
#pragma once

#include <cstdint>
#include <span>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/wire/wire.hpp"

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


class FrameDecoder {
 public:
  explicit FrameDecoder(const ProgramSet& ps) : ps_(ps) {}

  // `message` is one whole Kafka message including its 4-byte size prefix.
  // `cut`: the capture ends inside the message; what is there is decoded and
  // the frame says it was truncated.
  void decode_request(std::span<const uint8_t> message, Frame& out, bool cut = false) const;
  void decode_response(std::span<const uint8_t> message, int16_t api_key, int16_t api_version,
                       Frame& out, bool cut = false) const;
  // Reads only what identifies a request: api key, version, correlation id.
  struct RequestId { int16_t api_key; int16_t api_version; int32_t correlation_id; };
  static bool peek_request(std::span<const uint8_t> message, RequestId& id);

  const ProgramSet& programs() const { return ps_; }

 private:
  const ProgramSet& ps_;
};

}  // namespace kwire
