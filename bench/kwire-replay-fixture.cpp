// kwire-replay-fixture: the two halves of the `kwire replay` benchmark
// (bench/replay-bench).
//
//   kwire-replay-fixture capture OUT.pcapng --requests N --connections K --gap-us G [--depth D] [--from CAPTURE]
//     A synthetic capture of N request/response pairs, round-robin over K
//     client connections (127.0.0.1:50000+k) to one broker, 127.0.0.1:9092.
//     The messages are real ones: the client exchanges of CAPTURE (default
//     captures/stateful.pcapng) whose api is StreamsGroupHeartbeat, Metadata,
//     OffsetCommit, ListOffsets, FindCoordinator, ApiVersions or Fetch, cycled
//     through in order, their correlation ids renumbered per connection.
//     A connection sends its requests in groups of D (default 1) back to
//     back, 1 us apart; groups are G us apart, and never closer than the
//     group's responses (each comes 200 us after its request). So a
//     connection has up to D requests in flight: 1 is a client that does not
//     pipeline, 5 a producer at Kafka's default
//     max.in.flight.requests.per.connection. IPv4 without link layer (LINKTYPE_RAW), a handshake per
//     connection, then data segments of at most 16 KiB.
//
//   kwire-replay-fixture serve --capture CAPTURE [--port P]
//     A loopback responder (127.0.0.1 only): answers every size-prefixed
//     request at once with the first response CAPTURE recorded for its api
//     key and version, the request's correlation id patched in. What the
//     capture lacks of kwire replay's own start-up requests it builds:
//     ApiVersions v3 (every api key of the capture, versions 0..20) and
//     Metadata v12 (no brokers, no topics). Other requests without a canned
//     response close the connection. One thread, epoll, non-blocking
//     sockets; prints "listening 127.0.0.1:PORT" once ready, runs until
//     SIGTERM or SIGINT. A benchmark fixture: it is no broker and knows
//     nothing of the requests beyond their header.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/program.hpp"
#include "recorder/pcapng_writer.hpp"
#include "replay/recording.hpp"

using namespace kwire;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: kwire-replay-fixture capture OUT.pcapng --requests N --connections K --gap-us G [--depth D] [--from CAPTURE]\n"
               "                                    [--canned-responses]\n"
               "       kwire-replay-fixture serve --capture CAPTURE [--port P]\n");
  return 2;
}

void put16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
void put32(uint8_t* p, uint32_t v) { p[0] = uint8_t(v >> 24); p[1] = uint8_t(v >> 16); p[2] = uint8_t(v >> 8); p[3] = uint8_t(v); }
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

bool load(const std::string& file, std::vector<replay::Exchange>& out, std::set<int16_t>* keep) {
  ProgramSet ps = ProgramSet::release();
  replay::Recording rec;
  std::string error;
  if (!replay::load_recording(file, ps, SessionOptions{}, rec, error)) {
    std::fprintf(stderr, "kwire-replay-fixture: cannot read %s: %s\n", file.c_str(), error.c_str());
    return false;
  }
  for (auto& s : rec.sessions) {
    if (!s.skip.empty()) continue;
    for (auto& e : s.exchanges) {
      if (e.malformed || !e.expects_response || e.response.size() < 8 || e.request.size() < 12) continue;
      if (keep && !keep->count(e.api_key)) continue;
      out.push_back(std::move(e));
    }
  }
  return true;
}

// ---- capture ---------------------------------------------------------------

uint16_t checksum(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (; n > 1; p += 2, n -= 2) sum += uint32_t(p[0] << 8 | p[1]);
  if (n) sum += uint32_t(p[0] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

struct Conn {
  uint32_t client_ip, broker_ip;
  uint16_t client_port, broker_port;
  uint32_t client_seq, broker_seq;   // next sequence number each side sends
  int32_t corr = 0;
};

struct Writer {
  std::unique_ptr<PcapngWriter> w;
  uint32_t iface = 0;
  uint64_t packets = 0;
  std::vector<uint8_t> pkt;
  std::string error;

  enum : uint8_t { FIN = 1, SYN = 2, PSH = 8, ACK = 16 };

  bool segment(int64_t ts_us, Conn& c, bool from_client, uint8_t flags, const uint8_t* data, size_t len) {
    pkt.assign(40 + len, 0);
    uint8_t* ip = pkt.data();
    uint8_t* tcp = ip + 20;
    ip[0] = 0x45;
    put16(ip + 2, uint16_t(40 + len));
    put16(ip + 4, uint16_t(packets));
    ip[6] = 0x40;  // don't fragment
    ip[8] = 64;
    ip[9] = 6;
    uint32_t src = from_client ? c.client_ip : c.broker_ip, dst = from_client ? c.broker_ip : c.client_ip;
    put32(ip + 12, src);
    put32(ip + 16, dst);
    put16(ip + 10, checksum(ip, 20));
    put16(tcp, from_client ? c.client_port : c.broker_port);
    put16(tcp + 2, from_client ? c.broker_port : c.client_port);
    uint32_t& seq = from_client ? c.client_seq : c.broker_seq;
    uint32_t ack = from_client ? c.broker_seq : c.client_seq;
    put32(tcp + 4, seq);
    put32(tcp + 8, (flags & ACK) ? ack : 0);
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    put16(tcp + 14, 65535);
    if (len) std::memcpy(tcp + 20, data, len);
    // Pseudo header: addresses, protocol, TCP length.
    uint32_t sum = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6 + uint32_t(20 + len);
    put16(tcp + 16, checksum(tcp, 20 + len, sum));
    seq += uint32_t(len) + ((flags & (SYN | FIN)) ? 1 : 0);
    ++packets;
    return w->write_packet(iface, ts_us * 1000, pkt, uint32_t(pkt.size()), "", error);
  }

  bool data(int64_t ts_us, Conn& c, bool from_client, const std::vector<uint8_t>& bytes) {
    constexpr size_t kSegment = 16384;
    for (size_t off = 0; off < bytes.size(); off += kSegment) {
      size_t n = std::min(kSegment, bytes.size() - off);
      if (!segment(ts_us, c, from_client, PSH | ACK, bytes.data() + off, n)) return false;
    }
    return true;
  }
};

int capture_main(int argc, char** argv) {
  if (argc < 3) return usage();
  std::string out = argv[2], from = "captures/stateful.pcapng";
  long long requests = -1, connections = -1, gap_us = -1, depth = 1;
  bool canned = false;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc && a != "--canned-responses") return usage();
    const char* v = argv[++i];
    if (a == "--requests") requests = std::atoll(v);
    else if (a == "--connections") connections = std::atoll(v);
    else if (a == "--gap-us") gap_us = std::atoll(v);
    else if (a == "--depth") depth = std::atoll(v);
    else if (a == "--from") from = v;
    else if (a == "--canned-responses") { canned = true; --i; }
    else return usage();
  }
  if (requests <= 0 || connections <= 0 || connections > 10000 || gap_us < 0 || depth < 1 || depth > 1000) return usage();

  ProgramSet ps = ProgramSet::release();
  std::set<int16_t> apis;
  for (const char* name : {"StreamsGroupHeartbeat", "Metadata", "OffsetCommit", "ListOffsets", "FindCoordinator",
                           "ApiVersions", "Fetch"})
    if (const MessageProgram* m = ps.find_api(name)) apis.insert(m->api_key);
  std::vector<replay::Exchange> pool;
  if (!load(from, pool, &apis)) return 1;
  if (pool.empty()) {
    std::fprintf(stderr, "kwire-replay-fixture: %s has no client exchange of the benchmark's apis\n", from.c_str());
    return 1;
  }
  if (canned) {  // every response the first one recorded for its api key and version: what `serve` answers
    std::map<std::pair<int16_t, int16_t>, std::vector<uint8_t>> first;
    for (auto& e : pool) first.try_emplace({e.api_key, e.api_version}, e.response);
    for (auto& e : pool) e.response = first[{e.api_key, e.api_version}];
  }

  std::string error;
  auto w = PcapngWriter::open({.path = out, .application = "kwire-replay-fixture"}, error);
  if (!w) { std::fprintf(stderr, "kwire-replay-fixture: %s\n", error.c_str()); return 1; }
  Writer wr;
  wr.w = std::move(w);
  wr.iface = wr.w->add_interface({.linktype = 101, .name = "lo"});

  std::vector<Conn> conns(static_cast<size_t>(connections));
  for (size_t k = 0; k < conns.size(); ++k) {
    conns[k] = {0x7f000001, 0x7f000001, uint16_t(50000 + k), 9092, 1000u + 7919u * uint32_t(k), 5000u + 104729u * uint32_t(k)};
  }
  constexpr int64_t kLatencyUs = 200;
  // per connection, between groups of `depth` requests sent back to back
  const int64_t spacing = std::max<int64_t>(gap_us, kLatencyUs + depth + 1);
  const int64_t t0 = 1'700'000'000'000'000;
  int64_t t = t0;
  for (auto& c : conns) {  // handshakes, 1 us apart
    if (!wr.segment(t, c, true, Writer::SYN, nullptr, 0) || !wr.segment(t, c, false, Writer::SYN | Writer::ACK, nullptr, 0) ||
        !wr.segment(t, c, true, Writer::ACK, nullptr, 0)) {
      std::fprintf(stderr, "kwire-replay-fixture: %s\n", wr.error.c_str());
      return 1;
    }
    ++t;
  }
  const int64_t start = t + 1000;

  // Request j goes to connection j % K as its n-th (n = j / K): in group n / depth, slot
  // n % depth, at start + group * spacing + (j % K) * spacing / K + slot; its response
  // 200 us later; packets go out in time order. A connection has up to `depth` in flight.
  struct Event { int64_t ts; uint64_t j; bool response; };
  std::vector<Event> events;
  events.reserve(static_cast<size_t>(requests) * 2);
  const uint64_t K = conns.size();
  for (uint64_t j = 0; j < static_cast<uint64_t>(requests); ++j) {
    const int64_t n = int64_t(j / K);
    int64_t ts = start + (n / depth) * spacing + int64_t(j % K) * spacing / int64_t(K) + n % depth;
    events.push_back({ts, j, false});
    events.push_back({ts + kLatencyUs, j, true});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  std::vector<uint8_t> msg;
  for (const Event& e : events) {
    Conn& c = conns[e.j % K];
    const replay::Exchange& x = pool[e.j % pool.size()];
    // A connection's n-th request has correlation id n + 1.
    const uint32_t corr = uint32_t(e.j / K + 1);
    if (!e.response) {
      msg = x.request;
      put32(msg.data() + 8, corr);
    } else {
      msg = x.response;
      put32(msg.data() + 4, corr);
    }
    if (!wr.data(e.ts, c, !e.response, msg)) { std::fprintf(stderr, "kwire-replay-fixture: %s\n", wr.error.c_str()); return 1; }
  }
  t = events.empty() ? start : events.back().ts + 1000;
  for (auto& c : conns) {
    if (!wr.segment(t, c, true, Writer::FIN | Writer::ACK, nullptr, 0) || !wr.segment(t, c, false, Writer::FIN | Writer::ACK, nullptr, 0) ||
        !wr.segment(t, c, true, Writer::ACK, nullptr, 0)) {
      std::fprintf(stderr, "kwire-replay-fixture: %s\n", wr.error.c_str());
      return 1;
    }
  }
  uint64_t packets = wr.packets;
  if (!wr.w->close({{.received = packets, .delivered_to_file = packets, .ts_ns = t * 1000}}, error)) {
    std::fprintf(stderr, "kwire-replay-fixture: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %lld requests over %lld connections, %llu packets, %.3f s recorded, messages cycled from %zu exchanges of %s\n",
              out.c_str(), requests, connections, static_cast<unsigned long long>(packets), (t - t0) / 1e6, pool.size(),
              from.c_str());
  return 0;
}

// ---- serve -----------------------------------------------------------------

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void uvarint(std::vector<uint8_t>& b, uint32_t v) {
  while (v >= 0x80) { b.push_back(uint8_t(v | 0x80)); v >>= 7; }
  b.push_back(uint8_t(v));
}
void be16(std::vector<uint8_t>& b, int v) { b.push_back(uint8_t(v >> 8)); b.push_back(uint8_t(v)); }
void be32(std::vector<uint8_t>& b, int32_t v) { for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(uint32_t(v) >> s)); }
void finish(std::vector<uint8_t>& b) { put32(b.data(), uint32_t(b.size() - 4)); }

// ApiVersions v3 (flexible body, response header v0): every key 0..20.
std::vector<uint8_t> api_versions_v3(const std::set<int16_t>& keys) {
  std::vector<uint8_t> b(4, 0);
  be32(b, 0);          // correlation id, patched per request
  be16(b, 0);          // ErrorCode
  uvarint(b, uint32_t(keys.size() + 1));
  for (int16_t k : keys) { be16(b, k); be16(b, 0); be16(b, 20); b.push_back(0); }
  be32(b, 0);          // ThrottleTimeMs
  b.push_back(0);      // tagged fields
  finish(b);
  return b;
}

// Metadata v12 (response header v1): no brokers, no topics.
std::vector<uint8_t> metadata_v12() {
  std::vector<uint8_t> b(4, 0);
  be32(b, 0);          // correlation id
  b.push_back(0);      // header tagged fields
  be32(b, 0);          // ThrottleTimeMs
  uvarint(b, 1);       // Brokers: empty compact array
  static const char kCluster[] = "kwire-replay-fixture";
  uvarint(b, sizeof kCluster);  // ClusterId: compact string, length + 1
  b.insert(b.end(), kCluster, kCluster + sizeof kCluster - 1);
  be32(b, -1);         // ControllerId
  uvarint(b, 1);       // Topics: empty
  b.push_back(0);      // tagged fields
  finish(b);
  return b;
}

struct Client {
  int fd = -1;
  std::vector<uint8_t> in, out;
  size_t in_off = 0, out_off = 0;
  bool want_out = false;
};

int serve_main(int argc, char** argv) {
  std::string capture;
  int port = 0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--capture") capture = v;
    else if (a == "--port") port = std::atoi(v);
    else return usage();
  }
  if (capture.empty() || port < 0 || port > 65535) return usage();
  std::vector<replay::Exchange> pool;
  if (!load(capture, pool, nullptr)) return 1;
  std::unordered_map<uint32_t, std::vector<uint8_t>> canned;  // key << 16 | version
  std::set<int16_t> keys;
  for (auto& e : pool) {
    keys.insert(e.api_key);
    canned.try_emplace(uint32_t(uint16_t(e.api_key)) << 16 | uint16_t(e.api_version), std::move(e.response));
  }
  pool.clear();
  keys.insert({18, 3});
  canned.try_emplace(18u << 16 | 3u, api_versions_v3(keys));
  canned.try_emplace(3u << 16 | 12u, metadata_v12());

  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(uint16_t(port));
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || listen(lfd, 128) < 0) {
    std::fprintf(stderr, "kwire-replay-fixture: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return 1;
  }
  socklen_t alen = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  rusage ready{};  // what serving costs is counted from here, not the capture's loading
  getrusage(RUSAGE_SELF, &ready);
  std::printf("listening 127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  std::unordered_map<int, Client> clients;
  uint64_t answered = 0;
  auto drop = [&](Client& c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    clients.erase(c.fd);
  };
  auto flush = [&](Client& c) -> bool {  // false: dropped
    while (c.out_off < c.out.size()) {
      ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n > 0) { c.out_off += size_t(n); continue; }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      drop(c);
      return false;
    }
    if (c.out_off == c.out.size()) { c.out.clear(); c.out_off = 0; }
    bool want = !c.out.empty();
    if (want != c.want_out) {
      epoll_event e{};
      e.events = want ? EPOLLIN | EPOLLOUT : EPOLLIN;
      e.data.fd = c.fd;
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &e);
      c.want_out = want;
    }
    return true;
  };
  std::vector<epoll_event> events(64);
  uint8_t buf[65536];
  while (!g_stop) {
    int n = epoll_wait(ep, events.data(), int(events.size()), 500);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "kwire-replay-fixture: epoll_wait: %s\n", strerror(errno));
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == lfd) {
        for (;;) {
          int cfd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          Client& c = clients[cfd];
          c.fd = cfd;
          epoll_event e{};
          e.events = EPOLLIN;
          e.data.fd = cfd;
          epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &e);
        }
        continue;
      }
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      Client& c = it->second;
      if (events[i].events & EPOLLOUT) {
        if (!flush(c)) continue;
      }
      if (!(events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      bool closed = false;
      for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r > 0) { c.in.insert(c.in.end(), buf, buf + r); if (size_t(r) < sizeof buf) break; continue; }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        closed = true;
        break;
      }
      // Every whole request in the buffer gets its answer.
      bool bad = false;
      while (c.in.size() - c.in_off >= 12) {
        const uint8_t* p = c.in.data() + c.in_off;
        uint32_t size = get32(p);
        if (size < 8 || size > (256u << 20)) { bad = true; break; }
        if (c.in.size() - c.in_off < 4 + size_t(size)) break;
        uint32_t key = uint32_t(get16(p + 4)) << 16 | get16(p + 6);
        auto r = canned.find(key);
        if (r == canned.end()) {
          std::fprintf(stderr, "kwire-replay-fixture: no response for api %u v%u, closing the connection\n", key >> 16, key & 0xffff);
          bad = true;
          break;
        }
        size_t at = c.out.size();
        c.out.insert(c.out.end(), r->second.begin(), r->second.end());
        std::memcpy(c.out.data() + at + 4, p + 8, 4);
        c.in_off += 4 + size;
        ++answered;
      }
      if (c.in_off == c.in.size()) { c.in.clear(); c.in_off = 0; }
      else if (c.in_off > (1u << 20)) { c.in.erase(c.in.begin(), c.in.begin() + long(c.in_off)); c.in_off = 0; }
      if (!flush(c)) continue;
      if (closed || bad) drop(c);
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& a, const timeval& b) { return (b.tv_sec - a.tv_sec) + (b.tv_usec - a.tv_usec) / 1e6; };
  double user = secs(ready.ru_utime, ru.ru_utime), sys = secs(ready.ru_stime, ru.ru_stime);
  std::fprintf(stderr, "kwire-replay-fixture: answered %llu requests, serving cpu %.3f s (user %.3f, sys %.3f)\n",
               static_cast<unsigned long long>(answered), user + sys, user, sys);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string cmd = argv[1];
  if (cmd == "capture") return capture_main(argc, argv);
  if (cmd == "serve") return serve_main(argc, argv);
  return usage();
}
