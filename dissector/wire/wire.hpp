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

enum class VarintStatus : uint8_t { Ok, Truncated, Overlong };

// Unsigned LEB128, at most `max_bytes` bytes. The last byte may not carry
// bits beyond the value's width.
template <typename T, int MaxBytes>
inline VarintStatus read_uvarint(const uint8_t*& p, const uint8_t* end, T& out) {
  T value = 0;
  for (int i = 0; i < MaxBytes; ++i) {
    if (p == end) return VarintStatus::Truncated;
    uint8_t b = *p++;
    value |= static_cast<T>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (i == MaxBytes - 1) {
        constexpr int used = int(sizeof(T) * 8) - 7 * (MaxBytes - 1);
        if (b >> used) return VarintStatus::Overlong;
      }
      out = value;
      return VarintStatus::Ok;
    }
  }
  return VarintStatus::Overlong;
}

inline VarintStatus read_uvarint32(const uint8_t*& p, const uint8_t* end, uint32_t& out) {
  return read_uvarint<uint32_t, 5>(p, end, out);
}
inline VarintStatus read_uvarint64(const uint8_t*& p, const uint8_t* end, uint64_t& out) {
  return read_uvarint<uint64_t, 10>(p, end, out);
}
inline VarintStatus read_varint32(const uint8_t*& p, const uint8_t* end, int32_t& out) {
  uint32_t u;
  auto s = read_uvarint32(p, end, u);
  out = static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
  return s;
}
inline VarintStatus read_varint64(const uint8_t*& p, const uint8_t* end, int64_t& out) {
  uint64_t u;
  auto s = read_uvarint64(p, end, u);
  out = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  return s;
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
