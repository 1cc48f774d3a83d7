// FrameEncoder: the mirror of FrameDecoder. Writes a Frame's header and body
// back to wire bytes following the same programs, so decode-then-encode
// reproduces the input byte for byte (unknown tagged fields included). Replay
// edits node values in a decoded Frame and encodes it again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire {

class FrameEncoder {
 public:
  explicit FrameEncoder(const ProgramSet& ps) : ps_(ps) {}
  // Appends the message (size prefix included) to `out`. Returns false with
  // `error` set when the Frame does not follow its program (a bug in whoever
  // built it) or is incomplete (a frame that failed to decode).
  bool encode(const Frame& f, std::vector<uint8_t>& out, std::string& error) const;

 private:
  const ProgramSet& ps_;
};

}  // namespace kwire
