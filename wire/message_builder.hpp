// Builds Kafka messages field by field, as a reader of the spec would write
// them: the tests' golden frames, the benchmarks' workloads and fuzz seeds.
// message() prepends the int32 size prefix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kwire::wire {

class MessageBuilder {
 public:
  MessageBuilder& i8(int v) { b_.push_back(static_cast<uint8_t>(v)); return *this; }
  MessageBuilder& i16(int v) { return i8(v >> 8).i8(v); }
  MessageBuilder& i32(int64_t v) { return i16(static_cast<int>(v >> 16)).i16(static_cast<int>(v & 0xffff)); }
  MessageBuilder& i64(int64_t v) { return i32(v >> 32).i32(v & 0xffffffff); }
  MessageBuilder& boolean(bool v) { return i8(v ? 1 : 0); }
  MessageBuilder& uvarint(uint64_t v) {
    while (v >= 0x80) { b_.push_back(static_cast<uint8_t>(v | 0x80)); v >>= 7; }
    b_.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  MessageBuilder& raw(std::span<const uint8_t> s) { b_.insert(b_.end(), s.begin(), s.end()); return *this; }
  MessageBuilder& raw(std::string_view s) { b_.insert(b_.end(), s.begin(), s.end()); return *this; }
  // Classic string: int16 length (the request header's client id in every version).
  MessageBuilder& str(std::string_view s) { return i16(static_cast<int>(s.size())).raw(s); }
  // Compact string/bytes/array: unsigned varint of length + 1; 0 is null.
  MessageBuilder& cstr(std::string_view s) { return uvarint(s.size() + 1).raw(s); }
  MessageBuilder& cbytes(std::span<const uint8_t> s) { return uvarint(s.size() + 1).raw(s); }
  MessageBuilder& cnull() { return uvarint(0); }
  MessageBuilder& carr(size_t n) { return uvarint(n + 1); }
  // Compact (flexible versions) or classic (int16 string, int32 array) encodings.
  MessageBuilder& s(bool compact, std::string_view v) { return compact ? cstr(v) : str(v); }
  MessageBuilder& arr(bool compact, size_t n) { return compact ? carr(n) : i32(static_cast<int64_t>(n)); }
  MessageBuilder& uuid(uint8_t fill) { for (int i = 0; i < 16; ++i) i8(fill); return *this; }
  MessageBuilder& uuid(uint64_t hi, uint64_t lo) { return i64(static_cast<int64_t>(hi)).i64(static_cast<int64_t>(lo)); }
  MessageBuilder& tags0() { return uvarint(0); }  // an empty tagged-field section
  MessageBuilder& present() { return i8(1); }     // nullable struct marker: present
  MessageBuilder& absent() { return i8(-1); }     // nullable struct marker: null

  size_t size() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }
  // The whole message: int32 size prefix, then these bytes.
  std::vector<uint8_t> message() const {
    uint32_t n = static_cast<uint32_t>(b_.size());
    std::vector<uint8_t> m(4 + b_.size());
    m[0] = uint8_t(n >> 24); m[1] = uint8_t(n >> 16); m[2] = uint8_t(n >> 8); m[3] = uint8_t(n);
    std::copy(b_.begin(), b_.end(), m.begin() + 4);
    return m;
  }

 private:
  std::vector<uint8_t> b_;
};

}  // namespace kwire::wire
