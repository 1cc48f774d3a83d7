// json_string: what -T json writes for a string's bytes. Only well-formed
// UTF-8 passes through (RFC 3629); every byte of anything else becomes
// U+FFFD, so that the line is valid JSON and valid UTF-8 for any input.
#include <gtest/gtest.h>

#include "dissector/output/output.hpp"

using namespace kwire;

namespace {
std::string js(std::string_view s) {
  TextBuffer out;
  json_string(out, s);
  return std::string(out.data(), out.size());
}
const std::string R = "\xef\xbf\xbd";  // U+FFFD
}  // namespace

TEST(JsonString, WellFormedUtf8AndEscapes) {
  EXPECT_EQ(js("orders"), "\"orders\"");
  EXPECT_EQ(js("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
  EXPECT_EQ(js("\xc3\xa9\xe4\xb8\xad\xf0\x9d\x84\x9e"), "\"\xc3\xa9\xe4\xb8\xad\xf0\x9d\x84\x9e\"");  // é 中 𝄞
  EXPECT_EQ(js("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF, the last code point
}

TEST(JsonString, IllFormedSequencesBecomeReplacementCharacters) {
  EXPECT_EQ(js("\xc0\xaf"), "\"" + R + R + "\"");              // overlong '/'
  EXPECT_EQ(js("\xe0\x80\xaf"), "\"" + R + R + R + "\"");      // overlong, three bytes
  EXPECT_EQ(js("\xed\xa0\x80"), "\"" + R + R + R + "\"");      // surrogate U+D800
  EXPECT_EQ(js("\xf4\x90\x80\x80"), "\"" + R + R + R + R + "\"");  // past U+10FFFF
  EXPECT_EQ(js("x\xe2\x82"), "\"x" + R + R + "\"");            // cut short
  EXPECT_EQ(js("\x80y"), "\"" + R + "y\"");                    // a lone continuation byte
}

// printable_text: whether -V shows a short bytes value as text next to its
// length. Text is well-formed UTF-8 without C0/C1 control characters.
TEST(PrintableText, Utf8TextYesControlsAndIllFormedNo) {
  EXPECT_TRUE(printable_text("order-42"));
  EXPECT_TRUE(printable_text("Gr\xc3\xbc\xc3\x9f" "e"));             // Grüße
  EXPECT_TRUE(printable_text("\xe6\xb3\xa8\xe6\x96\x87"));           // 注文
  EXPECT_TRUE(printable_text("\xf0\x9f\x9a\x80"));                   // U+1F680
  EXPECT_TRUE(printable_text(""));
  EXPECT_FALSE(printable_text("a\tb"));                              // C0 control
  EXPECT_FALSE(printable_text("a\x7f"));                             // DEL
  EXPECT_FALSE(printable_text("\xc2\x85"));                          // U+0085, a C1 control
  EXPECT_FALSE(printable_text("\xc3"));                              // cut short
  EXPECT_FALSE(printable_text("\xed\xa0\x80"));                      // surrogate
  EXPECT_FALSE(printable_text(std::string_view("\x00\x01", 2)));     // binary
}

#include "dissector/protocol/decoder.hpp"
#include "tests/test_support.hpp"

// In the -V tree, a short bytes field that is UTF-8 text beyond ASCII gets
// its preview, like ASCII text does; binary bytes get only their length.
TEST(PrintableText, TreeShowsUtf8BytesAsText) {
  ProgramSet ps = ProgramSet::release();
  for (const auto& [meta, preview] : std::vector<std::pair<std::string, bool>>{
           {"Gr\xc3\xbc\xc3\x9f" "e", true}, {std::string("\x00\x01\xff", 3), false}}) {
    // JoinGroup v0 request (header v1): GroupId, SessionTimeoutMs, MemberId,
    // ProtocolType, Protocols [Name, Metadata].
    test::Bytes b;
    b.i16(11).i16(0).i32(1).str("kwire-test");
    b.str("g").i32(10000).str("").str("connect").i32(1).str("default").i32(static_cast<int64_t>(meta.size())).raw(meta);
    const std::vector<uint8_t> msg = b.message();
    Frame f;
    FrameDecoder(ps).decode_request(msg, f);
    ASSERT_TRUE(f.ok());
    TextBuffer out;
    write_tree(out, ps, f, 0);
    const std::string tree(out.data(), out.size());
    const std::string line = std::to_string(meta.size()) + " bytes";
    EXPECT_NE(tree.find(line + (preview ? " \"" + meta + "\"\n" : "\n")), std::string::npos) << tree;
  }
}
