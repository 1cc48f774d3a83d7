// The generated struct decoders (decoders.gen.cpp) against the interpreter
// they unroll: for every (api, version, direction) of the release, random
// messages, the same messages cut short and the same messages with bytes
// overwritten decode to the same nodes and the same errors either way.
#include <gtest/gtest.h>

#include <random>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/generator.hpp"
#include "dissector/protocol/overlays.hpp"

using namespace kwire;

namespace {

constexpr int kMessagesPerTriple = 12;

struct Decoders {
  explicit Decoders(const ProgramSet& ps) : compiled(ps), interpreted(ps) { interpreted.set_compiled(false); }
  FrameDecoder compiled, interpreted;
  Frame a, b;

  // Decodes `msg` both ways; false (and a message) when they differ.
  ::testing::AssertionResult same(const MessageProgram& m, std::span<const uint8_t> msg, bool nested) {
    compiled.set_nested(nested);
    interpreted.set_nested(nested);
    if (m.direction == Direction::Request) {
      compiled.decode_request(msg, a);
      interpreted.decode_request(msg, b);
    } else {
      compiled.decode_response(msg, m.api_key, m.version, a);
      interpreted.decode_response(msg, m.api_key, m.version, b);
    }
    std::string why;
    if (same_decoding(a, b, &why)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << why;
  }
};

std::vector<const MessageProgram*> all_programs(const ProgramSet& ps) {
  std::vector<const MessageProgram*> out;
  for (const auto& m : ps.messages())
    if (ps.find(m.api_key, m.version, m.direction) == &m) out.push_back(&m);
  return out;
}

}  // namespace

TEST(Compiled, EveryStructOfTheReleaseHasADecoder) {
  const ProgramSet& ps = ProgramSet::release();
  ASSERT_FALSE(ps.compiled().empty());
  // Every struct a release message reaches, headers included, is below the
  // generated ones' count.
  for (const auto& m : ps.messages())
    EXPECT_LT(static_cast<size_t>(ps.field(m.root).sub), ps.compiled().size()) << m.spec_name << " v" << m.version;
  EXPECT_LT(static_cast<size_t>(ps.field(ps.request_header(2)).sub), ps.compiled().size());
  EXPECT_LT(static_cast<size_t>(ps.field(ps.response_header(1)).sub), ps.compiled().size());
  // A set built from other tables has none: its indices mean other structs.
  EXPECT_TRUE(ProgramSet().compiled().empty());
}

TEST(Compiled, SameNodesAndErrorsAsTheInterpreter) {
  const ProgramSet& ps = ProgramSet::release();
  Decoders d(ps);
  FrameEncoder encoder(ps);
  Frame generated;
  std::vector<uint8_t> bytes, changed;
  std::string error;
  std::mt19937_64 rng(0x636f6d70696c6564ull);
  size_t whole = 0, failing = 0;
  for (const auto* m : all_programs(ps)) {
    const std::string what = std::string(m->spec_name) + " v" + std::to_string(m->version);
    // Random bytes in an Envelope request's RequestData are no request: read as bytes (test_roundtrip.cpp).
    const bool nested = !(m->api_key == 58 && m->direction == Direction::Request);
    GeneratorOptions opts;
    opts.max_array = 6;
    MessageGenerator gen(ps, rng(), opts);
    for (int i = 0; i < kMessagesPerTriple; ++i) {
      gen.generate(*m, i, generated);
      bytes.clear();
      ASSERT_TRUE(encoder.encode(generated, bytes, error)) << what << ": " << error;
      ASSERT_TRUE(d.same(*m, bytes, nested)) << what << " #" << i;
      ASSERT_TRUE(d.a.ok()) << what << " #" << i << ": " << d.a.errors.front().reason;
      ++whole;
      // Cut short, the size prefix set to what is left: each read's
      // bounds check fails somewhere.
      for (int cut = 0; cut < 4 && bytes.size() > 8; ++cut) {
        const size_t keep = 8 + rng() % (bytes.size() - 8);
        changed.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
        wire::store_be32(changed.data(), static_cast<uint32_t>(keep - 4));
        ASSERT_TRUE(d.same(*m, changed, nested)) << what << " #" << i << " cut to " << keep;
        failing += !d.a.ok();
      }
      // Bytes overwritten with values that make lengths null, negative,
      // huge or long varints.
      for (int hit = 0; hit < 6 && bytes.size() > 8; ++hit) {
        changed = bytes;
        const size_t at = 8 + rng() % (bytes.size() - 8);
        static constexpr uint8_t kValues[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe};
        changed[at] = kValues[rng() % std::size(kValues)];
        ASSERT_TRUE(d.same(*m, changed, nested)) << what << " #" << i << " byte " << at << " = " << int(changed[at]);
        failing += !d.a.ok();
      }
    }
  }
  EXPECT_EQ(whole, 728u * kMessagesPerTriple);
  // The changed messages exercised the error paths, not only the happy one.
  EXPECT_GT(failing, whole);
}

TEST(Compiled, OverlayStructsAreInterpreted) {
  // An overlay adds structs after the release's: they have no generated
  // decoder and the interpreter reads them, while the release's structs
  // (the headers, and any an overlay message shares) keep theirs.
  const auto names = builtin_overlay_names();
  ASSERT_FALSE(names.empty());
  size_t overlay_messages = 0;
  for (const auto& name : names) {
    ProgramSet ps = ProgramSet::build_release();
    const size_t before = ps.compiled().size();
    ASSERT_TRUE(enable_builtin_overlay(ps, name)) << name;
    EXPECT_EQ(ps.compiled().size(), before) << name;
    Decoders d(ps);
    FrameEncoder encoder(ps);
    Frame generated;
    std::vector<uint8_t> bytes;
    std::string error;
    for (const auto* m : all_programs(ps)) {
      if (!m->overlay) continue;
      EXPECT_GE(static_cast<size_t>(ps.field(m->root).sub), before) << name << " " << m->spec_name;
      MessageGenerator gen(ps, 7 + m->version);
      for (int i = 0; i < 4; ++i) {
        gen.generate(*m, i, generated);
        bytes.clear();
        ASSERT_TRUE(encoder.encode(generated, bytes, error)) << error;
        ASSERT_TRUE(d.same(*m, bytes, true)) << name << " " << m->spec_name << " v" << m->version;
        ASSERT_TRUE(d.a.ok()) << d.a.errors.front().reason;
      }
      ++overlay_messages;
    }
  }
  EXPECT_GT(overlay_messages, 0u);
}
