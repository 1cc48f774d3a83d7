#include "recorder/capture.hpp"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unistd.h>

#include "recorder/packet.hpp"
#include "recorder/tcp_reassembler.hpp"

namespace kwire {

size_t Endpoint::format(char* buf) const {
  char* p = buf;
  auto decimal = [&p](unsigned v) {  // 0-65535
    char d[5];
    int n = 0;
    do { d[n++] = static_cast<char>('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = d[--n];
  };
  if (!v6) {
    for (int i = 0; i < 4; ++i) {
      if (i) *p++ = '.';
      decimal(addr[i]);
    }
  } else {
    char text[INET6_ADDRSTRLEN] = {};
    if (!inet_ntop(AF_INET6, addr.data(), text, sizeof text)) text[0] = '\0';
    *p++ = '[';
    for (const char* t = text; *t; ++t) *p++ = *t;
    *p++ = ']';
  }
  *p++ = ':';
  decimal(port);
  return static_cast<size_t>(p - buf);
}

std::string Endpoint::str() const {
  char buf[kTextSize];
  return std::string(buf, format(buf));
}

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

}  // namespace

std::string link_type_name(int dlt) {
  std::string out = "link-layer type ";
  if (const char* name = pcap_datalink_val_to_name(dlt)) {
    out += "DLT_";
    out += name;
    out += ' ';
  }
  out += '(';
  out += std::to_string(dlt);
  if (const char* desc = pcap_datalink_val_to_description(dlt)) {
    out += ", ";
    out += desc;
  }
  out += ')';
  return out;
}

namespace {

// An IP datagram that was reported as fragmented; fragments of one datagram
// usually travel together, so a few recent ones are enough to report each once.
struct FragmentSeen {
  Endpoint src;
  Endpoint dst;
  uint32_t id = 0;
  bool operator==(const FragmentSeen&) const = default;
};

class FragmentLog {
 public:
  // True the first time (recently) this datagram is seen.
  bool first(const FragmentSeen& f) {
    for (const auto& r : recent_) {
      if (r == f) return false;
    }
    recent_[next_++ % recent_.size()] = f;
    return true;
  }

 private:
  std::array<FragmentSeen, 16> recent_{};
  size_t next_ = 0;
};

}  // namespace

struct PacketPipeline::Fragments : FragmentLog {};

PacketPipeline::PacketPipeline(int dlt, const CaptureOptions& opts, StreamSink& sink, CaptureStats& stats)
    : dlt_(dlt),
      sink_(sink),
      stats_(stats),
      reassembler_(std::make_unique<TcpReassembler>(sink, opts.max_buffered_per_direction)),
      decoded_(std::make_unique<DecodedPacket>()),
      fragments_(std::make_unique<Fragments>()),
      connections_before_(stats.connections) {}

PacketPipeline::~PacketPipeline() = default;

const DecodedPacket& PacketPipeline::add(const uint8_t* data, uint32_t caplen, uint32_t wire_len,
                                         const PacketMeta& meta) {
  DecodedPacket& decoded = *decoded_;
  decode_packet(dlt_, std::span<const uint8_t>(data, caplen), wire_len, decoded);
  auto report = [&](const std::string& reason) {
    ++stats_.errors;
    sink_.on_error(meta, "packet " + std::to_string(meta.number), reason);
  };
  switch (decoded.kind) {
    case PacketKind::Tcp:
      ++stats_.tcp_packets;
      reassembler_->add(decoded.tcp, meta);
      stats_.connections = connections_before_ + reassembler_->connections();
      break;
    case PacketKind::Skipped:
      break;
    case PacketKind::Fragment:
      if (fragments_->first(FragmentSeen{decoded.tcp.src, decoded.tcp.dst, decoded.fragment_id})) report(decoded.problem);
      break;
    case PacketKind::Malformed:
      report(decoded.problem);
      break;
  }
  return decoded;
}

void PacketPipeline::finish() { reassembler_->close_all(); }

constexpr size_t kReadBufferSize = 1 << 20;

bool read_capture_file(const std::string& path, const CaptureOptions& opts, StreamSink& sink,
                       CaptureStats& stats, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? "standard input" : "capture file '" + path + "'";
  // Our own FILE with a 1 MiB buffer: stdio's default (4 KiB) costs a read(2)
  // every few packets. glibc needs the buffer given, not just its size; it
  // must outlive the pcap handle that closes the FILE (declared after it).
  auto file_buffer = std::make_unique<char[]>(kReadBufferSize);
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

  PacketPipeline pipeline(dlt, opts, sink, stats);
  PacketMeta meta;
  for (;;) {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(pcap.get(), &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) break;  // end of file
    if (rc == 0) continue;              // (live captures only)
    if (rc != 1) {
      // A cut or corrupt file: keep what was read, report where it ended.
      PacketMeta at = meta;
      at.number = meta.number + 1;
      ++stats.errors;
      stats.file_damaged = true;
      sink.on_error(at, "packet " + std::to_string(at.number), pcap_geterr(pcap.get()));
      break;
    }
    meta.number += 1;
    meta.ts_sec = hdr->ts.tv_sec;
    meta.ts_usec = static_cast<int32_t>(hdr->ts.tv_usec);
    ++stats.packets;
    stats.bytes += hdr->caplen;
    if (filter.compiled && pcap_offline_filter(&filter.prog, hdr, data) == 0) continue;
    pipeline.add(data, hdr->caplen, hdr->len, meta);
  }
  pipeline.finish();
  return true;
}

}  // namespace kwire
