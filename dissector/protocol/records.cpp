#include "dissector/protocol/records.hpp"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "wire/wire.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define KWIRE_CRC32C_SSE42 1
#endif

namespace kwire {

// ---------------------------------------------------------------------------
// Checksums

namespace {

constexpr uint32_t kCastagnoli = 0x82F63B78;  // reflected CRC-32C polynomial

// kCrcTables[k][b]: CRC of byte b followed by k zero bytes (slice-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCastagnoli : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}
constexpr auto kCrcTables = make_crc_tables();

uint32_t crc32c_sw(const uint8_t* p, size_t n, uint32_t crc) {
  const auto& t = kCrcTables;
  crc = ~crc;
  if constexpr (std::endian::native == std::endian::little) {
    while (n >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      w ^= crc;
      crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
            t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
      p += 8;
      n -= 8;
    }
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#ifdef KWIRE_CRC32C_SSE42
// The crc32 instruction takes three cycles but starts one per cycle, so long
// inputs run as three interleaved streams over consecutive blocks. The
// streams are joined by moving a CRC register past kCrcBlock zero bytes,
// which is linear in the register: kCrcShift[k][b] is the register byte k =
// b moved so, and a register moves as the xor of its four bytes' entries.
constexpr size_t kCrcBlock = 256;

constexpr std::array<std::array<uint32_t, 256>, 4> make_crc_shift() {
  uint32_t bit[32]{};  // each register bit moved past kCrcBlock zero bytes
  for (int i = 0; i < 32; ++i) {
    uint32_t c = uint32_t{1} << i;
    for (size_t z = 0; z < kCrcBlock; ++z) c = kCrcTables[0][c & 0xff] ^ (c >> 8);
    bit[i] = c;
  }
  std::array<std::array<uint32_t, 256>, 4> t{};
  for (int k = 0; k < 4; ++k)
    for (uint32_t v = 0; v < 256; ++v)
      for (int i = 0; i < 8; ++i)
        if (v >> i & 1) t[k][v] ^= bit[8 * k + i];
  return t;
}
constexpr auto kCrcShift = make_crc_shift();

inline uint32_t crc_shift(uint32_t c) {
  return kCrcShift[0][c & 0xff] ^ kCrcShift[1][(c >> 8) & 0xff] ^ kCrcShift[2][(c >> 16) & 0xff] ^ kCrcShift[3][c >> 24];
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = ~crc;
#if defined(__x86_64__)
  while (n >= 3 * kCrcBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kCrcBlock; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + kCrcBlock + i, 8);
      std::memcpy(&w2, p + 2 * kCrcBlock + i, 8);
      c = _mm_crc32_u64(c, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    c = crc_shift(crc_shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^ static_cast<uint32_t>(c2);
    p += 3 * kCrcBlock;
    n -= 3 * kCrcBlock;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
#endif
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
inline uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc) {
#ifdef KWIRE_CRC32C_SSE42
  if (cpu_has_sse42()) return crc32c_hw(data.data(), data.size(), crc);
#endif
  return crc32c_sw(data.data(), data.size(), crc);
}

namespace detail {

uint32_t crc32c_portable(std::span<const uint8_t> data, uint32_t crc) {
  return crc32c_sw(data.data(), data.size(), crc);
}

uint32_t xxh32(std::span<const uint8_t> data, uint32_t seed) {
  constexpr uint32_t P1 = 2654435761U, P2 = 2246822519U, P3 = 3266489917U, P4 = 668265263U, P5 = 374761393U;
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint32_t h;
  if (n >= 16) {
    uint32_t v[4] = {seed + P1 + P2, seed + P2, seed, seed - P1};
    for (; n >= 16; n -= 16, p += 16)
      for (int i = 0; i < 4; ++i) v[i] = rotl32(v[i] + le32(p + 4 * i) * P2, 13) * P1;
    h = rotl32(v[0], 1) + rotl32(v[1], 7) + rotl32(v[2], 12) + rotl32(v[3], 18);
  } else {
    h = seed + P5;
  }
  h += static_cast<uint32_t>(data.size());
  for (; n >= 4; n -= 4, p += 4) h = rotl32(h + le32(p) * P3, 17) * P4;
  for (; n > 0; --n, ++p) h = rotl32(h + *p * P5, 11) * P1;
  h ^= h >> 15;
  h *= P2;
  h ^= h >> 13;
  h *= P3;
  h ^= h >> 16;
  return h;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Wire primitives

namespace {

using wire::load_be16;
using wire::load_be32;
using wire::load_be64;
using wire::read_record_varint;
using wire::read_record_varlong;
using wire::VarintStatus;

[[gnu::format(printf, 1, 2)]] std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  int n = std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return std::string(buf, static_cast<size_t>(std::clamp(n, 0, int(sizeof buf) - 1)));
}

std::string varint_error(VarintStatus st, const char* what, int max_bytes) {
  if (st == VarintStatus::Overlong) return fmt("%s: overlong varint (more than %d bytes)", what, max_bytes);
  return fmt("%s: varint runs past the end", what);
}

// ---------------------------------------------------------------------------
// Decompression. Each function fills `out` (resized to the decompressed size)
// and returns "" or the reason it failed. Output never grows past limit + 1
// bytes: one byte more than the limit proves the data is too big.

constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr uint32_t kLz4FrameMagic = 0x184D2204;
constexpr size_t kMinRecordSize = 7;  // length, attributes, 2 deltas, key, value, header count

std::string too_big(size_t limit) { return fmt("decompressed size exceeds limit (%zu bytes)", limit); }
// The compressed data states its size up front and it is too big.
std::string too_big(size_t limit, const char* what, uint64_t declared) {
  return too_big(limit) + fmt(": %s declares %llu bytes", what, static_cast<unsigned long long>(declared));
}

// Sizes `out` for the first decompression step. `hint` comes off the wire
// (a size in the compressed data's header): trusted only as far as deflate's
// best ratio (about 1032:1) allows.
void start_output(ScratchBuffer& out, size_t hint, size_t in_size, size_t hard) {
  size_t n = hint ? std::min(hint, in_size * 1032 + (64 << 10)) : std::max<size_t>(in_size * 4, 16 << 10);
  out.resize(std::min(n, hard));
}

bool grow_output(ScratchBuffer& out, size_t hard) {
  if (out.size() >= hard) return false;
  out.resize(std::min(hard, std::max<size_t>(out.size() * 2, 16 << 10)));
  return true;
}

struct Inflater {
  z_stream zs{};
  bool ready = false;
  Inflater() { ready = inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK; }
  ~Inflater() {
    if (ready) inflateEnd(&zs);
  }
};

std::string gunzip(std::span<const uint8_t> in, ScratchBuffer& out, size_t limit) {
  thread_local Inflater z;
  if (!z.ready || inflateReset(&z.zs) != Z_OK) return "gzip: cannot initialise zlib";
  const size_t hard = limit + 1;
  // The gzip trailer's ISIZE (size mod 2^32) is a hint only.
  start_output(out, in.size() >= 18 ? le32(in.data() + in.size() - 4) : 0, in.size(), hard);
  z.zs.next_in = const_cast<Bytef*>(in.data());
  z.zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT_MAX));
  size_t produced = 0;
  for (;;) {
    if (produced == out.size() && !grow_output(out, hard)) return too_big(limit);
    z.zs.next_out = out.data() + produced;
    z.zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT_MAX));
    int r = inflate(&z.zs, Z_NO_FLUSH);
    produced = static_cast<size_t>(z.zs.next_out - out.data());
    if (r == Z_STREAM_END) {
      // Concatenated gzip members read as one stream (java.util.zip does the
      // same); anything else after the end is ignored, as there.
      if (z.zs.avail_in >= 2 && z.zs.next_in[0] == 0x1f && z.zs.next_in[1] == 0x8b) {
        inflateReset(&z.zs);
        continue;
      }
      break;
    }
    if (r == Z_OK) continue;
    if (r == Z_BUF_ERROR && z.zs.avail_out == 0) continue;
    if (r == Z_BUF_ERROR) return "corrupt gzip data: truncated stream";
    return std::string("corrupt gzip data: ") + (z.zs.msg ? z.zs.msg : fmt("zlib error %d", r));
  }
  if (produced > limit) return too_big(limit);
  out.resize(produced);
  return {};
}

std::string unsnappy_block(const uint8_t* in, size_t n, ScratchBuffer& out, size_t limit) {
  size_t ulen = 0;
  if (snappy_uncompressed_length(reinterpret_cast<const char*>(in), n, &ulen) != SNAPPY_OK)
    return "bad block header";
  if (ulen > limit - out.size()) return too_big(limit, "a snappy block", ulen);
  size_t at = out.size();
  out.resize(at + ulen);
  size_t got = ulen;
  if (snappy_uncompress(reinterpret_cast<const char*>(in), n, reinterpret_cast<char*>(out.data() + at), &got) !=
          SNAPPY_OK ||
      got != ulen)
    return "bad block";
  return {};
}

// Snappy as Kafka carries it: xerial framing from the Java client (magic,
// int32 version, int32 compatible version, then blocks each with a big-endian
// int32 length), or one raw snappy block.
std::string unsnappy(std::span<const uint8_t> in, ScratchBuffer& out, size_t limit) {
  out.clear();
  if (in.size() >= 8 && std::memcmp(in.data(), kXerialMagic, 8) == 0) {
    if (in.size() < 16) return "corrupt snappy data: truncated xerial header";
    size_t pos = 16;
    while (pos < in.size()) {
      if (in.size() - pos < 4) return fmt("corrupt snappy data: truncated xerial block length at %zu", pos);
      uint32_t blen = load_be32(in.data() + pos);
      pos += 4;
      if (blen > in.size() - pos)
        return fmt("corrupt snappy data: xerial block of %u bytes at %zu runs past the end", blen, pos - 4);
      std::string why = unsnappy_block(in.data() + pos, blen, out, limit);
      if (!why.empty())
        return why.starts_with("decompressed") ? why : fmt("corrupt snappy data: %s at %zu", why.c_str(), pos);
      pos += blen;
    }
    return {};
  }
  std::string why = unsnappy_block(in.data(), in.size(), out, limit);
  if (!why.empty() && !why.starts_with("decompressed")) return "corrupt snappy data: " + why;
  return why;
}

struct Lz4Decoder {
  LZ4F_dctx* d = nullptr;
  Lz4Decoder() {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) d = nullptr;
  }
  ~Lz4Decoder() {
    if (d) LZ4F_freeDecompressionContext(d);
  }
};

// Length of an LZ4 frame header (magic .. header checksum), or 0.
size_t lz4_header_length(std::span<const uint8_t> in) {
  if (in.size() < 7 || le32(in.data()) != kLz4FrameMagic) return 0;
  uint8_t flg = in[4];
  return size_t{7} + ((flg & 0x08) ? 8u : 0u) + ((flg & 0x01) ? 4u : 0u);
}

// LZ4 frame format. `fix_header_checksum`: magic 0 message sets carry a header
// checksum computed over the magic number too (KAFKA-3160); Kafka ignores it
// for them, so we replace it with the right one before LZ4F sees it.
std::string unlz4(std::span<const uint8_t> in, ScratchBuffer& out, size_t limit, bool fix_header_checksum) {
  thread_local Lz4Decoder lz;
  if (!lz.d) return "lz4: cannot create a decompression context";
  LZ4F_resetDecompressionContext(lz.d);
  const size_t hard = limit + 1;
  size_t hlen = lz4_header_length(in);
  size_t hint = 0;
  if (hlen && (in[4] & 0x08)) {
    uint64_t content = uint64_t(le32(in.data() + 6)) | uint64_t(le32(in.data() + 10)) << 32;
    if (content > limit) return too_big(limit, "the lz4 frame", content);
    hint = static_cast<size_t>(content);
  }
  start_output(out, hint, in.size(), hard);
  size_t produced = 0, next = 1;  // next: LZ4F's hint, 0 once a frame is complete
  auto feed = [&](const uint8_t* src, size_t n) -> std::string {
    while (n > 0 || (next != 0 && produced == out.size())) {
      if (produced == out.size() && !grow_output(out, hard)) return too_big(limit);
      size_t dst_n = out.size() - produced, src_n = n;
      size_t r = LZ4F_decompress(lz.d, out.data() + produced, &dst_n, src, &src_n, nullptr);
      if (LZ4F_isError(r)) return std::string("corrupt lz4 data: ") + LZ4F_getErrorName(r);
      produced += dst_n;
      src += src_n;
      n -= src_n;
      next = r;
      if (src_n == 0 && dst_n == 0 && produced < out.size()) break;  // no progress: input exhausted
    }
    return {};
  };
  std::string why;
  if (fix_header_checksum && hlen && hlen <= in.size()) {
    uint8_t header[19];
    std::memcpy(header, in.data(), hlen);
    header[hlen - 1] = static_cast<uint8_t>(detail::xxh32({header + 4, hlen - 5}) >> 8);
    why = feed(header, hlen);
    if (why.empty()) why = feed(in.data() + hlen, in.size() - hlen);
  } else {
    why = feed(in.data(), in.size());
  }
  if (!why.empty()) return why;
  if (next != 0) return "corrupt lz4 data: truncated frame";
  if (produced > limit) return too_big(limit);
  out.resize(produced);
  return {};
}

struct ZstdDecoder {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~ZstdDecoder() { ZSTD_freeDCtx(d); }
};

// Zstandard; the frame content size is usually absent (the Java client streams).
std::string unzstd(std::span<const uint8_t> in, ScratchBuffer& out, size_t limit) {
  thread_local ZstdDecoder zs;
  if (!zs.d) return "zstd: cannot create a decompression context";
  ZSTD_DCtx_reset(zs.d, ZSTD_reset_session_only);
  // Refuse windows (decoder memory) much larger than the output may be.
  constexpr int kZstdDefaultWindowLogMax = 27;  // ZSTD_WINDOWLOG_LIMIT_DEFAULT (experimental API)
  int wlog = std::clamp(static_cast<int>(std::bit_width(limit > 0 ? limit - 1 : 0)), 23, kZstdDefaultWindowLogMax);
  ZSTD_DCtx_setParameter(zs.d, ZSTD_d_windowLogMax, wlog);
  const size_t hard = limit + 1;
  size_t hint = 0;
  unsigned long long content = ZSTD_getFrameContentSize(in.data(), in.size());
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != ZSTD_CONTENTSIZE_ERROR) {
    if (content > limit) return too_big(limit, "the zstd frame", content);
    hint = static_cast<size_t>(content);
  }
  start_output(out, hint, in.size(), hard);
  // One pass straight into the output when it is big enough (usual: the
  // scratch buffer keeps its size between batches); streaming otherwise.
  // The single pass needs no window buffer and no copy out of it.
  if (out.capacity() > out.size()) out.resize(std::min(out.capacity(), hard));
  size_t whole = ZSTD_decompressDCtx(zs.d, out.data(), out.size(), in.data(), in.size());
  if (!ZSTD_isError(whole)) {
    if (whole > limit) return too_big(limit);
    out.resize(whole);
    return {};
  }
  if (ZSTD_getErrorCode(whole) != ZSTD_error_dstSize_tooSmall)
    return std::string("corrupt zstd data: ") + ZSTD_getErrorName(whole);
  ZSTD_DCtx_reset(zs.d, ZSTD_reset_session_only);
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t produced = 0, r = 1;
  while (ib.pos < ib.size || (r != 0 && produced == out.size())) {
    if (produced == out.size() && !grow_output(out, hard)) return too_big(limit);
    ZSTD_outBuffer ob{out.data(), out.size(), produced};
    size_t before_in = ib.pos;
    r = ZSTD_decompressStream(zs.d, &ob, &ib);
    if (ZSTD_isError(r)) return std::string("corrupt zstd data: ") + ZSTD_getErrorName(r);
    bool progress = ob.pos != produced || ib.pos != before_in;
    produced = ob.pos;
    if (!progress && produced < out.size()) break;
  }
  if (r != 0) return "corrupt zstd data: truncated frame";
  if (produced > limit) return too_big(limit);
  out.resize(produced);
  return {};
}

const char* codec_name(int codec) {
  static const char* const names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
  return codec >= 0 && codec <= 4 ? names[codec] : "unknown";
}

std::string decompress(int codec, std::span<const uint8_t> in, ScratchBuffer& out, size_t limit,
                       bool lz4_fix_header_checksum) {
  switch (codec) {
    case 1: return gunzip(in, out, limit);
    case 2: return unsnappy(in, out, limit);
    case 3: return unlz4(in, out, limit, lz4_fix_header_checksum);
    case 4: return unzstd(in, out, limit);
    default: return fmt("unknown compression codec %d", codec);
  }
}

// ---------------------------------------------------------------------------
// Decoding

constexpr uint32_t kNone = UINT32_MAX;
constexpr size_t kLogOverhead = 12;        // offset int64 + size int32
constexpr uint32_t kBatchHeader = 61;      // RecordBatch v2 header, records start here
constexpr int32_t kMinSize[3] = {14, 22, int32_t(kBatchHeader - kLogOverhead)};  // size field minimum per magic

// A run of bytes being decoded and where its offsets point.
struct Place {
  const uint8_t* data;
  size_t size;
  uint32_t base;     // offset of data[0] (wire, or in a decompressed buffer)
  uint8_t inner;     // 0 or kInner
  bool nested;       // in a buffer we decompressed: errors point at `anchor`
  uint32_t anchor;   // wire offset of the outermost batch/message holding it

  uint32_t at(size_t pos) const { return base + static_cast<uint32_t>(pos); }
  uint32_t at(const uint8_t* p) const { return at(static_cast<size_t>(p - data)); }
  uint32_t error_offset(size_t pos) const { return nested ? anchor : at(pos); }
  std::string where(const char* what, size_t pos) const {
    return nested ? fmt("%s at decompressed offset %u (in the compressed message at offset %u)", what, at(pos), anchor)
                  : fmt("%s at offset %u", what, at(pos));
  }
};

class RecordsDecoder {
 public:
  RecordsDecoder(Frame& f, const RecordsLimits& limits)
      : f_(f), limits_(limits), budget_(limits.max_total_decompressed) {}

  // Batches and messages of `pl` as children of `parent`. Returns false after
  // a failure; `*count` = entries decoded.
  bool set(const Place& pl, uint32_t parent, int depth, uint32_t* count);

 private:
  bool batch(const Place& pl, size_t pos, uint32_t parent);
  bool legacy(const Place& pl, size_t pos, uint32_t parent, int depth, uint8_t element);
  bool records(const Place& rp, uint32_t array, int32_t count, const Place& batch_pl, size_t batch_pos,
               uint32_t* decoded);
  bool record(const Place& rp, const uint8_t*& p, uint32_t array, std::string& why, const uint8_t*& err_at);
  bool record_fast(const Place& rp, const uint8_t*& p, uint32_t array);
  // Decompresses into a fresh scratch buffer; returns its bytes or fails.
  bool inflate(int codec, std::span<const uint8_t> in, bool lz4_fix, size_t min_size, const Place& pl, size_t pos,
               const char* what, std::span<const uint8_t>* out);

  uint32_t leaf(uint32_t desc, WireType t, uint32_t parent, uint32_t off, uint32_t len, uint8_t flags) {
    uint32_t i = f_.leaf(desc, t, parent, off, len);
    f_.nodes[i].flags = flags;
    return i;
  }
  [[gnu::always_inline]] void int_leaf(uint32_t desc, WireType t, uint32_t parent, uint32_t off, uint32_t len, uint8_t flags, int64_t v) {
    f_.nodes[leaf(desc, t, parent, off, len, flags)].v.i = v;
  }
  // A bytes/string leaf: `prefix` bytes of length, then `n` bytes at `data` (n < 0: null).
  void bytes_leaf(uint32_t desc, WireType t, uint32_t parent, uint32_t off, uint32_t prefix, const uint8_t* data,
                  int32_t n, uint8_t flags) {
    Node& node = f_.nodes[leaf(desc, t, parent, off, prefix + static_cast<uint32_t>(n < 0 ? 0 : n), flags)];
    if (n < 0) {
      node.flags |= kNull;
    } else {
      node.v.p = data;
      node.aux = static_cast<uint32_t>(n);
    }
  }

  Frame& f_;
  const RecordsLimits& limits_;
  size_t budget_;  // decompressed bytes left for this field
};

bool RecordsDecoder::set(const Place& pl, uint32_t parent, int depth, uint32_t* count) {
  *count = 0;
  const uint8_t element = depth > 0 ? kElement : 0;
  size_t pos = 0;
  while (pos < pl.size) {
    size_t left = pl.size - pos;
    const uint8_t* p = pl.data + pos;
    int32_t size = left >= kLogOverhead ? static_cast<int32_t>(load_be32(p + 8)) : 0;
    int magic = left > 16 ? p[16] : -1;
    if (left >= kLogOverhead) {
      if (magic > 2) {
        f_.fail(pl.error_offset(pos), pl.where(depth > 0 ? "message" : "record batch", pos) +
                                          fmt(": bad magic %d", magic));
        return false;
      }
      int32_t min = kMinSize[magic < 0 ? 0 : magic];
      if (size < min) {
        f_.fail(pl.error_offset(pos),
                pl.where(magic == 2 ? "record batch" : "message", pos) +
                    fmt(": size %d is below the minimum of %d", size, min));
        return false;
      }
    }
    if (left < kLogOverhead || static_cast<size_t>(size) > left - kLogOverhead) {
      if (depth > 0 || pl.nested) {
        f_.fail(pl.error_offset(pos), pl.where("message", pos) +
                                          fmt(": %zu bytes left, too few for the message there", left));
        return false;
      }
      // A fetch response cut this batch at its byte limit: normal.
      uint32_t n = leaf(kDescPartialBatch, WireType::Bytes, parent, pl.at(pos), static_cast<uint32_t>(left), pl.inner);
      f_.nodes[n].v.p = p;
      f_.nodes[n].aux = static_cast<uint32_t>(left);
      return true;
    }
    bool ok;
    if (magic == 2) {
      if (depth > 0) {
        f_.fail(pl.error_offset(pos), pl.where("record batch", pos) + ": magic 2 inside a legacy compressed message");
        return false;
      }
      ok = batch(pl, pos, parent);
    } else {
      ok = legacy(pl, pos, parent, depth, element);
    }
    ++*count;
    if (!ok) return false;
    pos += kLogOverhead + static_cast<size_t>(size);
  }
  return true;
}

bool RecordsDecoder::inflate(int codec, std::span<const uint8_t> in, bool lz4_fix, size_t min_size, const Place& pl,
                             size_t pos, const char* what, std::span<const uint8_t>* out) {
  size_t limit = std::min(limits_.max_batch_decompressed, budget_);
  if (min_size > limit) {
    f_.fail(pl.error_offset(pos),
            pl.where(what, pos) + fmt(": record count implies at least %zu bytes, decompressed size exceeds limit "
                                      "(%zu bytes)",
                                      min_size, limit));
    return false;
  }
  ScratchBuffer& buf = f_.scratch();
  std::string why = decompress(codec, in, buf, limit, lz4_fix);
  if (!why.empty()) {
    if (why.starts_with("decompressed") && limit < limits_.max_batch_decompressed)
      why = fmt("decompressed size exceeds limit (%zu bytes left of the %zu allowed per records field)", limit,
                limits_.max_total_decompressed);
    f_.fail(pl.error_offset(pos), pl.where(what, pos) + ": " + why);
    return false;
  }
  budget_ -= buf.size();
  *out = {buf.data(), buf.size()};
  return true;
}

bool RecordsDecoder::batch(const Place& pl, size_t pos, uint32_t parent) {
  const uint8_t* b = pl.data + pos;
  const uint8_t fl = pl.inner;
  const size_t total = kLogOverhead + load_be32(b + 8);
  const uint32_t o = pl.at(pos);
  const uint32_t node = f_.open(kDescRecordBatch, WireType::Struct, parent, o, fl);
  const int16_t attributes = static_cast<int16_t>(load_be16(b + 21));
  const int32_t count = static_cast<int32_t>(load_be32(b + 57));
  const uint32_t stored_crc = load_be32(b + 17);
  int_leaf(kDescBaseOffset, WireType::Int64, node, o, 8, fl, static_cast<int64_t>(load_be64(b)));
  int_leaf(kDescBatchLength, WireType::Int32, node, o + 8, 4, fl, static_cast<int32_t>(load_be32(b + 8)));
  int_leaf(kDescPartitionLeaderEpoch, WireType::Int32, node, o + 12, 4, fl, static_cast<int32_t>(load_be32(b + 12)));
  int_leaf(kDescMagic, WireType::Int8, node, o + 16, 1, fl, static_cast<int8_t>(b[16]));
  f_.nodes[leaf(kDescCrc, WireType::Uint32, node, o + 17, 4, fl)].v.u = stored_crc;
  int_leaf(kDescAttributes, WireType::Int16, node, o + 21, 2, fl, attributes);
  int_leaf(kDescLastOffsetDelta, WireType::Int32, node, o + 23, 4, fl, static_cast<int32_t>(load_be32(b + 23)));
  int_leaf(kDescBaseTimestamp, WireType::Int64, node, o + 27, 8, fl, static_cast<int64_t>(load_be64(b + 27)));
  int_leaf(kDescMaxTimestamp, WireType::Int64, node, o + 35, 8, fl, static_cast<int64_t>(load_be64(b + 35)));
  int_leaf(kDescProducerId, WireType::Int64, node, o + 43, 8, fl, static_cast<int64_t>(load_be64(b + 43)));
  int_leaf(kDescProducerEpoch, WireType::Int16, node, o + 51, 2, fl, static_cast<int16_t>(load_be16(b + 51)));
  int_leaf(kDescBaseSequence, WireType::Int32, node, o + 53, 4, fl, static_cast<int32_t>(load_be32(b + 53)));
  int_leaf(kDescRecordCount, WireType::Int32, node, o + 57, 4, fl, count);

  const uint32_t end = pl.at(pos + total);
  auto stop = [&](uint32_t array) {
    if (array != kNone) f_.close(array, end);
    f_.close(node, end);
    return false;
  };
  uint32_t computed = crc32c({b + 21, total - 21});
  if (computed != stored_crc)  // reported; the batch is still decoded
    f_.fail(pl.error_offset(pos), pl.where("record batch", pos) +
                                      fmt(": crc 0x%08x != computed 0x%08x", stored_crc, computed));
  const int codec = attributes & 0x7;
  if (codec > 4) {
    f_.fail(pl.error_offset(pos), pl.where("record batch", pos) + fmt(": unknown compression codec %d", codec));
    return stop(kNone);
  }
  if (count < 0) {
    f_.fail(pl.error_offset(pos + 57), pl.where("record batch", pos) + fmt(": negative record count %d", count));
    return stop(kNone);
  }
  const uint32_t array = f_.open(kDescRecordsArray, WireType::Array, node, o + kBatchHeader, fl);
  std::span<const uint8_t> body{b + kBatchHeader, total - kBatchHeader};
  Place rp{body.data(), body.size(), o + kBatchHeader, fl, pl.nested, pl.anchor};
  if (codec != 0) {
    std::span<const uint8_t> plain;
    size_t min_size = static_cast<size_t>(count) * kMinRecordSize;
    if (!inflate(codec, body, false, min_size, pl, pos, "record batch", &plain)) return stop(array);
    rp = {plain.data(), plain.size(), 0, kInner, true, pl.nested ? pl.anchor : o};
  }
  uint32_t decoded = 0;
  bool ok = records(rp, array, count, pl, pos, &decoded);
  f_.nodes[array].aux = decoded;
  f_.close(array, end);
  f_.close(node, end);
  return ok;
}

bool RecordsDecoder::records(const Place& rp, uint32_t array, int32_t count, const Place& pl, size_t batch_pos,
                             uint32_t* decoded) {
  const uint8_t* p = rp.data;
  const uint8_t* const end = rp.data + rp.size;
  std::string why;
  for (int32_t i = 0; i < count; ++i) {
    if (p == end) {
      f_.fail(rp.nested ? rp.anchor : rp.at(p), pl.where("record batch", batch_pos) +
                                                    fmt(": record count %d but the records end after %d", count, i));
      return false;
    }
    const uint8_t* start = p;
    const uint8_t* err_at = p;
    ++*decoded;  // counts the record's node, complete or not
    if (limits_.one_pass_records && record_fast(rp, p, array)) continue;
    if (!record(rp, p, array, why, err_at)) {
      f_.fail(rp.nested ? rp.anchor : rp.at(err_at),
              pl.where("record batch", batch_pos) + ": " +
                  (rp.nested ? fmt("record %d at decompressed offset %u: ", i, rp.at(start))
                             : fmt("record %d at offset %u: ", i, rp.at(start))) +
                  why);
      return false;
    }
  }
  if (p != end) {
    f_.fail(rp.nested ? rp.anchor : rp.at(p),
            pl.where("record batch", batch_pos) + fmt(": %td bytes after the last of %d records", end - p, count));
    return false;
  }
  return true;
}

// A well-formed record in one pass: fields are read first, then its nodes
// are written into the tape in one block, the same nodes record() builds.
// Returns false with the tape and `pp` untouched at the first thing out of
// the ordinary; record() then goes field by field and says what is wrong.
// Records are most of the nodes of a Produce or Fetch, so this is the hot
// loop there.
bool RecordsDecoder::record_fast(const Place& rp, const uint8_t*& pp, uint32_t array) {
  const uint8_t* const start = pp;
  const uint8_t* p = start;
  int32_t len;
  if (read_record_varint(p, rp.data + rp.size, len) != VarintStatus::Ok || len < 6 || len > rp.data + rp.size - p) return false;
  const uint8_t* const attributes = p;
  const uint8_t* const end = p + len;
  ++p;
  const uint8_t* const ts_at = p;
  int64_t ts_delta;
  if (read_record_varlong(p, end, ts_delta) != VarintStatus::Ok) return false;
  const uint8_t* const od_at = p;
  int32_t offset_delta;
  if (read_record_varint(p, end, offset_delta) != VarintStatus::Ok) return false;
  const uint8_t* kv_at[2];
  const uint8_t* kv_data[2];
  int32_t kv_len[2];
  for (int k = 0; k < 2; ++k) {
    kv_at[k] = p;
    if (read_record_varint(p, end, kv_len[k]) != VarintStatus::Ok || kv_len[k] < -1 || kv_len[k] > end - p) return false;
    kv_data[k] = p;
    if (kv_len[k] > 0) p += kv_len[k];
  }
  const uint8_t* const hc_at = p;
  int32_t header_count;
  if (read_record_varint(p, end, header_count) != VarintStatus::Ok || header_count < 0 || header_count > (end - p) / 2)
    return false;

  const uint8_t fl = rp.inner;
  const size_t base = f_.nodes.size();
  const uint32_t rec = static_cast<uint32_t>(base);
  const uint32_t total = 8 + 3 * static_cast<uint32_t>(header_count);
  // Every member of every node is written below (set() the value too), so
  // the nodes are not zeroed first.
  Node* const n = f_.nodes.append_n(total);
  auto set = [&](Node& x, uint32_t desc, WireType t, uint32_t parent, const uint8_t* at, uint32_t length, uint8_t flags) {
    x.desc = desc;
    x.type = t;
    x.parent = parent;
    x.offset = rp.at(at);
    x.length = length;
    x.flags = flags;
    x.end = rec + static_cast<uint32_t>(&x - n) + 1;
    x.aux = 0;
    x.v.u = 0;
    x.tag = 0;
  };
  auto bytes = [&](Node& x, uint32_t desc, WireType t, uint32_t parent, const uint8_t* at, const uint8_t* data, int32_t m) {
    set(x, desc, t, parent, at, static_cast<uint32_t>(data - at) + static_cast<uint32_t>(m < 0 ? 0 : m), fl);
    if (m < 0) {
      x.flags |= kNull;
    } else {
      x.v.p = data;
      x.aux = static_cast<uint32_t>(m);
    }
  };
  set(n[1], kDescRecordLength, WireType::Varint, rec, start, static_cast<uint32_t>(attributes - start), fl);
  n[1].v.i = len;
  set(n[2], kDescRecordAttributes, WireType::Int8, rec, attributes, 1, fl);
  n[2].v.i = static_cast<int8_t>(*attributes);
  set(n[3], kDescTimestampDelta, WireType::Varlong, rec, ts_at, static_cast<uint32_t>(od_at - ts_at), fl);
  n[3].v.i = ts_delta;
  set(n[4], kDescOffsetDelta, WireType::Varint, rec, od_at, static_cast<uint32_t>(kv_at[0] - od_at), fl);
  n[4].v.i = offset_delta;
  bytes(n[5], kDescKey, WireType::VarBytes, rec, kv_at[0], kv_data[0], kv_len[0]);
  bytes(n[6], kDescValue, WireType::VarBytes, rec, kv_at[1], kv_data[1], kv_len[1]);
  set(n[7], kDescHeadersArray, WireType::Array, rec, hc_at, static_cast<uint32_t>(end - hc_at), fl);
  n[7].aux = static_cast<uint32_t>(header_count);
  n[7].end = rec + total;
  int32_t h = 0;
  for (; h < header_count; ++h) {
    Node* x = n + 8 + 3 * h;
    const uint8_t* const header = p;
    int32_t m;
    if (read_record_varint(p, end, m) != VarintStatus::Ok || m < 0 || m > end - p) break;
    bytes(x[1], kDescHeaderKey, WireType::VarString, rec + 8 + 3 * h, header, p, m);
    p += m;
    const uint8_t* const value = p;
    if (read_record_varint(p, end, m) != VarintStatus::Ok || m < -1 || m > end - p) break;
    bytes(x[2], kDescHeaderValue, WireType::VarBytes, rec + 8 + 3 * h, value, p, m);
    if (m > 0) p += m;
    set(x[0], kDescHeader, WireType::Struct, rec + 7, header, static_cast<uint32_t>(p - header), fl | kElement);
    x[0].end = rec + 8 + 3 * h + 3;
  }
  if (h != header_count || p != end) {  // a header failed, or the fields do not fill the record
    f_.nodes.resize(base);
    return false;
  }
  set(n[0], kDescRecord, WireType::Struct, array, start, static_cast<uint32_t>(end - start), fl | kElement);
  n[0].end = rec + total;
  pp = end;
  return true;
}

// One record at `p`, which moves past it. On failure: `why` and `err_at` say
// what and where, and every node opened here is closed.
bool RecordsDecoder::record(const Place& rp, const uint8_t*& p, uint32_t array, std::string& why,
                            const uint8_t*& err_at) {
  const uint8_t fl = rp.inner;
  const uint8_t* end = rp.data + rp.size;
  const uint32_t rec = f_.open(kDescRecord, WireType::Struct, array, rp.at(p), fl | kElement);
  uint32_t headers = kNone, header = kNone, headers_seen = 0;
  auto fail = [&](const uint8_t* at, std::string reason) {
    err_at = at;
    if (header != kNone) f_.close(header, rp.at(p));
    if (headers != kNone) {
      f_.nodes[headers].aux = headers_seen;
      f_.close(headers, rp.at(p));
    }
    f_.close(rec, rp.at(p));
    why = std::move(reason);
    return false;
  };
  const uint8_t* q = p;
  VarintStatus st;
  int32_t len;
  if ((st = read_record_varint(p, end, len)) != VarintStatus::Ok) return fail(q, varint_error(st, "record length", 5));
  int_leaf(kDescRecordLength, WireType::Varint, rec, rp.at(q), uint32_t(p - q), fl, len);
  if (len < 0 || len > end - p) return fail(q, fmt("record length %d does not fit the %td bytes left", len, end - p));
  end = p + len;  // the fields must fill the record exactly
  const uint8_t* const body = p;

  if (p == end) return fail(p, "record ends before its attributes");
  int_leaf(kDescRecordAttributes, WireType::Int8, rec, rp.at(p), 1, fl, static_cast<int8_t>(*p));
  ++p;
  q = p;
  int64_t ts_delta;
  if ((st = read_record_varlong(p, end, ts_delta)) != VarintStatus::Ok)
    return fail(q, varint_error(st, "timestamp delta", 10));
  int_leaf(kDescTimestampDelta, WireType::Varlong, rec, rp.at(q), uint32_t(p - q), fl, ts_delta);
  q = p;
  int32_t offset_delta;
  if ((st = read_record_varint(p, end, offset_delta)) != VarintStatus::Ok)
    return fail(q, varint_error(st, "offset delta", 5));
  int_leaf(kDescOffsetDelta, WireType::Varint, rec, rp.at(q), uint32_t(p - q), fl, offset_delta);

  // Key and value: varint length (-1 null), bytes.
  for (uint32_t desc : {uint32_t{kDescKey}, uint32_t{kDescValue}}) {
    const char* what = desc == kDescKey ? "key length" : "value length";
    q = p;
    int32_t n;
    if ((st = read_record_varint(p, end, n)) != VarintStatus::Ok) return fail(q, varint_error(st, what, 5));
    if (n < -1 || n > end - p) return fail(q, fmt("%s %d does not fit the %td bytes left in the record", what, n, end - p));
    bytes_leaf(desc, WireType::VarBytes, rec, rp.at(q), uint32_t(p - q), p, n, fl);
    if (n > 0) p += n;
  }

  q = p;
  int32_t header_count;
  if ((st = read_record_varint(p, end, header_count)) != VarintStatus::Ok)
    return fail(q, varint_error(st, "header count", 5));
  if (header_count < 0) return fail(q, fmt("negative header count %d", header_count));
  headers = f_.open(kDescHeadersArray, WireType::Array, rec, rp.at(q), fl);
  f_.nodes[headers].aux = static_cast<uint32_t>(header_count);
  for (int32_t h = 0; h < header_count; ++h) {
    if (p == end) return fail(p, fmt("header count %d but the record ends after %d", header_count, h));
    header = f_.open(kDescHeader, WireType::Struct, headers, rp.at(p), fl | kElement);
    ++headers_seen;
    q = p;
    int32_t n;
    if ((st = read_record_varint(p, end, n)) != VarintStatus::Ok) return fail(q, varint_error(st, "header key length", 5));
    if (n < 0 || n > end - p)
      return fail(q, fmt("header key length %d does not fit the %td bytes left in the record", n, end - p));
    bytes_leaf(kDescHeaderKey, WireType::VarString, header, rp.at(q), uint32_t(p - q), p, n, fl);
    p += n;
    q = p;
    if ((st = read_record_varint(p, end, n)) != VarintStatus::Ok) return fail(q, varint_error(st, "header value length", 5));
    if (n < -1 || n > end - p)
      return fail(q, fmt("header value length %d does not fit the %td bytes left in the record", n, end - p));
    bytes_leaf(kDescHeaderValue, WireType::VarBytes, header, rp.at(q), uint32_t(p - q), p, n, fl);
    if (n > 0) p += n;
    f_.close(header, rp.at(p));
    header = kNone;
  }
  f_.close(headers, rp.at(p));
  headers = kNone;
  if (p != end) return fail(p, fmt("record length %d but its fields end after %td bytes", len, p - body));
  f_.close(rec, rp.at(p));
  return true;
}

bool RecordsDecoder::legacy(const Place& pl, size_t pos, uint32_t parent, int depth, uint8_t element) {
  const uint8_t* b = pl.data + pos;
  const uint8_t fl = pl.inner;
  const int32_t size = static_cast<int32_t>(load_be32(b + 8));
  const size_t total = kLogOverhead + static_cast<size_t>(size);
  const int magic = b[16];
  const uint8_t attributes = b[17];
  const uint32_t o = pl.at(pos);
  const uint32_t node = f_.open(kDescLegacyMessage, WireType::Struct, parent, o, fl | element);
  const uint32_t end = pl.at(pos + total);
  auto fail = [&](size_t at, std::string reason) {
    f_.fail(pl.error_offset(at), pl.where("message", pos) + ": " + reason);
    f_.close(node, end);
    return false;
  };
  const uint32_t stored_crc = load_be32(b + 12);
  int_leaf(kDescLegacyOffset, WireType::Int64, node, o, 8, fl, static_cast<int64_t>(load_be64(b)));
  int_leaf(kDescLegacySize, WireType::Int32, node, o + 8, 4, fl, size);
  f_.nodes[leaf(kDescLegacyCrc, WireType::Uint32, node, o + 12, 4, fl)].v.u = stored_crc;
  int_leaf(kDescLegacyMagic, WireType::Int8, node, o + 16, 1, fl, magic);
  int_leaf(kDescLegacyAttributes, WireType::Int8, node, o + 17, 1, fl, static_cast<int8_t>(attributes));
  size_t q = 18;  // set() checked the size covers the fixed fields of this magic
  if (magic == 1) {
    int_leaf(kDescLegacyTimestamp, WireType::Int64, node, o + 18, 8, fl, static_cast<int64_t>(load_be64(b + 18)));
    q = 26;
  }
  const uint8_t* value = nullptr;
  int32_t value_len = -1;
  for (uint32_t desc : {uint32_t{kDescLegacyKey}, uint32_t{kDescLegacyValue}}) {
    const char* what = desc == kDescLegacyKey ? "key length" : "value length";
    if (total - q < 4) return fail(pos + q, fmt("size %d leaves no room for the %s", size, what));
    int32_t n = static_cast<int32_t>(load_be32(b + q));
    if (n < -1 || static_cast<int64_t>(n) > static_cast<int64_t>(total - q - 4))
      return fail(pos + q, fmt("%s %d does not fit the %zu bytes left in the message", what, n, total - q - 4));
    bytes_leaf(desc, WireType::Bytes, node, o + static_cast<uint32_t>(q), 4, b + q + 4, n, fl);
    value = b + q + 4;
    value_len = n;
    q += 4 + static_cast<size_t>(n < 0 ? 0 : n);
  }
  if (q != total) return fail(pos + q, fmt("size %d but its fields end after %zu bytes", size, q - kLogOverhead));
  uint32_t computed = static_cast<uint32_t>(::crc32(0, b + 16, static_cast<uInt>(total - 16)));
  if (computed != stored_crc)  // reported; the message is still decoded
    f_.fail(pl.error_offset(pos), pl.where("message", pos) +
                                      fmt(": crc 0x%08x != computed 0x%08x", stored_crc, computed));
  const int codec = attributes & 0x7;
  if (codec == 0) {
    f_.close(node, end);
    return true;
  }
  if (codec > 3) return fail(pos, fmt("compression codec %d (%s) is not allowed before magic 2", codec, codec_name(codec)));
  if (depth >= limits_.max_legacy_nesting)
    return fail(pos, fmt("compressed messages nested more than %d deep", limits_.max_legacy_nesting));
  if (value_len < 0) return fail(pos, "compressed message with a null value");
  std::span<const uint8_t> plain;
  if (!inflate(codec, {value, static_cast<size_t>(value_len)}, magic == 0, 0, pl, pos, "message", &plain)) {
    f_.close(node, end);
    return false;
  }
  const uint32_t inner_array =
      f_.open(kDescLegacyInner, WireType::Array, node, pl.at(static_cast<size_t>(value - pl.data)), fl);
  Place ip{plain.data(), plain.size(), 0, kInner, true, pl.nested ? pl.anchor : o};
  uint32_t n = 0;
  bool ok = set(ip, inner_array, depth + 1, &n);
  f_.nodes[inner_array].aux = n;
  f_.close(inner_array, end);
  f_.close(node, end);
  return ok;
}

}  // namespace

void decode_records(Frame& f, uint32_t parent, std::span<const uint8_t> data, uint32_t base, uint8_t inner,
                    const RecordsLimits& limits) {
  RecordsDecoder d(f, limits);
  Place pl{data.data(), data.size(), base, static_cast<uint8_t>(inner & kInner), false, base};
  uint32_t n = 0;
  d.set(pl, parent, 0, &n);
}

void decode_records(Frame& f, uint32_t parent, std::span<const uint8_t> data, uint32_t base, uint8_t inner) {
  static const RecordsLimits defaults;
  decode_records(f, parent, data, base, inner, defaults);
}

// ---------------------------------------------------------------------------
// Encoding (tests and generators; clarity over speed)

namespace {

// A record's key, value or header: zig-zag varint length (-1: null), bytes.
void put_var_bytes(wire::Writer& w, const std::optional<std::string>& s) {
  if (!s) {
    w.varint(-1);
    return;
  }
  w.varint(static_cast<int64_t>(s->size()));
  w.raw(s->data(), s->size());
}

std::vector<uint8_t> gzip(std::span<const uint8_t> in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  int r = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (r != Z_STREAM_END) throw std::runtime_error("gzip: deflate failed");
  return out;
}

void snappy_block(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  size_t at = out.size();
  size_t n = snappy_max_compressed_length(in.size());
  out.resize(at + n);
  if (snappy_compress(reinterpret_cast<const char*>(in.data()), in.size(), reinterpret_cast<char*>(out.data() + at),
                      &n) != SNAPPY_OK)
    throw std::runtime_error("snappy: compress failed");
  out.resize(at + n);
}

std::vector<uint8_t> snappy(std::span<const uint8_t> in, bool xerial) {
  std::vector<uint8_t> out;
  if (!xerial) {
    snappy_block(in, out);
    return out;
  }
  out.assign(std::begin(kXerialMagic), std::end(kXerialMagic));
  wire::Writer w(out);
  w.be32(1);  // version
  w.be32(1);  // compatible version
  constexpr size_t kBlock = 32 << 10;  // snappy-java's default block size
  for (size_t pos = 0; pos < in.size(); pos += kBlock) {
    size_t len_at = out.size();
    w.be32(0);
    snappy_block(in.subspan(pos, std::min(kBlock, in.size() - pos)), out);
    wire::store_be32(out.data() + len_at, static_cast<uint32_t>(out.size() - len_at - 4));
  }
  return out;
}

std::vector<uint8_t> lz4(std::span<const uint8_t> in, bool content_size, bool kafka3160) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;  // as Kafka's client
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentSize = content_size ? in.size() : 0;
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) throw std::runtime_error(std::string("lz4: ") + LZ4F_getErrorName(n));
  out.resize(n);
  if (kafka3160) {  // header checksum over magic + descriptor, as Kafka 0.8/0.9 wrote it
    size_t hlen = lz4_header_length(out);
    out[hlen - 1] = static_cast<uint8_t>(detail::xxh32({out.data(), hlen - 1}) >> 8);
  }
  return out;
}

std::vector<uint8_t> zstd(std::span<const uint8_t> in, bool content_size) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  if (!c) throw std::runtime_error("zstd: cannot create a context");
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::vector<uint8_t> compress(Codec codec, std::span<const uint8_t> in, bool xerial, bool content_size,
                              bool kafka3160) {
  switch (codec) {
    case Codec::None: return {in.begin(), in.end()};
    case Codec::Gzip: return gzip(in);
    case Codec::Snappy: return snappy(in, xerial);
    case Codec::Lz4: return lz4(in, content_size, kafka3160);
    case Codec::Zstd: return zstd(in, content_size);
  }
  throw std::runtime_error("unknown codec");
}

std::vector<uint8_t> legacy_message(int magic, int64_t offset, int64_t timestamp, uint8_t attributes,
                                    const uint8_t* key, int32_t key_len, const uint8_t* value, int32_t value_len) {
  std::vector<uint8_t> o;
  wire::Writer w(o);
  w.be64(static_cast<uint64_t>(offset));
  w.be32(0);  // size
  w.be32(0);  // crc
  w.u8(static_cast<uint8_t>(magic));
  w.u8(attributes);
  if (magic == 1) w.be64(static_cast<uint64_t>(timestamp));
  w.be32(static_cast<uint32_t>(key_len));
  if (key_len > 0) w.raw(key, static_cast<size_t>(key_len));
  w.be32(static_cast<uint32_t>(value_len));
  if (value_len > 0) w.raw(value, static_cast<size_t>(value_len));
  wire::store_be32(o.data() + 8, static_cast<uint32_t>(o.size() - kLogOverhead));
  wire::store_be32(o.data() + 12, static_cast<uint32_t>(::crc32(0, o.data() + 16, static_cast<uInt>(o.size() - 16))));
  return o;
}

const uint8_t* bytes_of(const std::optional<std::string>& s) {
  return s ? reinterpret_cast<const uint8_t*>(s->data()) : nullptr;
}
int32_t length_of(const std::optional<std::string>& s) { return s ? static_cast<int32_t>(s->size()) : -1; }

}  // namespace

std::vector<uint8_t> encode_record_batch(const BatchSpec& b) {
  std::vector<uint8_t> body, rec;
  wire::Writer bw(body), rw(rec);
  int64_t max_delta = 0;
  for (size_t i = 0; i < b.records.size(); ++i) {
    const RecordSpec& r = b.records[i];
    max_delta = std::max(max_delta, r.timestamp_delta);
    rec.clear();
    rw.u8(0);  // attributes
    rw.varint(r.timestamp_delta);
    rw.varint(static_cast<int64_t>(i));  // offset delta
    put_var_bytes(rw, r.key);
    put_var_bytes(rw, r.value);
    rw.varint(static_cast<int64_t>(r.headers.size()));
    for (const RecordHeaderSpec& h : r.headers) {
      put_var_bytes(rw, h.key);
      put_var_bytes(rw, h.value);
    }
    bw.varint(static_cast<int64_t>(rec.size()));
    bw.raw(rec.data(), rec.size());
  }
  std::vector<uint8_t> payload = compress(b.codec, body, b.snappy_xerial, b.frame_content_size, false);
  uint16_t attributes = static_cast<uint16_t>(static_cast<uint16_t>(b.codec) | (b.transactional ? 0x10 : 0) |
                                              (b.control ? 0x20 : 0));
  int32_t count = static_cast<int32_t>(b.records.size());
  std::vector<uint8_t> o;
  o.reserve(kBatchHeader + payload.size());
  wire::Writer w(o);
  w.be64(static_cast<uint64_t>(b.base_offset));
  w.be32(0);  // batch length
  w.be32(static_cast<uint32_t>(b.partition_leader_epoch));
  w.u8(2);
  w.be32(0);  // crc
  w.be16(attributes);
  w.be32(static_cast<uint32_t>(count > 0 ? count - 1 : 0));
  w.be64(static_cast<uint64_t>(b.base_timestamp));
  w.be64(static_cast<uint64_t>(b.base_timestamp + max_delta));
  w.be64(static_cast<uint64_t>(b.producer_id));
  w.be16(static_cast<uint16_t>(b.producer_epoch));
  w.be32(static_cast<uint32_t>(b.base_sequence));
  w.be32(static_cast<uint32_t>(count));
  w.raw(payload.data(), payload.size());
  wire::store_be32(o.data() + 8, static_cast<uint32_t>(o.size() - kLogOverhead));
  wire::store_be32(o.data() + 17, crc32c({o.data() + 21, o.size() - 21}));
  return o;
}

std::vector<uint8_t> encode_legacy_wrapper(int magic, int64_t offset, int64_t timestamp,
                                           std::span<const uint8_t> message_set, Codec codec) {
  std::vector<uint8_t> value = compress(codec, message_set, true, false, magic == 0);
  return legacy_message(magic, offset, timestamp, static_cast<uint8_t>(codec), nullptr, -1, value.data(),
                        static_cast<int32_t>(value.size()));
}

std::vector<uint8_t> encode_legacy_message(int magic, int64_t offset, int64_t timestamp,
                                           const std::optional<std::string>& key,
                                           const std::optional<std::string>& value, Codec codec) {
  if (magic != 0 && magic != 1) throw std::invalid_argument("legacy messages have magic 0 or 1");
  if (codec == Codec::None)
    return legacy_message(magic, offset, timestamp, 0, bytes_of(key), length_of(key), bytes_of(value),
                          length_of(value));
  std::vector<uint8_t> inner = encode_legacy_message(magic, magic == 0 ? offset : 0, timestamp, key, value);
  return encode_legacy_wrapper(magic, offset, timestamp, inner, codec);
}

}  // namespace kwire
