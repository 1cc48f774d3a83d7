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
