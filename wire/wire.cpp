#include "wire/wire.hpp"

#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// Standard base64 of 12 bytes (the first 12 of `raw`) into 16 characters,
// with SSSE3. Per 3 input bytes a, b, c the shuffle makes the 32-bit lane
// b a c b; two masked 16-bit multiplies move the four 6-bit indices to the
// lane's four bytes; one table lookup turns each index into its character's
// offset from it ('A' - 0 for 0-25, 'a' - 26 for 26-51, '0' - 52 for 52-61,
// then '+' - 62 and '/' - 63).
__attribute__((target("ssse3"), always_inline)) inline __m128i encode12(__m128i raw) {
  const __m128i spread = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
  const __m128i offsets = _mm_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
  const __m128i in = _mm_shuffle_epi8(raw, spread);
  const __m128i hi = _mm_mulhi_epu16(_mm_and_si128(in, _mm_set1_epi32(0x0fc0fc00)), _mm_set1_epi32(0x04000040));
  const __m128i lo = _mm_mullo_epi16(_mm_and_si128(in, _mm_set1_epi32(0x003f03f0)), _mm_set1_epi32(0x01000010));
  const __m128i idx = _mm_or_si128(hi, lo);
  // 0-51 -> 0 (and 0-25 then -> 13), 52-63 -> 1-12.
  __m128i sel = _mm_subs_epu8(idx, _mm_set1_epi8(51));
  sel = _mm_or_si128(sel, _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), idx), _mm_set1_epi8(13)));
  return _mm_add_epi8(idx, _mm_shuffle_epi8(offsets, sel));
}

// `blocks` runs of 12 bytes into 16 characters each; reads 16 bytes for each
// 12 (the caller leaves 4 more readable).
__attribute__((target("ssse3"))) char* encode64_ssse3(char* o, const uint8_t* d, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, d += 12, o += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), encode12(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d))));
  return o;
}

// One more block where 12 to 15 bytes are left: the 16-byte load reads up to
// 4 bytes past the data, which the shuffle does not use. Only where those 16
// bytes are on one page, so that the load cannot fault. The load is written
// in assembly: a sanitizer would take it for a read past the buffer.
[[gnu::always_inline]] inline bool same_page16(const uint8_t* d) {
  return (reinterpret_cast<uintptr_t>(d) & 4095) <= 4096 - 16;
}
__attribute__((target("ssse3"))) char* encode64_ssse3_last(char* o, const uint8_t* d) {
  __m128i raw;
  asm("movdqu %1, %0" : "=x"(raw) : "m"(*reinterpret_cast<const uint8_t(*)[12]>(d)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o), encode12(raw));
  return o + 16;
}
#endif

char* encode64(char* o, std::span<const uint8_t> d, const char* alphabet, const Pairs& pairs, bool pad) {
  size_t i = 0;
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3 && alphabet[62] == '+' && d.size() >= 12) {   // its table is the standard alphabet's
    if (d.size() >= 16) {
      const size_t blocks = (d.size() - 4) / 12;
      o = encode64_ssse3(o, d.data(), blocks);
      i = blocks * 12;
    }
    // Short keys and the tails of values: 12 bytes of them in one more step.
    if (d.size() - i >= 12 && same_page16(d.data() + i)) {
      o = encode64_ssse3_last(o, d.data() + i);
      i += 12;
    }
  }
#endif
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
