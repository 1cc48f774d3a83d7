// SyntheticCapture writes made-up TCP conversations to a pcap or pcapng file:
// handshakes, data segments with consistent sequence and acknowledgement
// numbers, FIN/RST, over Ethernet (optionally VLAN-tagged), Linux cooked
// v1/v2, BSD loopback or raw IP. It can also misbehave on purpose: reorder,
// repeat or drop segments, cut frames to a snaplen, fragment IP datagrams.
// Tests use it to produce captures for read_capture_file; nothing else does.
//
//   SyntheticCapture cap(dir / "x.pcap");
//   uint32_t c = cap.connect(make_endpoint("10.0.0.1", 40000), make_endpoint("10.0.0.2", 9092));
//   cap.send(c, StreamSide::FromClient, request);
//   cap.send(c, StreamSide::FromServer, response);
//   cap.close(c);
//   cap.finish();  // or let the destructor do it
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/capture.hpp"

struct pcap;
struct pcap_dumper;

namespace kwire {

// "10.0.0.1" or "::1" and a port; throws std::invalid_argument on a bad address.
Endpoint make_endpoint(std::string_view ip, uint16_t port);

enum class CaptureFormat : uint8_t { Pcap, PcapNg };

enum class LinkLayer : uint8_t {
  Ethernet,   // DLT_EN10MB, tagged with SyntheticCaptureOptions::vlan_ids
  LinuxSll,   // DLT_LINUX_SLL (Linux "any" device, v1)
  LinuxSll2,  // DLT_LINUX_SLL2
  Null,       // DLT_NULL: 4-byte address family in the capturing host's byte order
  Loop,       // DLT_LOOP: 4-byte address family in network byte order
  Raw,        // raw IP (LINKTYPE_RAW, 101)
  Ipv4,       // LINKTYPE_IPV4 (228): IPv4 endpoints only
  Ipv6,       // LINKTYPE_IPV6 (229): IPv6 endpoints only
};

struct SyntheticCaptureOptions {
  CaptureFormat format = CaptureFormat::Pcap;
  LinkLayer link = LinkLayer::Ethernet;
  // Ethernet: VLAN IDs, outermost first. One gives an 802.1Q tag, two give
  // QinQ (an 802.1ad outer tag, 0x88A8, around an 802.1Q one).
  std::vector<uint16_t> vlan_ids;
  // Null: the family is written as by a host of the other byte order
  // (big-endian here, since tests run little-endian).
  bool null_family_swapped = false;
  // Null and Loop: the AF_INET6 value (10 Linux, 24 NetBSD/OpenBSD, 28 FreeBSD, 30 macOS).
  uint32_t loopback_ipv6_family = 24;
  // IPv6: a hop-by-hop and a destination options header before the TCP header.
  bool ipv6_extension_headers = false;
  // IPv4: a Router Alert option, making the header 24 bytes.
  bool ipv4_options = false;
  // Ethernet: frames shorter than 60 bytes are padded with zeros, as on the wire.
  bool ethernet_padding = false;
  // TCP options: MSS, SACK permitted, window scale and timestamps on SYNs,
  // timestamps on every other segment.
  bool tcp_options = true;
  // Frames longer than this are cut (the record keeps the original length).
  uint32_t snaplen = 262144;
  // Nanosecond timestamps in the file instead of microseconds.
  bool nanosecond = false;
  // PcapNg only: write this LINKTYPE_ number in the interface description
  // instead of the one `link` implies (frames are still built for `link`).
  int linktype_override = -1;
  // Time of the first packet and the step between packets.
  std::chrono::nanoseconds start_time{std::chrono::seconds(1'700'000'000)};
  std::chrono::nanoseconds time_step{std::chrono::milliseconds(1)};
};

struct ConnectOptions {
  uint32_t client_isn = 1000;
  uint32_t server_isn = 500000;
  // false: the capture starts mid-connection; no SYN, SYN-ACK or ACK is written.
  bool handshake = true;
};

class SyntheticCapture {
 public:
  // Creates (truncates) `path`; throws std::runtime_error when it cannot.
  explicit SyntheticCapture(const std::string& path, SyntheticCaptureOptions opts = {});
  ~SyntheticCapture();
  SyntheticCapture(const SyntheticCapture&) = delete;
  SyntheticCapture& operator=(const SyntheticCapture&) = delete;

  // A new connection; writes the three-way handshake unless opts.handshake is
  // false. Returns a handle for the other calls.
  uint32_t connect(const Endpoint& client, const Endpoint& server, const ConnectOptions& opts = {});

  // `payload` as the next bytes of `side`'s stream, in segments of at most
  // `segment_size` bytes, each acknowledging everything the peer sent.
  void send(uint32_t conn, StreamSide side, std::span<const uint8_t> payload, size_t segment_size = 1460);

  // Like send(), but writes the segments in `order`, a list of segment indexes
  // (0 = the first `segment_size` bytes). Swap indexes to reorder ({0, 2, 1}),
  // repeat one for a retransmission ({0, 1, 1, 2}), leave one out for a
  // segment lost before the capture point ({0, 2}). The stream still advances
  // by the whole payload.
  void send(uint32_t conn, StreamSide side, std::span<const uint8_t> payload, size_t segment_size,
            const std::vector<size_t>& order);

  // One segment carrying `payload` at `stream_offset` of `side`'s stream (0 is
  // the first byte after the SYN), for overlaps and retransmissions of any
  // shape. The stream's next offset becomes the larger of its current value
  // and the segment's end.
  void send_at(uint32_t conn, StreamSide side, uint64_t stream_offset, std::span<const uint8_t> payload);

  // One TCP segment carrying `payload`, split into two IP fragments; the first
  // carries the TCP header and `first_fragment_bytes` of the payload (rounded
  // so that the fragment offset is a multiple of 8). The stream advances.
  void send_fragmented(uint32_t conn, StreamSide side, std::span<const uint8_t> payload,
                       size_t first_fragment_bytes);

  // FIN from `first`, FIN from the other side, final ACK.
  void close(uint32_t conn, StreamSide first = StreamSide::FromClient);
  // A FIN from `side` alone (a half-close).
  void fin(uint32_t conn, StreamSide side);
  // RST from `from`.
  void reset(uint32_t conn, StreamSide from);

  // A UDP datagram (not TCP: readers must skip it).
  void send_udp(const Endpoint& from, const Endpoint& to, std::span<const uint8_t> payload);
  // A frame of the file's link type, written as given.
  void write_frame(std::span<const uint8_t> frame);

  void set_time_step(std::chrono::nanoseconds step) { opts_.time_step = step; }
  void advance_time(std::chrono::nanoseconds by) { now_ += by; }

  // Packets written so far (the next one is number packets() + 1).
  uint64_t packets() const { return packets_; }
  // Flushes and closes the file; later writes throw. Called by the destructor.
  void finish();

 private:
  struct Conn {
    Endpoint ep[2];         // by StreamSide: [FromClient] = client, [FromServer] = server
    uint32_t isn[2] = {};
    uint64_t next[2] = {};  // next stream offset of each side
    bool fin[2] = {};
  };

  Conn& conn(uint32_t id);
  uint32_t seq_at(const Conn& c, StreamSide side, uint64_t offset) const;
  uint32_t ack_of(const Conn& c, StreamSide side) const;
  void tcp(const Conn& c, StreamSide side, uint32_t seq, uint32_t ack, uint8_t flags,
           std::span<const uint8_t> payload);
  void begin_frame(bool v6, bool outgoing);
  size_t ip_header(const Endpoint& src, const Endpoint& dst, uint8_t proto);
  void finish_ip(size_t ip_start, size_t l4_start, uint8_t proto);
  void tcp_header(const Endpoint& src, const Endpoint& dst, uint32_t seq, uint32_t ack, uint8_t flags);
  void emit(bool as_given = false);
  void write_pcapng_block(uint32_t type, std::span<const uint8_t> body);

  std::string path_;
  SyntheticCaptureOptions opts_;
  std::chrono::nanoseconds now_;
  pcap* dead_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::FILE* ng_ = nullptr;
  std::vector<Conn> conns_;
  std::vector<uint8_t> frame_;
  std::vector<uint8_t> block_;
  uint16_t ip_id_ = 1;
  uint64_t packets_ = 0;
};

}  // namespace kwire
