// FrameDecoder: runs the generated programs over one Kafka message and fills
// a Frame. Errors are values: a malformed message yields a Frame with
// `errors` set (offset and reason) and every field decoded before the problem.
#pragma once

#include <cstdint>
#include <span>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire {

class FrameDecoder {
 public:
  explicit FrameDecoder(const ProgramSet& ps) : ps_(ps) {}

  // `message` is one whole Kafka message including its 4-byte size prefix.
  void decode_request(std::span<const uint8_t> message, Frame& out) const;
  void decode_response(std::span<const uint8_t> message, int16_t api_key, int16_t api_version,
                       Frame& out) const;
  // Reads only what identifies a request: api key, version, correlation id.
  struct RequestId { int16_t api_key; int16_t api_version; int32_t correlation_id; };
  static bool peek_request(std::span<const uint8_t> message, RequestId& id);

  const ProgramSet& programs() const { return ps_; }

 private:
  const ProgramSet& ps_;
};

}  // namespace kwire
