// Frame decode, for every api and version: the input is
//   api key (int16) | api version (int16) | rest
// and is decoded twice: as a request (the whole input is the message after
// its size prefix: the api key and version open the request header) and as
// a response of that api key and version (`rest` is the message after its
// size prefix: correlation id, header, body). Every decoded frame, malformed
// or not, is rendered (summary, field tree, JSON); one that decoded cleanly
// is encoded again (see check_round_trip), and every frame is decoded again
// by the interpreter, which must read what the generated decoders read.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dissector/output/output.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"

namespace {

using namespace kwire;

std::vector<uint8_t> with_size(const uint8_t* data, size_t size) {
  std::vector<uint8_t> m(4 + size);
  m[0] = uint8_t(size >> 24); m[1] = uint8_t(size >> 16); m[2] = uint8_t(size >> 8); m[3] = uint8_t(size);
  std::copy(data, data + size, m.begin() + 4);
  return m;
}

void render(const ProgramSet& ps, const Frame& f) {
  static TextBuffer out;
  out.clear();
  FrameContext ctx;
  append_summary(out, ps, f, &ctx);
  write_tree(out, ps, f, 2);
  write_json(out, ps, f, ctx);
}

// Two tapes hold the same message: same shape, same values.
bool same_values(const Frame& a, const Frame& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& x = a.nodes[i];
    const Node& y = b.nodes[i];
    if (x.desc != y.desc || x.type != y.type || x.end != y.end || x.is_null() != y.is_null() || x.tag != y.tag)
      return false;
    switch (x.type) {
      case WireType::String: case WireType::Bytes: case WireType::Records: case WireType::Uuid:
      case WireType::VarBytes: case WireType::VarString:
        if (!x.is_null() && x.str() != y.str()) return false;
        break;
      case WireType::Struct: break;
      case WireType::Array: if (x.aux != y.aux) return false; break;
      case WireType::Bool: if ((x.v.i != 0) != (y.v.i != 0)) return false; break;
      default: if (x.v.u != y.v.u) return false;
    }
  }
  return true;
}

// A frame that decoded cleanly encodes again. A canonical one (minimal
// varints) encodes to exactly the input; any other encodes to a fixed point
// that decodes to the same values. KWIRE_FUZZ_EXACT=1 demands the input
// back byte for byte in every case.
void check_round_trip(const ProgramSet& ps, const Frame& f, const std::vector<uint8_t>& message, const char* what) {
  if (!f.ok()) return;
  static const bool exact = [] { const char* e = std::getenv("KWIRE_FUZZ_EXACT"); return e && *e == '1'; }();
  static FrameEncoder encoder(ps);
  static FrameDecoder decoder(ps);
  static Frame again_frame;
  static std::vector<uint8_t> again, third;
  static std::string error;
  again.clear();
  if (!encoder.encode(f, again, error)) {
    std::fprintf(stderr, "%s %d v%d: decoded cleanly but does not encode: %s\n", what, f.api_key, f.api_version,
                 error.c_str());
    std::abort();
  }
  if (again == message) return;
  size_t i = 0;
  while (i < again.size() && i < message.size() && again[i] == message[i]) ++i;
  if (exact || f.canonical) {
    std::fprintf(stderr, "%s %d v%d: encode(decode(x)) != x: first difference at byte %zu of %zu/%zu\n", what,
                 f.api_key, f.api_version, i, message.size(), again.size());
    std::abort();
  }
  if (f.direction == Direction::Request) decoder.decode_request(again, again_frame);
  else decoder.decode_response(again, f.api_key, f.api_version, again_frame);
  third.clear();
  if (!again_frame.ok() || !same_values(f, again_frame) || !encoder.encode(again_frame, third, error) || third != again) {
    std::fprintf(stderr, "%s %d v%d: encode(decode(x)) does not decode to the same message (input differs at byte %zu)\n",
                 what, f.api_key, f.api_version, i);
    std::abort();
  }
}

// The interpreter reads the same nodes and errors as the generated decoders.
void check_interpreted(const FrameDecoder& interpreter, const Frame& f, std::span<const uint8_t> message,
                       int16_t api, int16_t version, const char* what) {
  static Frame again;
  if (f.direction == Direction::Request) interpreter.decode_request(message, again);
  else interpreter.decode_response(message, api, version, again);
  std::string why;
  if (!same_decoding(f, again, &why)) {
    std::fprintf(stderr, "%s %d v%d: the generated decoders and the interpreter differ: %s\n", what, f.api_key,
                 f.api_version, why.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ProgramSet& ps = ProgramSet::release();
  static FrameDecoder decoder(ps);
  static FrameDecoder interpreter = [] {
    FrameDecoder d(ps);
    d.set_compiled(false);
    return d;
  }();
  static Frame frame;
  if (size < 4) return 0;
  const int16_t api = static_cast<int16_t>((data[0] << 8) | data[1]);
  const int16_t version = static_cast<int16_t>((data[2] << 8) | data[3]);

  std::vector<uint8_t> request = with_size(data, size);
  decoder.decode_request(request, frame);
  check_interpreted(interpreter, frame, request, 0, 0, "request");
  render(ps, frame);
  check_round_trip(ps, frame, request, "request");

  std::vector<uint8_t> response = with_size(data + 4, size - 4);
  decoder.decode_response(response, api, version, frame);
  check_interpreted(interpreter, frame, response, api, version, "response");
  render(ps, frame);
  check_round_trip(ps, frame, response, "response");
  return 0;
}
