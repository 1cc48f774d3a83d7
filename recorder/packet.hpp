// Decoding one captured frame down to its TCP segment: link layer (Ethernet
// with VLAN tags, Linux cooked v1/v2, BSD loopback, raw IP), IPv4/IPv6 and the
// TCP header. Pure and allocation-free: the result points into the frame.
#pragma once

#include <cstdint>
#include <span>

#include "recorder/capture.hpp"

namespace kwire {

// TCP header flag bits.
enum TcpFlag : uint8_t {
  kTcpFin = 0x01,
  kTcpSyn = 0x02,
  kTcpRst = 0x04,
  kTcpPsh = 0x08,
  kTcpAck = 0x10,
};

struct TcpSegment {
  Endpoint src;
  Endpoint dst;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;
  std::span<const uint8_t> payload;  // the captured part of the payload
  uint32_t payload_length = 0;       // on the wire; larger than payload.size() when cut by snaplen
};

enum class PacketKind : uint8_t {
  Tcp,        // `tcp` is filled in
  Skipped,    // not IP, or not TCP: nothing to report
  Fragment,   // an IP fragment of a TCP datagram (unsupported); `fragment_id` set
  Malformed,  // `problem` says what is wrong
};

struct DecodedPacket {
  PacketKind kind = PacketKind::Skipped;
  TcpSegment tcp;             // Tcp; for Fragment only src/dst addresses are set
  const char* problem = "";   // Malformed and Fragment: static text
  uint32_t fragment_id = 0;   // Fragment: the IP identification
};

// True for the link-layer types decode_packet understands (a DLT_ value as
// returned by pcap_datalink).
bool is_supported_link_type(int dlt);

// Decodes `frame` (the captured bytes) of link-layer type `dlt`. `wire_length`
// is the frame's original length, used to tell a snaplen cut from a bad length.
void decode_packet(int dlt, std::span<const uint8_t> frame, uint32_t wire_length, DecodedPacket& out);

}  // namespace kwire
