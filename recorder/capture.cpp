#include "recorder/capture.hpp"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "recorder/packet.hpp"
#include "recorder/tcp_reassembler.hpp"

namespace kwire {

std::string Endpoint::str() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr.data(), buf, sizeof buf)) buf[0] = '\0';
  std::string out;
  out.reserve(INET6_ADDRSTRLEN + 8);
  if (v6) out += '[';
  out += buf;
  if (v6) out += ']';
  out += ':';
  out += std::to_string(port);
  return out;
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

constexpr size_t kReadBufferSize = 1 << 20;

bool read_capture_file(const std::string& path, const CaptureOptions& opts, StreamSink& sink,
                       CaptureStats& stats, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // Our own FILE with a 1 MiB buffer: stdio's default (4 KiB) costs a read(2)
  // every few packets. glibc needs the buffer given, not just its size; it
  // must outlive the pcap handle that closes the FILE (declared after it).
  auto file_buffer = std::make_unique<char[]>(kReadBufferSize);
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot read capture file '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::setvbuf(file, file_buffer.get(), _IOFBF, kReadBufferSize);
  PcapHandle pcap(pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_MICRO, errbuf));
  if (!pcap) {
    std::fclose(file);  // pcap owns the FILE only once it opened it
    error = "cannot read capture file '" + path + "': " + errbuf;
    return false;
  }
  const int dlt = pcap_datalink(pcap.get());
  if (!is_supported_link_type(dlt)) {
    error = "capture file '" + path + "': unsupported " + link_type_name(dlt);
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

  TcpReassembler reassembler(sink, opts.max_buffered_per_direction);
  FragmentLog fragments;
  DecodedPacket decoded;
  PacketMeta meta;
  const uint64_t connections_before = stats.connections;
  auto report = [&](const PacketMeta& m, const std::string& where, const std::string& reason) {
    ++stats.errors;
    sink.on_error(m, where, reason);
  };

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
      report(at, "packet " + std::to_string(at.number), pcap_geterr(pcap.get()));
      break;
    }
    meta.number += 1;
    meta.ts_sec = hdr->ts.tv_sec;
    meta.ts_usec = static_cast<int32_t>(hdr->ts.tv_usec);
    ++stats.packets;
    stats.bytes += hdr->caplen;
    if (filter.compiled && pcap_offline_filter(&filter.prog, hdr, data) == 0) continue;

    decode_packet(dlt, std::span<const uint8_t>(data, hdr->caplen), hdr->len, decoded);
    switch (decoded.kind) {
      case PacketKind::Tcp:
        ++stats.tcp_packets;
        reassembler.add(decoded.tcp, meta);
        stats.connections = connections_before + reassembler.connections();
        break;
      case PacketKind::Skipped:
        break;
      case PacketKind::Fragment:
        if (fragments.first(FragmentSeen{decoded.tcp.src, decoded.tcp.dst, decoded.fragment_id})) {
          report(meta, "packet " + std::to_string(meta.number), decoded.problem);
        }
        break;
      case PacketKind::Malformed:
        report(meta, "packet " + std::to_string(meta.number), decoded.problem);
        break;
    }
  }
  reassembler.close_all();
  return true;
}

}  // namespace kwire
