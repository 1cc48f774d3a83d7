// The spec loader: overlays come from users (--spec-dir), so any text must
// either be rejected with errors or load, compile and run. The input is one
// spec file; a spec that parses is compiled with SpecCompiler as an overlay,
// added to a ProgramSet over the release, and each of its message versions
// gets a generated message that is encoded, decoded and rendered.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/codegen/compiler.hpp"
#include "dissector/output/output.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/generated.hpp"
#include "dissector/protocol/generator.hpp"
#include "dissector/spec/spec_model.hpp"

using namespace kwire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<spec::SpecError> errors;
  auto m = spec::parse_spec(text, "fuzz.json", errors);
  if (!m) return 0;
  auto compiler = std::make_shared<SpecCompiler>("overlay fuzz", true);
  compiler->add(*m);
  if (compiler->tables().messages.empty()) return 0;
  // The release (for the headers and the messages an overlay may replace), then the overlay.
  ProgramSet ps;
  ps.add(generated::release_tables());
  ps.add(compiler->tables(), compiler);

  FrameDecoder decoder(ps);
  FrameEncoder encoder(ps);
  Frame generated, decoded;
  std::vector<uint8_t> bytes;
  std::string error;
  TextBuffer out;
  GeneratorOptions small;
  small.max_array = 2;
  small.max_string = 4;
  MessageGenerator gen(ps, size, small);
  for (const auto& mp : ps.messages()) {
    if (!mp.overlay || ps.find(mp.api_key, mp.version, mp.direction) != &mp) continue;
    gen.generate(mp, 1, generated);
    bytes.clear();
    if (!encoder.encode(generated, bytes, error)) continue;
    if (mp.direction == Direction::Request) decoder.decode_request(bytes, decoded);
    else decoder.decode_response(bytes, mp.api_key, mp.version, decoded);
    out.clear();
    write_tree(out, ps, decoded, 2);
  }
  return 0;
}
