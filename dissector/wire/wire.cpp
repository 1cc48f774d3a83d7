#include "dissector/wire/wire.hpp"

#include <string>

namespace kwire::wire {

static char* encode64(char* o, std::span<const uint8_t> d, const char* alphabet, bool pad) {
  size_t i = 0;
  for (; i + 3 <= d.size(); i += 3) {
    uint32_t v = (uint32_t(d[i]) << 16) | (uint32_t(d[i + 1]) << 8) | d[i + 2];
    o[0] = alphabet[(v >> 18) & 63];
    o[1] = alphabet[(v >> 12) & 63];
    o[2] = alphabet[(v >> 6) & 63];
    o[3] = alphabet[v & 63];
    o += 4;
  }
  size_t rest = d.size() - i;
  if (rest) {
    uint32_t v = uint32_t(d[i]) << 16;
    if (rest == 2) v |= uint32_t(d[i + 1]) << 8;
    *o++ = alphabet[(v >> 18) & 63];
    *o++ = alphabet[(v >> 12) & 63];
    if (rest == 2) *o++ = alphabet[(v >> 6) & 63];
    else if (pad) *o++ = '=';
    if (pad) *o++ = '=';
  }
  return o;
}

static const char* const kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char* const kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char* base64_to(char* out, std::span<const uint8_t> data) { return encode64(out, data, kStd, true); }
char* uuid_to(char* out, const uint8_t* p16) { return encode64(out, {p16, 16}, kUrl, false); }

std::string uuid_to_string(const uint8_t* p16) {
  char b[kUuidTextSize];
  return std::string(b, uuid_to(b, p16));
}

std::string base64(std::span<const uint8_t> data) {
  std::string out(base64_size(data.size()), '\0');
  base64_to(out.data(), data);
  return out;
}
}  // namespace kwire::wire
