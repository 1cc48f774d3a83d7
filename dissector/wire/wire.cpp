#include "dissector/wire/wire.hpp"

#include <string>

namespace kwire::wire {

static std::string encode64(std::span<const uint8_t> d, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((d.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= d.size(); i += 3) {
    uint32_t v = (uint32_t(d[i]) << 16) | (uint32_t(d[i + 1]) << 8) | d[i + 2];
    for (int k = 18; k >= 0; k -= 6) out += alphabet[(v >> k) & 63];
  }
  size_t rest = d.size() - i;
  if (rest) {
    uint32_t v = uint32_t(d[i]) << 16;
    if (rest == 2) v |= uint32_t(d[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

std::string uuid_to_string(const uint8_t* p16) {
  return encode64({p16, 16}, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false);
}

std::string base64(std::span<const uint8_t> data) {
  return encode64(data, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true);
}

}  // namespace kwire::wire
