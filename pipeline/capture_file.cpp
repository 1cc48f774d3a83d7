#include "pipeline/capture_file.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/packet.hpp"
#include "tls/keylog.hpp"
#include "tls/tls_layer.hpp"

namespace kwire {

namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

struct BpfProgram {
  bpf_program prog{};
  bool compiled = false;
  ~BpfProgram() {
    if (compiled) pcap_freecode(&prog);
  }
};

constexpr size_t kReadBufferSize = 1 << 20;

// The packet records of a classic pcap file, read in place through a
// sliding memory map instead of copied by read(2), stdio and libpcap in turn
// (those copies were about a quarter of `kwire decode -c 0` on a capture of
// small messages). libpcap still opens the file and reads its header (link
// type, precision, byte order); this reads the records after it as libpcap
// would, and pcapng files stay with libpcap. Memory: one window of the file
// mapped at a time, whatever the file's size.
class MappedPcapRecords {
 public:
  static constexpr uint32_t kMagicMicro = 0xa1b2c3d4, kMagicNano = 0xa1b23c4d;
  static constexpr off_t kFileHeader = 24;
  static constexpr size_t kWindow = 8u << 20;
  static constexpr uint32_t kMaxCaplen = 262144;  // libpcap's largest snapshot length

  // Null when `fd` is not a regular file holding a classic pcap.
  static std::unique_ptr<MappedPcapRecords> open(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < kFileHeader) return nullptr;
    uint8_t head[4];
    if (pread(fd, head, 4, 0) != 4) return nullptr;
    uint32_t magic;
    std::memcpy(&magic, head, 4);
    auto r = std::unique_ptr<MappedPcapRecords>(new MappedPcapRecords(fd, st.st_size));
    if (magic == kMagicMicro || magic == kMagicNano) r->swapped_ = false;
    else if (__builtin_bswap32(magic) == kMagicMicro || __builtin_bswap32(magic) == kMagicNano) r->swapped_ = true;
    else return nullptr;
    r->nanos_ = (r->swapped_ ? __builtin_bswap32(magic) : magic) == kMagicNano;
    // A file system that cannot map files is read through libpcap instead.
    if (!r->at(kFileHeader, 0)) return nullptr;
    return r;
  }
  ~MappedPcapRecords() { unmap(); }

  // 1: a packet (valid until the next call); 0: end of file; -1: a cut or
  // corrupt record, `error` says what.
  int next(pcap_pkthdr& hdr, const uint8_t*& data, std::string& error) {
    if (pos_ == size_) return 0;
    if (size_ - pos_ < 16) {
      error = "truncated dump file; tried to read 16 header bytes, only got " + std::to_string(size_ - pos_);
      return -1;
    }
    const uint8_t* h = at(pos_, 16);
    if (!h) { error = "cannot map the capture file: " + std::string(std::strerror(errno)); return -1; }
    uint32_t f[4];
    std::memcpy(f, h, 16);
    if (swapped_)
      for (auto& x : f) x = __builtin_bswap32(x);
    if (f[2] > kMaxCaplen) {
      error = "invalid packet capture length " + std::to_string(f[2]) + ", bigger than the largest " +
              std::to_string(kMaxCaplen);
      return -1;
    }
    if (static_cast<uint64_t>(size_ - pos_ - 16) < f[2]) {
      error = "truncated dump file; tried to read " + std::to_string(f[2]) + " captured bytes, only got " +
              std::to_string(size_ - pos_ - 16);
      return -1;
    }
    data = at(pos_ + 16, f[2]);
    if (!data) { error = "cannot map the capture file: " + std::string(std::strerror(errno)); return -1; }
    hdr.ts.tv_sec = static_cast<time_t>(f[0]);
    hdr.ts.tv_usec = static_cast<suseconds_t>(nanos_ ? f[1] / 1000 : f[1]);
    hdr.caplen = f[2];
    hdr.len = f[3];
    pos_ += 16 + static_cast<off_t>(f[2]);
    return 1;
  }

 private:
  MappedPcapRecords(int fd, off_t size) : fd_(fd), size_(size), pos_(kFileHeader) {}

  // `n` bytes at file offset `off`, mapping the window that holds them.
  const uint8_t* at(off_t off, size_t n) {
    if (map_ && off >= map_off_ && off + static_cast<off_t>(n) <= map_off_ + static_cast<off_t>(map_len_))
      return map_ + (off - map_off_);
    unmap();
    static const off_t page = sysconf(_SC_PAGESIZE);
    map_off_ = off - off % page;
    map_len_ = static_cast<size_t>(std::min<off_t>(size_ - map_off_, static_cast<off_t>(kWindow)));
    map_len_ = std::max(map_len_, static_cast<size_t>(off - map_off_) + n);
    void* m = mmap(nullptr, map_len_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, map_off_);
    if (m == MAP_FAILED) return nullptr;
    map_ = static_cast<const uint8_t*>(m);
    return map_ + (off - map_off_);
  }
  void unmap() {
    if (map_) munmap(const_cast<uint8_t*>(map_), map_len_);
    map_ = nullptr;
  }

  int fd_;
  off_t size_;
  off_t pos_;
  bool swapped_ = false;
  bool nanos_ = false;
  const uint8_t* map_ = nullptr;
  off_t map_off_ = 0;
  size_t map_len_ = 0;
};

}  // namespace

bool read_capture_file(const std::string& path, const CaptureOptions& opts, StreamSink& sink,
                       CaptureStats& stats, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? "standard input" : "capture file '" + path + "'";
  // Our own FILE with a 1 MiB buffer: stdio's default (4 KiB) costs a read(2)
  // every few packets. glibc needs the buffer given, not just its size; it
  // must outlive the pcap handle that closes the FILE (declared after it).
  // Not zeroed: a mapped file uses only the few bytes libpcap reads of its header.
  auto file_buffer = std::make_unique_for_overwrite<char[]>(kReadBufferSize);
  FILE* file = from_stdin ? fdopen(dup(0), "rb") : std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot read " + name + ": " + std::strerror(errno);
    return false;
  }
  std::setvbuf(file, file_buffer.get(), _IOFBF, kReadBufferSize);
  PcapHandle pcap(pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_MICRO, errbuf));
  if (!pcap) {
    std::fclose(file);  // pcap owns the FILE only once it opened it
    error = "cannot read " + name + ": " + errbuf;
    return false;
  }
  const int dlt = pcap_datalink(pcap.get());
  if (!is_supported_link_type(dlt)) {
    error = name + ": unsupported " + link_type_name(dlt);
    return false;
  }
  // The filter is applied here rather than with pcap_setfilter so that packet
  // numbers stay those of the file (as Wireshark shows them).
  BpfProgram filter;
  if (!opts.bpf_filter.empty()) {
    if (pcap_compile(pcap.get(), &filter.prog, opts.bpf_filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      error = "invalid BPF filter '" + opts.bpf_filter + "': " + pcap_geterr(pcap.get());
      return false;
    }
    filter.compiled = true;
  }

  // Keys for the TLS layer: the key logs named, then the file's secrets
  // blocks. A line that cannot be read is reported and the rest is used.
  TlsKeyLog keys;
  std::vector<std::string> warnings;
  for (const std::string& log : opts.tls_keylogs) {
    if (!keys.add_file(log, warnings, error)) return false;
  }
  if (opts.tls && !from_stdin && read_pcapng_secrets(path, keys, warnings, error) < 0) return false;
  for (const std::string& w : warnings) sink.on_error(PacketMeta{}, "TLS key log", w);
  std::optional<TlsLayer> tls;
  if (opts.tls) tls.emplace(sink, keys);
  StreamSink& first = opts.tls ? static_cast<StreamSink&>(*tls) : sink;

  PacketPipeline pipeline(dlt, opts, first, stats);
  PacketMeta meta;
  auto packet = [&](const pcap_pkthdr* hdr, const u_char* data) {
    meta.number += 1;
    meta.ts_sec = hdr->ts.tv_sec;
    meta.ts_usec = static_cast<int32_t>(hdr->ts.tv_usec);
    ++stats.packets;
    stats.bytes += hdr->caplen;
    if (filter.compiled && pcap_offline_filter(&filter.prog, hdr, data) == 0) return;
    pipeline.add(data, hdr->caplen, hdr->len, meta);
  };
  // A cut or corrupt file: keep what was read, report where it ended.
  auto damaged = [&](const std::string& why) {
    PacketMeta at = meta;
    at.number = meta.number + 1;
    ++stats.errors;
    stats.file_damaged = true;
    sink.on_error(at, "packet " + std::to_string(at.number), why);
  };
  if (auto mapped = from_stdin ? nullptr : MappedPcapRecords::open(fileno(file))) {
    pcap_pkthdr hdr{};
    const uint8_t* data = nullptr;
    std::string why;
    for (int rc; (rc = mapped->next(hdr, data, why)) != 0;) {
      if (rc < 0) { damaged(why); break; }
      packet(&hdr, data);
    }
  } else {
    for (;;) {
      pcap_pkthdr* hdr = nullptr;
      const u_char* data = nullptr;
      const int rc = pcap_next_ex(pcap.get(), &hdr, &data);
      if (rc == PCAP_ERROR_BREAK) break;  // end of file
      if (rc == 0) continue;              // (live captures only)
      if (rc != 1) { damaged(pcap_geterr(pcap.get())); break; }
      packet(hdr, data);
    }
  }
  pipeline.finish();
  return true;
}

}  // namespace kwire
