// json_string: what -T json writes for a string's bytes. Only well-formed
// UTF-8 passes through (RFC 3629); every byte of anything else becomes
// U+FFFD, so that the line is valid JSON and valid UTF-8 for any input.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dissector/output/output.hpp"
#include "wire/wire.hpp"

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

// Long strings go eight bytes at a time: each kind of byte that needs care,
// at every place in a 24-byte string, comes out as it would alone.
TEST(JsonString, EveryPlaceInALongString) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"", "\\\""}, {"\\", "\\\\"}, {"\x1f", "\\u001f"}, {std::string(1, '\0'), "\\u0000"},
      {"\x7f", "\x7f"}, {"\xc3\xa9", "\xc3\xa9"}, {"\xff", R}, {" ", " "}, {"~", "~"}};
  for (const auto& [in, want] : cases) {
    for (size_t k = 0; k + in.size() <= 24; ++k) {
      const std::string head(k, 'a'), tail(24 - k - in.size(), 'z');
      EXPECT_EQ(js(head + in + tail), "\"" + head + want + tail + "\"") << "at " << k;
    }
  }
  EXPECT_EQ(js(std::string(40, 'q')), "\"" + std::string(40, 'q') + "\"");
  EXPECT_EQ(js(std::string(20, '\n')).size(), 2 + 20 * 6u);
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

// Bytes and uuids as -T json writes them: RFC 4648 base64 (its section 10
// test vectors), and longer inputs against Python's base64.b64encode.
TEST(Base64, Rfc4648VectorsAndLongerRuns) {
  auto b64 = [](std::string_view s) {
    return wire::base64({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  // python3 -c "import base64; print(base64.b64encode(b'The quick brown fox jumps over the lazy dog').decode())"
  EXPECT_EQ(b64("The quick brown fox jumps over the lazy dog"),
            "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==");
  // python3 -c "import base64; print(base64.b64encode(bytes(range(256))).decode())"
  std::vector<uint8_t> all(256);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(wire::base64(all),
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xN"
            "Tk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqb"
            "nJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp"
            "6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==");
  // Every length is a prefix of the whole run's text, up to its padding
  // (lengths from 16 on take the 12-byte steps, each tail length after them).
  for (size_t n = 0; n <= all.size(); ++n) {
    std::string whole = wire::base64(all), part = wire::base64({all.data(), n});
    ASSERT_EQ(part.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(part.substr(0, n / 3 * 4), whole.substr(0, n / 3 * 4)) << n;
  }
  // 12 to 15 bytes left take one more 12-byte step when the 16 bytes from
  // them are on one page, the scalar code when they reach into the next:
  // every placement up to 20 bytes before a page's end reads the same text.
  {
    auto* page = static_cast<uint8_t*>(std::aligned_alloc(4096, 8192));
    ASSERT_NE(page, nullptr);
    for (size_t n = 12; n <= 40; ++n)
      for (size_t gap = 0; gap <= 20; ++gap) {
        uint8_t* at = page + 4096 - n - gap;
        std::memcpy(at, all.data(), n);
        const std::string whole = wire::base64(all), part = wire::base64({at, n});
        ASSERT_EQ(part.size(), (n + 2) / 3 * 4);
        EXPECT_EQ(part.substr(0, n / 3 * 4), whole.substr(0, n / 3 * 4)) << n << " bytes, " << gap << " before the page end";
      }
    std::free(page);
  }
  // A uuid: URL-safe, no padding (Kafka's Uuid.toString), 22 characters.
  uint8_t u[16];
  for (int i = 0; i < 16; ++i) u[i] = static_cast<uint8_t>(0xf0 + i);
  // python3 -c "import base64; print(base64.urlsafe_b64encode(bytes(range(0xf0, 0x100))).decode().rstrip('='))"
  EXPECT_EQ(wire::uuid_to_string(u), "8PHy8_T19vf4-fr7_P3-_w");
}

// Integers as the views write them: every digit count, both signs, the
// int64 limits (2^63 - 1 and -2^63), and never more than 20 bytes written.
TEST(WriteInt, EveryLengthAndTheLimits) {
  const std::pair<int64_t, const char*> cases[] = {
      {0, "0"}, {7, "7"}, {-7, "-7"}, {10, "10"}, {-10, "-10"}, {99, "99"}, {100, "100"}, {-999, "-999"},
      {1000, "1000"}, {9999, "9999"}, {10000, "10000"}, {123456, "123456"}, {-1234567, "-1234567"},
      {99999999, "99999999"}, {100000000, "100000000"}, {1000000000000, "1000000000000"},
      {999999999999999999, "999999999999999999"}, {1000000000000000000, "1000000000000000000"},
      {INT64_MAX, "9223372036854775807"}, {INT64_MIN, "-9223372036854775808"}};
  for (const auto& [v, text] : cases) {
    char buf[32];
    std::memset(buf, '#', sizeof buf);
    char* end = write_int(buf, v);
    EXPECT_EQ(std::string(buf, end), text);
    EXPECT_EQ(std::string(end, buf + sizeof buf), std::string(buf + sizeof buf - end, '#')) << text;
  }
}
