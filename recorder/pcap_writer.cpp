#include "recorder/pcap_writer.hpp"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "recorder/packet.hpp"
#include "wire/wire.hpp"

namespace kwire {
namespace {

constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoFragment = 44;
constexpr size_t kLinkSll2 = 276;

void put8(std::vector<uint8_t>& b, uint8_t v) { b.push_back(v); }
void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
void put32le(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put16le(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put(std::vector<uint8_t>& b, std::span<const uint8_t> bytes) { b.insert(b.end(), bytes.begin(), bytes.end()); }

// Internet checksum arithmetic.
uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) acc += uint32_t{p[i]} << 8 | p[i + 1];
  if (n & 1) acc += uint32_t{p[n - 1]} << 8;
  return acc;
}
uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return static_cast<uint16_t>(~acc);
}

std::span<const uint8_t> addr_of(const Endpoint& e) { return {e.addr.data(), e.v6 ? 16u : 4u}; }

int dlt_of(LinkLayer l) {
  switch (l) {
    case LinkLayer::Ethernet: return DLT_EN10MB;
    case LinkLayer::LinuxSll: return DLT_LINUX_SLL;
    case LinkLayer::LinuxSll2: return static_cast<int>(kLinkSll2);
    case LinkLayer::Null: return DLT_NULL;
    case LinkLayer::Loop: return DLT_LOOP;
    case LinkLayer::Raw: return DLT_RAW;
    case LinkLayer::Ipv4: return 228;
    case LinkLayer::Ipv6: return 229;
  }
  return -1;
}

// The number pcapng files carry (LINKTYPE_*), which differs from DLT_* for raw IP.
int linktype_of(LinkLayer l) { return l == LinkLayer::Raw ? 101 : dlt_of(l); }

}  // namespace

Endpoint make_endpoint(std::string_view ip, uint16_t port) {
  Endpoint e;
  std::string s(ip);
  e.v6 = s.find(':') != std::string::npos;
  if (inet_pton(e.v6 ? AF_INET6 : AF_INET, s.c_str(), e.addr.data()) != 1) {
    throw std::invalid_argument("not an IP address: " + s);
  }
  e.port = port;
  return e;
}

SyntheticCapture::SyntheticCapture(const std::string& path, SyntheticCaptureOptions opts)
    : path_(path), opts_(std::move(opts)), now_(opts_.start_time) {
  if (opts_.format == CaptureFormat::Pcap) {
    if (opts_.linktype_override >= 0) throw std::invalid_argument("linktype_override needs CaptureFormat::PcapNg");
    dead_ = pcap_open_dead_with_tstamp_precision(
        dlt_of(opts_.link), static_cast<int>(opts_.snaplen),
        opts_.nanosecond ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
    if (!dead_) throw std::runtime_error("pcap_open_dead failed");
    dumper_ = pcap_dump_open(dead_, path.c_str());
    if (!dumper_) {
      std::string why = pcap_geterr(dead_);
      pcap_close(dead_);
      throw std::runtime_error("cannot write " + path + ": " + why);
    }
    return;
  }
  ng_ = std::fopen(path.c_str(), "wb");
  if (!ng_) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  // Section header block, in this host's byte order (the magic tells readers).
  block_.clear();
  put32le(block_, 0x1A2B3C4D);
  put16le(block_, 1);
  put16le(block_, 0);
  put32le(block_, 0xFFFFFFFF);  // section length: unknown (-1 as 64 bits)
  put32le(block_, 0xFFFFFFFF);
  write_pcapng_block(0x0A0D0D0A, block_);
  // Interface description block.
  block_.clear();
  const int linktype = opts_.linktype_override >= 0 ? opts_.linktype_override : linktype_of(opts_.link);
  put16le(block_, static_cast<uint16_t>(linktype));
  put16le(block_, 0);
  put32le(block_, opts_.snaplen);
  if (opts_.nanosecond) {
    put16le(block_, 9);  // if_tsresol
    put16le(block_, 1);
    block_.insert(block_.end(), {9, 0, 0, 0});  // 10^-9, padded
    put32le(block_, 0);  // opt_endofopt
  }
  write_pcapng_block(1, block_);
}

SyntheticCapture::~SyntheticCapture() { finish(); }

void SyntheticCapture::finish() {
  if (dumper_) {
    pcap_dump_close(dumper_);
    dumper_ = nullptr;
  }
  if (dead_) {
    pcap_close(dead_);
    dead_ = nullptr;
  }
  if (ng_) {
    std::fclose(ng_);
    ng_ = nullptr;
  }
}

void SyntheticCapture::write_pcapng_block(uint32_t type, std::span<const uint8_t> body) {
  std::vector<uint8_t> head;
  put32le(head, type);
  put32le(head, static_cast<uint32_t>(12 + body.size()));
  std::fwrite(head.data(), 1, head.size(), ng_);
  std::fwrite(body.data(), 1, body.size(), ng_);
  std::fwrite(head.data() + 4, 1, 4, ng_);
}

SyntheticCapture::Conn& SyntheticCapture::conn(uint32_t id) {
  if (id >= conns_.size()) throw std::out_of_range("no such connection: " + std::to_string(id));
  return conns_[id];
}

uint32_t SyntheticCapture::seq_at(const Conn& c, StreamSide side, uint64_t offset) const {
  const size_t s = static_cast<size_t>(side);
  return c.isn[s] + 1 + static_cast<uint32_t>(offset);
}

uint32_t SyntheticCapture::ack_of(const Conn& c, StreamSide side) const {
  const size_t peer = side == StreamSide::FromClient ? 1 : 0;
  return c.isn[peer] + 1 + static_cast<uint32_t>(c.next[peer]) + (c.fin[peer] ? 1 : 0);
}

uint32_t SyntheticCapture::connect(const Endpoint& client, const Endpoint& server, const ConnectOptions& o) {
  if (client.v6 != server.v6) throw std::invalid_argument("client and server must be both IPv4 or both IPv6");
  Conn c;
  c.ep[0] = client;
  c.ep[1] = server;
  c.isn[0] = o.client_isn;
  c.isn[1] = o.server_isn;
  conns_.push_back(c);
  const Conn& k = conns_.back();
  if (o.handshake) {
    tcp(k, StreamSide::FromClient, k.isn[0], 0, kTcpSyn, {});
    tcp(k, StreamSide::FromServer, k.isn[1], k.isn[0] + 1, kTcpSyn | kTcpAck, {});
    tcp(k, StreamSide::FromClient, k.isn[0] + 1, k.isn[1] + 1, kTcpAck, {});
  }
  return static_cast<uint32_t>(conns_.size() - 1);
}

void SyntheticCapture::send(uint32_t id, StreamSide side, std::span<const uint8_t> payload, size_t segment_size) {
  send(id, side, payload, segment_size, {});
}

void SyntheticCapture::send(uint32_t id, StreamSide side, std::span<const uint8_t> payload, size_t segment_size,
                            const std::vector<size_t>& order) {
  if (segment_size == 0) throw std::invalid_argument("segment_size must be positive");
  Conn& c = conn(id);
  const size_t s = static_cast<size_t>(side);
  const size_t count = (payload.size() + segment_size - 1) / segment_size;
  std::vector<size_t> plan = order;
  if (plan.empty()) {
    for (size_t i = 0; i < count; ++i) plan.push_back(i);
  }
  const uint64_t base = c.next[s];
  for (size_t i : plan) {
    if (i >= count) throw std::out_of_range("segment index " + std::to_string(i) + " of " + std::to_string(count));
    const size_t from = i * segment_size;
    const auto piece = payload.subspan(from, std::min(segment_size, payload.size() - from));
    const uint8_t flags = kTcpAck | (i + 1 == count ? kTcpPsh : 0);
    tcp(c, side, seq_at(c, side, base + from), ack_of(c, side), flags, piece);
  }
  c.next[s] = base + payload.size();
}

void SyntheticCapture::send_at(uint32_t id, StreamSide side, uint64_t stream_offset,
                               std::span<const uint8_t> payload) {
  Conn& c = conn(id);
  const size_t s = static_cast<size_t>(side);
  tcp(c, side, seq_at(c, side, stream_offset), ack_of(c, side), kTcpAck | kTcpPsh, payload);
  c.next[s] = std::max<uint64_t>(c.next[s], stream_offset + payload.size());
}

void SyntheticCapture::close(uint32_t id, StreamSide first) {
  Conn& c = conn(id);
  const StreamSide second = first == StreamSide::FromClient ? StreamSide::FromServer : StreamSide::FromClient;
  for (StreamSide side : {first, second}) {
    const size_t s = static_cast<size_t>(side);
    tcp(c, side, seq_at(c, side, c.next[s]), ack_of(c, side), kTcpFin | kTcpAck, {});
    c.fin[s] = true;
  }
  const size_t f = static_cast<size_t>(first);
  tcp(c, first, seq_at(c, first, c.next[f]) + 1, ack_of(c, first), kTcpAck, {});
}

void SyntheticCapture::fin(uint32_t id, StreamSide side) {
  Conn& c = conn(id);
  const size_t s = static_cast<size_t>(side);
  tcp(c, side, seq_at(c, side, c.next[s]), ack_of(c, side), kTcpFin | kTcpAck, {});
  c.fin[s] = true;
}

void SyntheticCapture::reset(uint32_t id, StreamSide from) {
  Conn& c = conn(id);
  tcp(c, from, seq_at(c, from, c.next[static_cast<size_t>(from)]), ack_of(c, from), kTcpRst | kTcpAck, {});
}

void SyntheticCapture::tcp(const Conn& c, StreamSide side, uint32_t seq, uint32_t ack, uint8_t flags,
                           std::span<const uint8_t> payload) {
  const Endpoint& src = c.ep[static_cast<size_t>(side)];
  const Endpoint& dst = c.ep[1 - static_cast<size_t>(side)];
  begin_frame(src.v6, side == StreamSide::FromClient);
  const size_t ip = ip_header(src, dst, kProtoTcp);
  const size_t l4 = frame_.size();
  tcp_header(src, dst, seq, ack, flags);
  put(frame_, payload);
  finish_ip(ip, l4, kProtoTcp);
  emit();
}

void SyntheticCapture::send_fragmented(uint32_t id, StreamSide side, std::span<const uint8_t> payload,
                                       size_t first_fragment_bytes) {
  Conn& c = conn(id);
  const size_t s = static_cast<size_t>(side);
  const Endpoint& src = c.ep[s];
  const Endpoint& dst = c.ep[1 - s];
  // Build the whole segment once, then cut its IP payload in two.
  begin_frame(src.v6, side == StreamSide::FromClient);
  const size_t link_len = frame_.size();
  const size_t ip = ip_header(src, dst, kProtoTcp);
  const size_t l4 = frame_.size();
  tcp_header(src, dst, seq_at(c, side, c.next[s]), ack_of(c, side), kTcpAck | kTcpPsh);
  put(frame_, payload);
  finish_ip(ip, l4, kProtoTcp);
  const std::vector<uint8_t> link(frame_.begin(), frame_.begin() + static_cast<std::ptrdiff_t>(link_len));
  const std::vector<uint8_t> segment(frame_.begin() + static_cast<std::ptrdiff_t>(l4), frame_.end());
  const size_t tcp_len = segment.size() - payload.size();
  size_t split = (tcp_len + first_fragment_bytes) / 8 * 8;
  split = std::clamp<size_t>(split, 8, segment.size() > 8 ? (segment.size() - 1) / 8 * 8 : 8);
  const uint16_t ident = ip_id_++;
  for (int part = 0; part < 2; ++part) {
    const auto chunk = part == 0 ? std::span<const uint8_t>(segment).first(split)
                                 : std::span<const uint8_t>(segment).subspan(split);
    const uint16_t frag_off = static_cast<uint16_t>(part == 0 ? 0 : split / 8);
    const bool more = part == 0;
    frame_ = link;
    if (!src.v6) {
      const size_t at = frame_.size();
      put8(frame_, 0x45);
      put8(frame_, 0);
      put16(frame_, static_cast<uint16_t>(20 + chunk.size()));
      put16(frame_, ident);
      put16(frame_, static_cast<uint16_t>((more ? 0x2000 : 0) | frag_off));
      put8(frame_, 64);
      put8(frame_, kProtoTcp);
      put16(frame_, 0);
      put(frame_, addr_of(src));
      put(frame_, addr_of(dst));
      wire::store_be16(frame_.data() + at + 10, fold(sum16(frame_.data() + at, 20)));
    } else {
      put32(frame_, 0x60000000);
      put16(frame_, static_cast<uint16_t>(8 + chunk.size()));
      put8(frame_, kProtoFragment);
      put8(frame_, 64);
      put(frame_, addr_of(src));
      put(frame_, addr_of(dst));
      put8(frame_, kProtoTcp);
      put8(frame_, 0);
      put16(frame_, static_cast<uint16_t>(frag_off << 3 | (more ? 1 : 0)));
      put32(frame_, 0x10000u + ident);
    }
    put(frame_, chunk);
    emit();
  }
  c.next[s] += payload.size();
}

void SyntheticCapture::send_udp(const Endpoint& from, const Endpoint& to, std::span<const uint8_t> payload) {
  begin_frame(from.v6, true);
  const size_t ip = ip_header(from, to, kProtoUdp);
  const size_t l4 = frame_.size();
  put16(frame_, from.port);
  put16(frame_, to.port);
  put16(frame_, static_cast<uint16_t>(8 + payload.size()));
  put16(frame_, 0);
  put(frame_, payload);
  finish_ip(ip, l4, kProtoUdp);
  emit();
}

void SyntheticCapture::write_frame(std::span<const uint8_t> frame) {
  frame_.assign(frame.begin(), frame.end());
  emit(/*as_given=*/true);
}

void SyntheticCapture::begin_frame(bool v6, bool from_client) {
  frame_.clear();
  const uint16_t ethertype = v6 ? 0x86DD : 0x0800;
  const uint8_t mac_client[6] = {0x02, 0, 0, 0, 0, 0x01};
  const uint8_t mac_server[6] = {0x02, 0, 0, 0, 0, 0x02};
  const std::span<const uint8_t> src_mac(from_client ? mac_client : mac_server);
  const std::span<const uint8_t> dst_mac(from_client ? mac_server : mac_client);
  const uint32_t family = v6 ? opts_.loopback_ipv6_family : 2;
  switch (opts_.link) {
    case LinkLayer::Ethernet:
      put(frame_, dst_mac);
      put(frame_, src_mac);
      for (size_t i = 0; i < opts_.vlan_ids.size(); ++i) {
        const bool outer_qinq = opts_.vlan_ids.size() > 1 && i == 0;
        put16(frame_, outer_qinq ? 0x88A8 : 0x8100);
        put16(frame_, opts_.vlan_ids[i] & 0x0FFF);
      }
      put16(frame_, ethertype);
      break;
    case LinkLayer::LinuxSll:
      put16(frame_, from_client ? 4 : 0);  // sent by us / to us
      put16(frame_, 1);                    // ARPHRD_ETHER
      put16(frame_, 6);
      put(frame_, src_mac);
      put16(frame_, 0);
      put16(frame_, ethertype);
      break;
    case LinkLayer::LinuxSll2:
      put16(frame_, ethertype);
      put16(frame_, 0);
      put32(frame_, 2);                    // interface index
      put16(frame_, 1);                    // ARPHRD_ETHER
      put8(frame_, from_client ? 4 : 0);
      put8(frame_, 6);
      put(frame_, src_mac);
      put16(frame_, 0);
      break;
    case LinkLayer::Null:
      if (opts_.null_family_swapped) {
        put32(frame_, family);
      } else {
        put32le(frame_, family);
      }
      break;
    case LinkLayer::Loop:
      put32(frame_, family);
      break;
    case LinkLayer::Raw:
      break;
    case LinkLayer::Ipv4:
      if (v6) throw std::invalid_argument("LinkLayer::Ipv4 carries only IPv4");
      break;
    case LinkLayer::Ipv6:
      if (!v6) throw std::invalid_argument("LinkLayer::Ipv6 carries only IPv6");
      break;
  }
}

size_t SyntheticCapture::ip_header(const Endpoint& src, const Endpoint& dst, uint8_t proto) {
  const size_t at = frame_.size();
  if (!src.v6) {
    put8(frame_, opts_.ipv4_options ? 0x46 : 0x45);
    put8(frame_, 0);
    put16(frame_, 0);  // total length, set by finish_ip
    put16(frame_, ip_id_++);
    put16(frame_, 0x4000);  // don't fragment
    put8(frame_, 64);
    put8(frame_, proto);
    put16(frame_, 0);  // checksum, set by finish_ip
    put(frame_, addr_of(src));
    put(frame_, addr_of(dst));
    if (opts_.ipv4_options) frame_.insert(frame_.end(), {0x94, 0x04, 0x00, 0x00});  // router alert
    return at;
  }
  put32(frame_, 0x60000000);
  put16(frame_, 0);  // payload length, set by finish_ip
  put8(frame_, opts_.ipv6_extension_headers ? 0 : proto);
  put8(frame_, 64);
  put(frame_, addr_of(src));
  put(frame_, addr_of(dst));
  if (opts_.ipv6_extension_headers) {
    // Hop-by-hop options, then destination options, each 8 bytes of PadN.
    frame_.insert(frame_.end(), {60, 0, 1, 4, 0, 0, 0, 0});
    frame_.insert(frame_.end(), {proto, 0, 1, 4, 0, 0, 0, 0});
  }
  return at;
}

void SyntheticCapture::finish_ip(size_t ip, size_t l4, uint8_t proto) {
  const size_t l4_len = frame_.size() - l4;
  uint32_t pseudo = 0;
  if (frame_[ip] >> 4 == 4) {
    wire::store_be16(frame_.data() + ip + 2, static_cast<uint16_t>(frame_.size() - ip));
    wire::store_be16(frame_.data() + ip + 10, fold(sum16(frame_.data() + ip, (frame_[ip] & 0x0Fu) * 4u)));
    pseudo = sum16(frame_.data() + ip + 12, 8) + proto + static_cast<uint32_t>(l4_len);
  } else {
    wire::store_be16(frame_.data() + ip + 4, static_cast<uint16_t>(frame_.size() - ip - 40));
    pseudo = sum16(frame_.data() + ip + 8, 32) + proto + static_cast<uint32_t>(l4_len >> 16) +
             static_cast<uint32_t>(l4_len & 0xFFFF);
  }
  const size_t csum_at = l4 + (proto == kProtoTcp ? 16 : 6);
  uint16_t csum = fold(sum16(frame_.data() + l4, l4_len, pseudo));
  if (proto == kProtoUdp && csum == 0) csum = 0xFFFF;
  wire::store_be16(frame_.data() + csum_at, csum);
}

void SyntheticCapture::tcp_header(const Endpoint& src, const Endpoint& dst, uint32_t seq, uint32_t ack,
                                  uint8_t flags) {
  const bool syn = flags & kTcpSyn;
  const size_t options = !opts_.tcp_options ? 0 : syn ? 20 : 12;
  put16(frame_, src.port);
  put16(frame_, dst.port);
  put32(frame_, seq);
  put32(frame_, (flags & kTcpAck) ? ack : 0);
  put8(frame_, static_cast<uint8_t>((20 + options) / 4 << 4));
  put8(frame_, flags);
  put16(frame_, syn ? 65535 : 512);  // window (scaled by 128 after the SYNs)
  put16(frame_, 0);      // checksum, set by finish_ip
  put16(frame_, 0);      // urgent pointer
  const uint32_t tsval = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now_).count());
  if (options == 20) {
    frame_.insert(frame_.end(), {2, 4, 0x05, 0xB4, 4, 2, 8, 10});  // MSS 1460, SACK permitted, timestamps
    put32(frame_, tsval);
    put32(frame_, 0);
    frame_.insert(frame_.end(), {1, 3, 3, 7});  // NOP, window scale 7
  } else if (options == 12) {
    frame_.insert(frame_.end(), {1, 1, 8, 10});
    put32(frame_, tsval);
    put32(frame_, tsval);
  }
}

void SyntheticCapture::emit(bool as_given) {
  if (!dumper_ && !ng_) throw std::logic_error("SyntheticCapture: write after finish()");
  if (!as_given && opts_.link == LinkLayer::Ethernet && opts_.ethernet_padding && frame_.size() < 60) {
    frame_.resize(60, 0);
  }
  const uint32_t len = static_cast<uint32_t>(frame_.size());
  const uint32_t caplen = std::min(len, opts_.snaplen);
  const int64_t ns = now_.count();
  if (dumper_) {
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    const int64_t frac = ns % 1'000'000'000;
    h.ts.tv_usec = static_cast<suseconds_t>(opts_.nanosecond ? frac : frac / 1000);
    h.caplen = caplen;
    h.len = len;
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, frame_.data());
  } else {
    const uint64_t units = static_cast<uint64_t>(opts_.nanosecond ? ns : ns / 1000);
    block_.clear();
    put32le(block_, 0);  // interface
    put32le(block_, static_cast<uint32_t>(units >> 32));
    put32le(block_, static_cast<uint32_t>(units));
    put32le(block_, caplen);
    put32le(block_, len);
    block_.insert(block_.end(), frame_.begin(), frame_.begin() + caplen);
    while (block_.size() % 4) block_.push_back(0);
    write_pcapng_block(6, block_);
  }
  ++packets_;
  now_ += opts_.time_step;
}

}  // namespace kwire
