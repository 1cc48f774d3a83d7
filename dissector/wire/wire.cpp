#include "dissector/wire/wire.hpp"

#include <cstring>

#include <string>

namespace kwire::wire {

namespace {

// Two output characters per 12 bits of input.
struct Pairs {
  char c[4096][2];
};
constexpr Pairs make_pairs(const char* alphabet) {
  Pairs p{};
  for (int i = 0; i < 4096; ++i) {
    p.c[i][0] = alphabet[i >> 6];
    p.c[i][1] = alphabet[i & 63];
  }
  return p;
}

char* encode64(char* o, std::span<const uint8_t> d, const char* alphabet, const Pairs& pairs, bool pad) {
  size_t i = 0;
  // Six bytes at a time (from an eight-byte load) into eight characters.
  for (; i + 8 <= d.size(); i += 6) {
    const uint64_t v = load_be64(d.data() + i);
    std::memcpy(o, pairs.c[(v >> 52) & 0xfff], 2);
    std::memcpy(o + 2, pairs.c[(v >> 40) & 0xfff], 2);
    std::memcpy(o + 4, pairs.c[(v >> 28) & 0xfff], 2);
    std::memcpy(o + 6, pairs.c[(v >> 16) & 0xfff], 2);
    o += 8;
  }
  for (; i + 3 <= d.size(); i += 3) {
    uint32_t v = (uint32_t(d[i]) << 16) | (uint32_t(d[i + 1]) << 8) | d[i + 2];
    std::memcpy(o, pairs.c[v >> 12], 2);
    std::memcpy(o + 2, pairs.c[v & 0xfff], 2);
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

}  // namespace

static const char* const kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char* const kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static constexpr Pairs kStdPairs = make_pairs("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
static constexpr Pairs kUrlPairs = make_pairs("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

char* base64_to(char* out, std::span<const uint8_t> data) { return encode64(out, data, kStd, kStdPairs, true); }
char* uuid_to(char* out, const uint8_t* p16) { return encode64(out, {p16, 16}, kUrl, kUrlPairs, false); }

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
