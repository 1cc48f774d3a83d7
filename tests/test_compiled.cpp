// The generated struct decoders (decoders.gen.cpp) against the interpreter
// they unroll: for every (api, version, direction) of the release, random
// messages, the same messages cut short and the same messages with bytes
// overwritten decode to the same nodes and the same errors either way.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/generator.hpp"
#include "dissector/protocol/overlays.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"

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

namespace {

// Every message of a capture, as a line per node: what it was read as, its
// errors, and each node's members, with string, bytes and uuid values by
// their bytes (a decompressed value lives in each decoding's own buffer).
class Fingerprints : public FrameHandler {
 public:
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    std::string s = std::to_string(ctx.number) + " " + std::to_string(f.api_key) + " v" +
                    std::to_string(f.api_version) + (f.canonical ? "" : " noncanonical") + "\n";
    for (const auto& e : f.errors) s += "error " + std::to_string(e.offset) + " " + e.reason + "\n";
    for (const Node& n : f.nodes) {
      s += std::to_string(n.desc) + " " + std::to_string(n.offset) + " " + std::to_string(n.length) + " " +
           std::to_string(n.end) + " " + std::to_string(n.parent) + " " + std::to_string(n.aux) + " " +
           std::to_string(n.flags) + " " + std::to_string(static_cast<int>(n.type)) + " " + std::to_string(n.tag) + " ";
      if (n.has_data() && n.v.p) s.append(reinterpret_cast<const char*>(n.v.p), n.type == WireType::Uuid ? 16 : n.aux);
      else if (!n.has_data()) s += std::to_string(n.v.u);
      s += '\n';
    }
    frames.push_back(std::move(s));
  }
  void on_capture_error(const PacketMeta&, const std::string&, const std::string&) override {}
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  std::vector<std::string> frames;
};

}  // namespace

TEST(Compiled, EveryCommittedCaptureDecodesTheSameEitherWay) {
  // Real traffic of Kafka 4.4.0 brokers and clients (captures/MANIFEST.md).
  size_t captures = 0, messages = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KWIRE_SOURCE_DIR) + "/captures")) {
    if (entry.path().extension() != ".pcapng") continue;
    std::vector<std::string> seen[2];
    for (bool compiled : {true, false}) {
      Fingerprints out;
      SessionOptions opts;
      opts.compiled = compiled;
      KafkaSessions sessions(ProgramSet::release(), opts, out);
      CaptureStats stats;
      std::string error;
      ASSERT_TRUE(read_capture_file(entry.path().string(), {}, sessions, stats, error)) << error;
      seen[compiled ? 0 : 1] = std::move(out.frames);
    }
    ASSERT_EQ(seen[0].size(), seen[1].size()) << entry.path();
    for (size_t i = 0; i < seen[0].size(); ++i) ASSERT_EQ(seen[0][i], seen[1][i]) << entry.path() << " message " << i;
    ++captures;
    messages += seen[0].size();
  }
  EXPECT_EQ(captures, 13u);   // every one MANIFEST.md lists at the top of captures/
  EXPECT_GT(messages, 1000u);
}
