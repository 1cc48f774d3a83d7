// An append-only text buffer for the output views. `kwire decode -V` writes
// about 1.7 bytes of text per byte of capture, mostly short literals, field
// names and small integers; std::string's out-of-line append costs a call
// into libc's memmove for each of them. Here the room check is inline and
// fixed-size copies compile to a few moves.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace kwire {

class TextBuffer {
 public:
  TextBuffer() = default;
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;

  const char* data() const { return buf_.get(); }
  size_t size() const { return static_cast<size_t>(cur_ - buf_.get()); }
  bool empty() const { return cur_ == buf_.get(); }
  std::string_view view() const { return {buf_.get(), size()}; }
  std::string str() const { return std::string(view()); }
  void clear() { cur_ = buf_.get(); }

  // Room for `n` more bytes; write them at the returned cursor, then commit.
  char* room(size_t n) {
    if (static_cast<size_t>(cap_ - cur_) < n) [[unlikely]] grow(n);
    return cur_;
  }
  void commit(char* end) { cur_ = end; }

  void append(const char* s, size_t n) {
    if (n == 0) return;  // also keeps memcpy away from a null buffer
    char* p = room(n);
    std::memcpy(p, s, n);
    cur_ = p + n;
  }
  void append(size_t n, char c) {
    if (n == 0) return;
    char* p = room(n);
    std::memset(p, c, n);
    cur_ = p + n;
  }
  // A short string whose storage is readable for kPadded bytes from its
  // start whatever its length (such as ProgramSet::json_key): one fixed-size
  // copy instead of a call to memcpy.
  static constexpr size_t kPadded = 32;
  void append_padded(std::string_view s) {
    if (s.size() > kPadded) [[unlikely]] return append(s.data(), s.size());
    char* p = room(kPadded);
    std::memcpy(p, s.data(), kPadded);
    cur_ = p + s.size();
  }
  TextBuffer& operator+=(std::string_view s) { append(s.data(), s.size()); return *this; }
  // Literals: the length folds to a constant once inlined.
  TextBuffer& operator+=(const char* s) { append(s, std::strlen(s)); return *this; }
  TextBuffer& operator+=(char c) {
    char* p = room(1);
    *p = c;
    cur_ = p + 1;
    return *this;
  }

 private:
  [[gnu::noinline]] void grow(size_t n) {
    size_t used = size();
    size_t cap = static_cast<size_t>(cap_ - buf_.get());
    size_t want = std::max(used + n, cap < 4096 ? size_t{4096} : cap * 2);
    std::unique_ptr<char[]> b(new char[want]);
    if (used) std::memcpy(b.get(), buf_.get(), used);
    buf_ = std::move(b);
    cur_ = buf_.get() + used;
    cap_ = buf_.get() + want;
  }

  std::unique_ptr<char[]> buf_;
  char* cur_ = nullptr;
  char* cap_ = nullptr;
};

// `v` in decimal at `p`, which must have room for 20 bytes; returns the end
// of the digits. Inlined at every call, as
// the views write most integers through it (std::to_chars stops being
// inlined once a file calls it from a few places).
[[gnu::always_inline]] inline char* write_int(char* p, int64_t v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  *p = '-';
  p += v < 0;
  if (u < 10) {
    *p = static_cast<char>('0' + u);
    return p + 1;
  }
  unsigned n = 2;   // digits, counted first so that they are written in place
  for (uint64_t t = u / 100;; t /= 10000, n += 4) {
    if (t == 0) break;
    if (t < 10) { n += 1; break; }
    if (t < 100) { n += 2; break; }
    if (t < 1000) { n += 3; break; }
    if (t < 10000) { n += 4; break; }
  }
  char* const end = p + n;
  char* q = end;
  while (u >= 100) {
    q -= 2;
    std::memcpy(q, kPairs + (u % 100) * 2, 2);
    u /= 100;
  }
  if (u >= 10) {
    q -= 2;
    std::memcpy(q, kPairs + u * 2, 2);
  } else {
    *--q = static_cast<char>('0' + u);
  }
  return end;
}

inline void append_int(TextBuffer& out, int64_t v) { out.commit(write_int(out.room(20), v)); }

}  // namespace kwire
