#include "recorder/packet.hpp"

#include <pcap/dlt.h>

#include <algorithm>
#include <cstring>

#include "wire/wire.hpp"

namespace kwire {
namespace {

// Raw IP has three numbers: DLT_RAW is 12 on most systems and 14 on OpenBSD
// and BSD/OS; LINKTYPE_RAW (101) is what files carry and libpcap maps it.
constexpr int kDltRaw = 12;
constexpr int kDltRawBsdOs = 14;
constexpr int kLinktypeRaw = 101;
constexpr int kDltIpv4 = 228;
constexpr int kDltIpv6 = 229;
constexpr int kDltLinuxSll2 = 276;

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86DD;
constexpr uint8_t kIpProtoTcp = 6;

using wire::load_be16;
using wire::load_be32;

inline bool is_vlan_ethertype(uint16_t t) {
  return t == 0x8100 || t == 0x88A8 || t == 0x9100 || t == 0x9200;
}

inline void malformed(DecodedPacket& out, const char* why) {
  out.kind = PacketKind::Malformed;
  out.problem = why;
}

inline void set_endpoint(Endpoint& e, const uint8_t* addr, bool v6) {
  e.addr = {};
  std::memcpy(e.addr.data(), addr, v6 ? 16 : 4);
  e.v6 = v6;
  e.port = 0;
}

// The TCP header at `p`: `captured` bytes present, `wire` bytes on the wire.
void decode_tcp(const uint8_t* p, size_t captured, size_t wire, DecodedPacket& out) {
  if (wire < 20) return malformed(out, "TCP header longer than the IP payload");
  if (captured < 20) return malformed(out, "TCP header cut short by the capture snaplen");
  size_t doff = size_t{static_cast<uint8_t>(p[12] >> 4)} * 4;
  if (doff < 20 || doff > wire) return malformed(out, "bad TCP data offset");
  TcpSegment& t = out.tcp;
  t.src.port = load_be16(p);
  t.dst.port = load_be16(p + 2);
  t.seq = load_be32(p + 4);
  t.ack = load_be32(p + 8);
  t.flags = p[13];
  t.payload_length = static_cast<uint32_t>(wire - doff);
  t.payload = captured > doff ? std::span<const uint8_t>(p + doff, captured - doff) : std::span<const uint8_t>();
  out.kind = PacketKind::Tcp;
}

// `n` captured bytes of an IP datagram; `cut` when the frame was truncated by
// the snaplen (so a length field larger than what is present is expected).
void decode_ipv4(const uint8_t* p, size_t n, bool cut, DecodedPacket& out) {
  if (n < 20) return malformed(out, "truncated IPv4 header");
  if (p[0] >> 4 != 4) return malformed(out, "bad IPv4 version");
  size_t ihl = size_t{static_cast<uint8_t>(p[0] & 0x0F)} * 4;
  if (ihl < 20) return malformed(out, "bad IPv4 header length");
  if (n < ihl) return malformed(out, "truncated IPv4 header");
  if (p[9] != kIpProtoTcp) return;  // Skipped
  size_t total = load_be16(p + 2);
  if (total == 0 && !cut) total = n;  // segmentation offload on the capturing host
  if (total < ihl) return malformed(out, "IPv4 total length smaller than its header");
  if (total > n && !cut) return malformed(out, "IPv4 total length beyond the end of the packet");
  set_endpoint(out.tcp.src, p + 12, false);
  set_endpoint(out.tcp.dst, p + 16, false);
  uint16_t frag = load_be16(p + 6);
  if ((frag & 0x3FFF) != 0) {  // more-fragments flag or a fragment offset
    out.kind = PacketKind::Fragment;
    out.problem = "IPv4 fragment of a TCP segment (IP reassembly is not supported)";
    out.fragment_id = load_be16(p + 4);
    return;
  }
  size_t present = std::min(n, total);  // drops Ethernet padding
  decode_tcp(p + ihl, present - ihl, total - ihl, out);
}

void decode_ipv6(const uint8_t* p, size_t n, bool cut, DecodedPacket& out) {
  if (n < 40) return malformed(out, "truncated IPv6 header");
  if (p[0] >> 4 != 6) return malformed(out, "bad IPv6 version");
  size_t total = 40 + size_t{load_be16(p + 4)};
  if (total == 40 && !cut) total = n;  // jumbogram or segmentation offload
  if (total > n && !cut) return malformed(out, "IPv6 payload length beyond the end of the packet");
  size_t present = std::min(n, total);
  uint8_t next = p[6];
  size_t off = 40;
  for (;;) {
    switch (next) {
      case kIpProtoTcp:
        set_endpoint(out.tcp.src, p + 8, true);
        set_endpoint(out.tcp.dst, p + 24, true);
        return decode_tcp(p + off, present - off, total - off, out);
      case 0:    // hop-by-hop options
      case 43:   // routing
      case 60:   // destination options
      case 51: { // authentication header
        if (present < off + 2) return malformed(out, "truncated IPv6 extension header");
        size_t len = next == 51 ? (size_t{p[off + 1]} + 2) * 4 : (size_t{p[off + 1]} + 1) * 8;
        next = p[off];
        off += len;
        if (off > total) return malformed(out, "IPv6 extension header beyond the payload");
        if (off > present) return malformed(out, "IPv6 extension header cut short by the capture snaplen");
        break;
      }
      case 44: {  // fragment
        if (present < off + 8) return malformed(out, "truncated IPv6 fragment header");
        if (p[off] != kIpProtoTcp) return;  // Skipped
        set_endpoint(out.tcp.src, p + 8, true);
        set_endpoint(out.tcp.dst, p + 24, true);
        out.kind = PacketKind::Fragment;
        out.problem = "IPv6 fragment of a TCP segment (IP reassembly is not supported)";
        out.fragment_id = load_be32(p + off + 4);
        return;
      }
      default:
        return;  // Skipped: not TCP
    }
  }
}

void decode_ip(uint16_t ethertype, const uint8_t* p, size_t n, bool cut, DecodedPacket& out) {
  if (ethertype == kEtherIpv4) return decode_ipv4(p, n, cut, out);
  if (ethertype == kEtherIpv6) return decode_ipv6(p, n, cut, out);
}

// Raw IP: the version nibble decides.
void decode_raw(const uint8_t* p, size_t n, bool cut, DecodedPacket& out) {
  if (n < 1) return malformed(out, "empty raw IP packet");
  switch (p[0] >> 4) {
    case 4: return decode_ipv4(p, n, cut, out);
    case 6: return decode_ipv6(p, n, cut, out);
    default: return malformed(out, "raw IP packet with an unknown IP version");
  }
}

}  // namespace

bool is_supported_link_type(int dlt) {
  switch (dlt) {
    case DLT_EN10MB:
    case DLT_LINUX_SLL:
    case kDltLinuxSll2:
    case DLT_NULL:
    case DLT_LOOP:
    case kDltRaw:
    case kDltRawBsdOs:
    case kLinktypeRaw:
    case kDltIpv4:
    case kDltIpv6:
      return true;
    default:
      return false;
  }
}

void decode_packet(int dlt, std::span<const uint8_t> frame, uint32_t wire_length, DecodedPacket& out) {
  out.kind = PacketKind::Skipped;
  out.problem = "";
  const uint8_t* p = frame.data();
  const size_t n = frame.size();
  const bool cut = wire_length > n;
  size_t off = 0;
  uint16_t ethertype = 0;
  switch (dlt) {
    case DLT_EN10MB:
      if (n < 14) return malformed(out, "truncated Ethernet header");
      ethertype = load_be16(p + 12);
      off = 14;
      break;
    case DLT_LINUX_SLL:
      if (n < 16) return malformed(out, "truncated Linux cooked (SLL) header");
      ethertype = load_be16(p + 14);
      off = 16;
      break;
    case kDltLinuxSll2:
      if (n < 20) return malformed(out, "truncated Linux cooked (SLL2) header");
      ethertype = load_be16(p);
      off = 20;
      break;
    case DLT_NULL:
    case DLT_LOOP: {
      if (n < 4) return malformed(out, "truncated loopback header");
      // The address family, in the capturing host's byte order for DLT_NULL
      // and network order for DLT_LOOP; families are small, so whichever
      // reading fits in 16 bits is the right one.
      uint32_t le = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
      uint32_t family = (le & 0xFFFF0000u) == 0 ? le : load_be32(p);
      if (family == 2) return decode_ipv4(p + 4, n - 4, cut, out);
      if (family == 10 || family == 24 || family == 28 || family == 30) {
        return decode_ipv6(p + 4, n - 4, cut, out);
      }
      return;  // Skipped: another family
    }
    case kDltRaw:
    case kDltRawBsdOs:
    case kLinktypeRaw:
      return decode_raw(p, n, cut, out);
    case kDltIpv4:
      return decode_ipv4(p, n, cut, out);
    case kDltIpv6:
      return decode_ipv6(p, n, cut, out);
    default:
      return malformed(out, "unsupported link-layer type");
  }
  while (is_vlan_ethertype(ethertype)) {
    if (n < off + 4) return malformed(out, "truncated VLAN tag");
    ethertype = load_be16(p + off + 2);
    off += 4;
  }
  decode_ip(ethertype, p + off, n - off, cut, out);
}

}  // namespace kwire
