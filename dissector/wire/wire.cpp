#include "dissector/wire/wire.hpp"

#include <string>

namespace kwire::wire {

static void encode64(std::string& out, std::span<const uint8_t> d, const char* alphabet, bool pad) {
  size_t start = out.size();
  out.resize(start + (d.size() + 2) / 3 * 4);
  char* o = out.data() + start;
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
    *o++ = rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  if (!pad) out.resize(static_cast<size_t>(o - out.data()) - (rest ? 3 - rest : 0));
}

static const char* const kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char* const kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string uuid_to_string(const uint8_t* p16) {
  std::string out;
  encode64(out, {p16, 16}, kUrl, false);
  return out;
}

std::string base64(std::span<const uint8_t> data) {
  std::string out;
  encode64(out, data, kStd, true);
  return out;
}

void append_base64(std::string& out, std::span<const uint8_t> data) { encode64(out, data, kStd, true); }

}  // namespace kwire::wire
