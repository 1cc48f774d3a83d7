// Kafka wire primitives. Every reader checks bounds before it touches a byte
// and reports failure instead of reading past the end; varints reject
// overlong encodings (more than 5 bytes for 32 bits, 10 for 64).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kwire::wire {

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
inline uint64_t load_be64(const uint8_t* p) { return (uint64_t(load_be32(p)) << 32) | load_be32(p + 4); }

inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  store_be16(p, uint16_t(v >> 16));
  store_be16(p + 2, uint16_t(v));
}

enum class VarintStatus : uint8_t { Ok, Truncated, Overlong };

inline int32_t unzigzag(uint32_t u) { return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1)); }
inline int64_t unzigzag(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }

// The general case of read_uvarint, out of line so that its callers keep
// only the short forms inline.
template <typename T, int MaxBytes, bool Strict>
[[gnu::noinline]] VarintStatus read_uvarint_long(const uint8_t*& p, const uint8_t* end, T& out) {
  T value = 0;
  for (int i = 0; i < MaxBytes; ++i) {
    if (p == end) return VarintStatus::Truncated;
    uint8_t b = *p++;
    value |= static_cast<T>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (Strict && i == MaxBytes - 1) {
        constexpr int used = int(sizeof(T) * 8) - 7 * (MaxBytes - 1);
        if (b >> used) return VarintStatus::Overlong;
      }
      out = value;
      return VarintStatus::Ok;
    }
  }
  return VarintStatus::Overlong;
}

// Unsigned LEB128, at most `MaxBytes` bytes (5 for 32 bits, 10 for 64).
// Strict, as Kafka reads the varints of message fields: the last byte may
// not carry bits beyond the value's width. Not strict, as Kafka's ByteUtils
// reads the zig-zag varints inside records: those bits are dropped. On
// failure `p` has moved past the bytes looked at. The one- and two-byte
// forms (values below 16384: nearly every length, count and delta) are
// read inline.
template <typename T, int MaxBytes, bool Strict = true>
[[gnu::always_inline]] inline VarintStatus read_uvarint(const uint8_t*& p, const uint8_t* end, T& out) {
  static_assert(MaxBytes >= 3, "the short forms below assume room for more bytes");
  if (p != end) [[likely]] {
    uint8_t b0 = p[0];
    if (!(b0 & 0x80)) [[likely]] {
      p += 1;
      out = b0;
      return VarintStatus::Ok;
    }
    if (end - p >= 2 && !(p[1] & 0x80)) {
      out = static_cast<T>((b0 & 0x7f) | T(p[1]) << 7);
      p += 2;
      return VarintStatus::Ok;
    }
  }
  return read_uvarint_long<T, MaxBytes, Strict>(p, end, out);
}

inline VarintStatus read_uvarint32(const uint8_t*& p, const uint8_t* end, uint32_t& out) {
  return read_uvarint<uint32_t, 5>(p, end, out);
}
// The zig-zag varint (int32) and varlong (int64) of record fields, read as
// Kafka's ByteUtils.readVarint/readVarlong read them: at most 5 and 10
// bytes, bits past the width dropped. `p` only moves on success.
template <typename U, int MaxBytes, typename S>
[[gnu::always_inline]] inline VarintStatus read_record_zigzag(const uint8_t*& p, const uint8_t* end, S& out) {
  const uint8_t* q = p;
  U u = 0;
  auto s = read_uvarint<U, MaxBytes, false>(q, end, u);
  if (s == VarintStatus::Ok) {
    p = q;
    out = unzigzag(u);
  }
  return s;
}
[[gnu::always_inline]] inline VarintStatus read_record_varint(const uint8_t*& p, const uint8_t* end, int32_t& out) {
  return read_record_zigzag<uint32_t, 5>(p, end, out);
}
[[gnu::always_inline]] inline VarintStatus read_record_varlong(const uint8_t*& p, const uint8_t* end, int64_t& out) {
  return read_record_zigzag<uint64_t, 10>(p, end, out);
}

// Appends big-endian and varint encodings.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void be16(uint16_t v) { u8(uint8_t(v >> 8)); u8(uint8_t(v)); }
  void be32(uint32_t v) { be16(uint16_t(v >> 16)); be16(uint16_t(v)); }
  void be64(uint64_t v) { be32(uint32_t(v >> 32)); be32(uint32_t(v)); }
  void uvarint(uint64_t v) {
    while (v >= 0x80) { u8(uint8_t(v | 0x80)); v >>= 7; }
    u8(uint8_t(v));
  }
  void varint(int64_t v) { uvarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& buffer() { return out_; }

 private:
  std::vector<uint8_t>& out_;
};

inline size_t uvarint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; ++n; }
  return n;
}

// Kafka's textual form of a Uuid: URL-safe base64 without padding (22 chars).
std::string uuid_to_string(const uint8_t* p16);
std::string base64(std::span<const uint8_t> data);
// The same into a caller's buffer: standard base64 with padding needs
// base64_size(n) bytes, a uuid kUuidTextSize. Both return the end written.
constexpr size_t base64_size(size_t n) { return (n + 2) / 3 * 4; }
constexpr size_t kUuidTextSize = 22;
char* base64_to(char* out, std::span<const uint8_t> data);
char* uuid_to(char* out, const uint8_t* p16);

}  // namespace kwire::wire
