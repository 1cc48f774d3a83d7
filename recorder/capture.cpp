#include "recorder/capture.hpp"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <array>
#include <memory>

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

}  // namespace kwire
