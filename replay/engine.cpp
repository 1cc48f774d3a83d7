#include "replay/engine.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "dissector/protocol/codes.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/output/output.hpp"
#include "recorder/pcapng_writer.hpp"
#include "replay/cluster.hpp"
#include "replay/concurrency.hpp"
#include "replay/routing.hpp"
#include "replay/order.hpp"
#include "replay/sequence.hpp"
#include "replay/share.hpp"
#include "replay/split.hpp"
#include "replay/timeshift.hpp"
#include "wire/message_builder.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

std::string HostPort::str() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool parse_host_port(const std::string& s, HostPort& out, std::string& error) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    error = "'" + s + "' is not HOST:PORT";
    return false;
  }
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1) port = -1;
  } catch (...) { port = -1; }
  if (port <= 0 || port > 65535) { error = "bad port in '" + s + "'"; return false; }
  out.host = host;
  out.port = static_cast<uint16_t>(port);
  return true;
}

namespace {
// "a, b, c" -> {a, b, c}
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  for (size_t from = 0; from < s.size();) {
    const size_t comma = std::min(s.find(", ", from), s.size());
    out.push_back(s.substr(from, comma - from));
    from = comma + 2;
  }
  return out;
}
}  // namespace

std::string security_protocol(bool tls, bool sasl) {
  return sasl ? (tls ? "SASL_SSL" : "SASL_PLAINTEXT") : (tls ? "SSL" : "PLAINTEXT");
}

bool parse_target(const std::string& s, std::string& protocol, HostPort& out, std::string& error) {
  protocol.clear();
  std::string rest = s;
  if (const size_t sep = s.find("://"); sep != std::string::npos) {
    for (char ch : s.substr(0, sep)) protocol += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (protocol != "PLAINTEXT" && protocol != "SSL" && protocol != "SASL_PLAINTEXT" && protocol != "SASL_SSL") {
      error = "unknown security protocol '" + s.substr(0, sep) + "' in '" + s + "' (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)";
      return false;
    }
    rest = s.substr(sep + 3);
  }
  return parse_host_port(rest, out, error);
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Same: return "same";
    case Outcome::IgnoredOnly: return "differs-only-in-ignored";
    case Outcome::Regression: return "regression";
    case Outcome::Unanswered: return "unanswered";
    case Outcome::Race: return "race";
    case Outcome::Unsupported: return "unsupported";
    case Outcome::Skipped: return "skipped";
    case Outcome::NotExpected: return "not-compared";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// With recorded timing, how long before a request is due the engine stops sleeping.
constexpr int64_t kSpinUs = 300;
// How long a request the target answers with a retriable error (where the
// capture shows success) is sent again; --timeout lowers it.
constexpr int64_t kRetryForUs = 10'000'000;
// How often a retry held back behind an earlier batch of its producer is looked at.
constexpr int64_t kHeldRetryStepUs = 10'000;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch()).count();
}
int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
};

bool resolve_address(const HostPort& hp, Address& out, std::string& error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(hp.host.c_str(), std::to_string(hp.port).c_str(), &hints, &res);
  if (rc != 0 || !res) { error = "cannot resolve " + hp.str() + ": " + gai_strerror(rc); return false; }
  std::memcpy(&out.sa, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

Endpoint endpoint_of(const sockaddr_storage& sa) {
  Endpoint e;
  if (sa.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    std::memcpy(e.addr.data(), &s6->sin6_addr, 16);
    e.v6 = true;
    e.port = ntohs(s6->sin6_port);
  } else {
    auto* s4 = reinterpret_cast<const sockaddr_in*>(&sa);
    std::memcpy(e.addr.data(), &s4->sin_addr, 4);
    e.port = ntohs(s4->sin_port);
  }
  return e;
}

int open_socket(const Address& a, std::string& error) {
  int fd = socket(a.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) { error = std::string("socket: ") + strerror(errno); return -1; }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a.sa), a.len) < 0 && errno != EINPROGRESS) {
    error = strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

// The replay's own traffic as a capture: IPv4/IPv6 packets (LINKTYPE_RAW)
// with TCP headers made up from what the sockets sent and received.
class TrafficWriter {
 public:
  bool open(const std::string& path, std::string& error) {
    PcapngWriterOptions o;
    o.path = path;
    o.application = "kwire replay";
    w_ = PcapngWriter::open(o, error);
    if (!w_) return false;
    PcapngInterface i;
    i.linktype = 101;
    i.name = "kwire-replay";
    i.description = "connections kwire replay made to the target";
    iface_ = w_->add_interface(i);
    return true;
  }
  struct Flow { Endpoint a, b; uint32_t seq_a = 1000, seq_b = 5000; };
  void handshake(Flow& f) {
    packet(f, true, 0x02, {});
    f.seq_a++;
    packet(f, false, 0x12, {});
    f.seq_b++;
    packet(f, true, 0x10, {});
  }
  void data(Flow& f, bool from_client, std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
      size_t n = std::min<size_t>(bytes.size(), 65000);
      packet(f, from_client, 0x18, bytes.first(n));
      (from_client ? f.seq_a : f.seq_b) += static_cast<uint32_t>(n);
      bytes = bytes.subspan(n);
    }
  }
  void finish(Flow& f) {
    packet(f, true, 0x11, {});
    f.seq_a++;
    packet(f, false, 0x11, {});
    f.seq_b++;
    packet(f, true, 0x10, {});
  }
  bool close(std::string& error) {
    if (!w_) return true;
    bool ok = error_.empty() && w_->close({}, error);
    if (!error_.empty()) error = error_;
    return ok;
  }
  bool active() const { return w_ != nullptr; }

 private:
  void packet(Flow& f, bool from_client, uint8_t flags, std::span<const uint8_t> payload) {
    const Endpoint& src = from_client ? f.a : f.b;
    const Endpoint& dst = from_client ? f.b : f.a;
    buf_.clear();
    const size_t tcp_len = 20 + payload.size();
    if (!src.v6) {
      const size_t total = 20 + tcp_len;
      buf_.resize(20);
      buf_[0] = 0x45;
      wire::store_be16(&buf_[2], static_cast<uint16_t>(total));
      buf_[8] = 64;
      buf_[9] = 6;
      std::memcpy(&buf_[12], src.addr.data(), 4);
      std::memcpy(&buf_[16], dst.addr.data(), 4);
      uint32_t sum = 0;
      for (int i = 0; i < 20; i += 2) sum += wire::load_be16(&buf_[i]);
      while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
      wire::store_be16(&buf_[10], static_cast<uint16_t>(~sum));
    } else {
      buf_.resize(40);
      buf_[0] = 0x60;
      wire::store_be16(&buf_[4], static_cast<uint16_t>(tcp_len));
      buf_[6] = 6;
      buf_[7] = 64;
      std::memcpy(&buf_[8], src.addr.data(), 16);
      std::memcpy(&buf_[24], dst.addr.data(), 16);
    }
    size_t t = buf_.size();
    buf_.resize(t + 20);
    wire::store_be16(&buf_[t], src.port);
    wire::store_be16(&buf_[t + 2], dst.port);
    wire::store_be32(&buf_[t + 4], from_client ? f.seq_a : f.seq_b);
    wire::store_be32(&buf_[t + 8], flags == 0x02 ? 0 : (from_client ? f.seq_b : f.seq_a));
    buf_[t + 12] = 0x50;
    buf_[t + 13] = flags == 0x02 ? 0x02 : static_cast<uint8_t>(flags | 0x10);
    wire::store_be16(&buf_[t + 14], 65535);
    buf_.insert(buf_.end(), payload.begin(), payload.end());
    std::string error;
    if (error_.empty() && !w_->write_packet(iface_, wall_ns(), buf_, static_cast<uint32_t>(buf_.size()), {}, error))
      error_ = error;
  }
  std::unique_ptr<PcapngWriter> w_;
  uint32_t iface_ = 0;
  std::vector<uint8_t> buf_;
  std::string error_;
};

// ReplayOptions::stop of the running replay: the waits of Control end on it too.
thread_local const volatile std::sig_atomic_t* control_stop = nullptr;

// One request/response at a time with a deadline: the replay's own requests
// to the target (ApiVersions, the SASL login, Metadata, CreateTopics), over
// TCP or TLS as the sessions go.
class Control {
 public:
  bool connect_to(const Address& a, const std::string& host, const TlsContext* tls, double timeout_s,
                  std::string& error) {
    const int64_t deadline = now_us() + static_cast<int64_t>(timeout_s * 1e6);
    int fd = open_socket(a, error);
    if (fd < 0) return false;
    if (!link_.attach(fd, tls, host, error)) return false;
    if (!ready(POLLOUT, deadline, "connect timed out", error)) return false;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) { error = strerror(err); return false; }
    while (true) {
      const Link::Io io = link_.handshake(error);
      if (io == Link::Io::Done) return true;
      if (io == Link::Io::Failed || io == Link::Io::Closed) return false;
      if (!ready(io == Link::Io::WantRead ? POLLIN : POLLOUT, deadline,
                 "the TLS handshake did not finish in time (is it a TLS listener?)", error))
        return false;
    }
  }
  const Link& link() const { return link_; }
  // Borrows a replay connection's link that is up, for a login of kwire's own.
  explicit Control(Link&& up) : link_(std::move(up)) {}
  Control() = default;
  Link release() { return std::move(link_); }
  // Sends `request` (size prefix included) and returns the response message.
  bool exchange(const std::vector<uint8_t>& request, std::vector<uint8_t>& response, double timeout_s,
                std::string& error) {
    const int64_t deadline = now_us() + static_cast<int64_t>(timeout_s * 1e6);
    size_t off = 0;
    while (off < request.size()) {
      size_t n = 0;
      const Link::Io io = link_.write(request.data() + off, request.size() - off, n, error);
      if (io == Link::Io::Done) { off += n; continue; }
      if (io == Link::Io::Failed || io == Link::Io::Closed) return false;
      if (!ready(io == Link::Io::WantRead ? POLLIN : POLLOUT, deadline, "no answer in time", error)) return false;
    }
    response.clear();
    uint8_t buf[65536];
    while (true) {
      if (response.size() >= 4 && response.size() >= 4 + wire::load_be32(response.data())) {
        response.resize(4 + wire::load_be32(response.data()));
        return true;
      }
      size_t n = 0;
      const Link::Io io = link_.read(buf, sizeof buf, n, error);
      if (io == Link::Io::Done) { response.insert(response.end(), buf, buf + n); continue; }
      if (io == Link::Io::Closed) { error = "the target closed the connection"; return false; }
      if (io == Link::Io::Failed) return false;
      if (!ready(io == Link::Io::WantRead ? POLLIN : POLLOUT, deadline, "no answer in time", error)) return false;
    }
  }

 private:
  // Waits until the socket is ready for `events`, in steps of at most 100 ms
  // so that a signal ends the wait; `timeout` is the error past the deadline.
  bool ready(short events, int64_t deadline, const char* timeout, std::string& error) {
    while (true) {
      int64_t left = deadline - now_us();
      if (left <= 0) { error = timeout; return false; }
      if (control_stop && *control_stop) { error = "interrupted by a signal"; return false; }
      pollfd p{link_.fd(), events, 0};
      const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left / 1000 + 1, 100)));
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) { error = strerror(errno); return false; }
    }
  }
  Link link_;
};

std::vector<uint8_t> request_header(wire::MessageBuilder& b, int api, int version, int32_t corr, bool flexible) {
  b.i16(api).i16(version).i32(corr).str("kwire-replay");
  if (flexible) b.tags0();
  return {};
}

struct Topic { std::string name; int32_t partitions = -1; };

// Versions the target supports, per api key: from its ApiVersions response.
struct TargetInfo {
  std::unordered_map<int16_t, std::pair<int16_t, int16_t>> versions;
  bool supports(int16_t api, int16_t v) const {
    auto it = versions.find(api);
    return it != versions.end() && v >= it->second.first && v <= it->second.second;
  }
};

}  // namespace

// ---------------------------------------------------------------------------

namespace {

struct InFlight {
  uint32_t exchange;
  int32_t corr;
  int64_t sent_us;
  int64_t deadline_us;
  std::vector<uint8_t> bytes;        // as sent, for a retry
  int attempts = 1;
  int64_t first_sent_us = 0;
  int converge = 0;                  // re-sent as a read that lags an admin write of the replay
  uint32_t charged = 0;              // retries charged to the session's budget
  int64_t charged_us = 0;            // and their cost
  bool expects = true;               // an answer is awaited (not Produce with acks=0)
  int32_t part = -1;                 // one of the parts of a split request (Engine::split)
};

// A request the target answered with a retriable error where the capture
// shows success: sent again, as the client would, after a back-off.
struct Retry {
  InFlight f;
  int64_t due_us;
  // An idempotent producer's batches in it (Produce): sent again only after
  // every earlier batch of the same producer and partition (replay/sequence.hpp).
  std::vector<ProducerBatch> batches = {};
};

// The same request but for its correlation id (bytes 8-11, after the size and the api key/version).
bool same_request(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() && a.size() >= 12 && std::equal(a.begin(), a.begin() + 8, b.begin()) &&
         std::equal(a.begin() + 12, a.end(), b.begin() + 12);
}

// 0: no error code set; 1: only retriable ones; 2: some that are not.
// `coordinator_only`: some error code is set, and every one says a
// coordinator is not ready yet (loading, not available). NOT_COORDINATOR is
// not among them: on a cluster it says the request went to another broker
// than the coordinator, which waiting does not change.
bool has_error_code(const ProgramSet& ps, const Frame& f, int64_t code) {
  for (uint32_t i = f.body; f.body && i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.desc != kDescUnknownTag && n.v.i == code && is_integer(n.type) && is_error_code_field(ps.field(n.desc))) return true;
  }
  return false;
}

int error_class(const ProgramSet& ps, const Frame& f, bool* coordinator_only = nullptr) {
  int c = 0;
  bool coordinator = true;
  for (uint32_t i = f.body; f.body && i < f.nodes.size(); ++i) {
    const Node& n = f.nodes[i];
    if (n.desc == kDescUnknownTag || n.v.i == 0 || !is_integer(n.type) || !is_error_code_field(ps.field(n.desc))) continue;
    bool retriable = false;
    for (size_t k = 0; k < kErrorCodeCount; ++k)
      if (kErrorCodes[k].code == n.v.i) { retriable = kErrorCodes[k].retriable; break; }
    c = std::max(c, retriable ? 1 : 2);
    // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
    coordinator = coordinator && (n.v.i == 14 || n.v.i == 15);
  }
  if (coordinator_only) *coordinator_only = c != 0 && coordinator;
  return c;
}

struct LiveConn {
  const RecordedSession* s = nullptr;
  size_t result = 0;                 // index in ReplayResult::sessions
  Address addr;
  std::string target, host;
  Link link;
  enum class St { Idle, Connecting, Handshaking, Up, Backoff, Done } st = St::Idle;
  short tls_wants = POLLOUT;         // what the TLS handshake waits for
  uint32_t next = 0;                 // next exchange to send
  std::deque<InFlight> inflight;
  std::vector<uint8_t> out;
  size_t out_off = 0;
  std::vector<uint8_t> in;
  int32_t corr = 0;
  int64_t wake_us = 0;               // backoff end
  int64_t down_since_us = -1;
  int64_t backoff_us = 100000;
  int64_t last_sent_us = -1;
  int64_t last_recorded_us = -1;
  std::vector<size_t> results;       // exchange index -> ExchangeResult index
  std::vector<bool> settled;         // answered out of turn: a recorded retry the target did not need
  std::deque<Retry> retries;
  RetryBudget retry;                 // the session's, shared by all its requests
  TrafficWriter::Flow flow;
  bool filtered_session = false;
  // The session's SASL login (its recorded mechanism, with the given credentials).
  std::unique_ptr<SaslClient> sasl;
  std::string sasl_reply;            // the next SaslAuthenticate bytes
  bool sasl_started = false;
  // Recorded without a login, replayed to a target listener that asks for
  // one: each connection logs in first (kwire's login there).
  const SaslLogin* login_first = nullptr;
  // Recorded with a login, replayed to a target listener without SASL: the
  // recorded SaslHandshake and SaslAuthenticate are not sent.
  bool drop_login = false;
  // Its connection was lost during or after its replayed login and kwire
  // logged the new one in: the rest of the recorded login is not sent.
  bool relogin = false;
  bool login_begun = false;          // its recorded SaslHandshake (or first SaslAuthenticate) was sent
  // Per exchange: other sessions' responses it waits for beyond its own
  // `after` (replay/order.hpp); null: none.
  const std::vector<std::vector<OrderWait>>* waits = nullptr;
  size_t listener = 0;               // Engine::listeners_: the target listener its links go to
  bool tls = false;                  // that listener's
  // In a cluster, a session that talks to one group's or one transaction's
  // coordinator alone (a client's coordinator connection) goes where that
  // coordinator lives on the target, as the target's answers to the replayed
  // FindCoordinator said by the time its first request is due.
  int32_t target_node = -1;          // the target's node id of `target`, where known
  int8_t coordinator_type = -1;      // CoordinatorKey; -1: not such a session
  std::string coordinator_key;       // as sent (--rename-group applied)
  bool routed = false;
  // Request by request in a cluster: a request whose role (a partition's
  // leader, a group's coordinator) lives on another target node than the
  // session's goes over a link of the session's own to that node. A side link
  // shares the session (s, results, settled, the retry budget) with its owner
  // and sends only what it is handed.
  LiveConn* owner = nullptr;         // a side link: the session's own connection
  std::map<int32_t, LiveConn*> sides;  // the session's own connection: node -> its side link
  std::deque<InFlight> handed;       // to be sent once the link is up
  std::map<int16_t, int32_t> last_node;  // api key -> node its last request went to
  // Fetch on a cluster: the recorded fetch session becomes one per target node
  // that leads some of its partitions; kwire keeps their ids and epochs.
  struct NodeFetch {
    int32_t id = 0;
    int32_t epoch = 0;   // the next to send
  };
  std::map<int32_t, NodeFetch> fetches;                              // node -> its fetch session
  std::map<std::pair<std::string, int32_t>, int32_t> fetch_node;     // partition (as recorded) -> its node
  // partition as sent (the target's topic id, or the name as renamed) -> as recorded
  std::map<std::pair<std::string, int32_t>, std::pair<std::string, int32_t>> fetch_sent;
};

LiveConn& session(LiveConn& c) { return c.owner ? *c.owner : c; }

// A client listener of the target, as kwire found it: --target's addresses
// (those one another's Metadata lists are one listener), then each --map
// address of its own.
struct Listener {
  bool tls = false, sasl = false;
  bool sasl_known = false;                  // sasl was asked (a SaslHandshake) or given (PROTOCOL://)
  HostPort bootstrap;
  std::map<int32_t, std::string> endpoints; // node -> "host:port" on this listener, from its Metadata
  const SaslLogin* login = nullptr;         // kwire's login there: a mechanism it offers
  bool from_target = false;                 // one of --target's (not only a --map address)
  std::string protocol() const { return security_protocol(tls, sasl); }
};

class Engine {
 public:
  Engine(const ProgramSet& ps, const Recording& rec, const ReplayOptions& o, ReplayResult& out)
      : ps_(ps), rec_(rec), o_(o), out_(out), dec_(ps), enc_(ps), state_(ps, o.renames),
        resolved_(rec.responses, false), cmp_(o.compare) {
    cmp_.endpoints = &endpoints_;
    // Payloads inside bytes fields (consumer metadata, enveloped requests) are
    // sent as recorded; rewrite and compare treat those fields as bytes.
    dec_.set_nested(false);
  }

  bool run(std::string& error);

 private:
  bool prepare(std::string& error);
  bool control_setup(const HostPort& hp, const Address& a, bool primary, Listener& l, std::string& error);
  bool control_login(Control& ctl, const std::string& target, const SaslLogin& login, bool primary, std::string& error);
  // SaslHandshake v1 with `mechanism`: its error code (offers: the mechanisms
  // the answer lists), or -1 with `error` when there is no usable answer.
  int control_handshake(Control& ctl, const std::string& target, const std::string& mechanism, std::string& offers,
                        std::string& error);
  bool control_authenticate(Control& ctl, const std::string& target, const SaslLogin& login, bool primary,
                            std::string& error);
  void tls_step(LiveConn& c, int64_t now);
  void up(LiveConn& c, int64_t now);
  void flush(LiveConn& c, int64_t now);
  void close_link(LiveConn& c);   // the socket (and TLS) closed, the --record-out flow finished
  void sasl_answer(LiveConn& c, const Frame& live, ExchangeResult& r);
  void start_connect(LiveConn& c, int64_t now);
  void on_connected(LiveConn& c, int64_t now);
  void drop(LiveConn& c, int64_t now, const std::string& why);
  void pump(LiveConn& c, int64_t now, int64_t& wake);
  bool prepare_request(LiveConn& c, const Exchange& e, uint32_t idx, std::vector<uint8_t>& bytes,
                       bool& skip);
  void on_readable(LiveConn& c, int64_t now);
  void on_response(LiveConn& c, std::span<const uint8_t> msg, int64_t now);
  void answered(LiveConn& c, InFlight f, std::span<const uint8_t> msg, int64_t now);
  void finish(LiveConn& c, uint32_t idx, Outcome o, std::string note);
  void resolve(uint64_t seq);
  bool wanted(const LiveConn& c, const Exchange& e) const;
  void progress(int64_t now, bool last);
  void abandon(const std::string& why);   // ends every session now: what is left is unanswered
  void give_up(const std::string& why, int64_t now);

  const ProgramSet& ps_;
  const Recording& rec_;
  const ReplayOptions& o_;
  ReplayResult& out_;
  FrameDecoder dec_;
  FrameEncoder enc_;
  ReplayState state_;
  // What each share-group member holds acquired, in the capture and live.
  ShareLedger share_;
  // Partitions assigned to each session's share-group member by the target's
  // last ShareGroupHeartbeat answer that named an assignment.
  std::map<uint32_t, int64_t> share_assignment_;
  // Share requests (session, exchange) whose acknowledgements kwire rewrote.
  std::set<std::pair<uint32_t, uint32_t>> share_rewritten_;
  int64_t live_share_assigned(uint32_t session) {
    if (const int64_t n = share_assigned(ps_, live_); n >= 0) share_assignment_[session] = n;
    auto it = share_assignment_.find(session);
    return it == share_assignment_.end() ? 0 : it->second;
  }
  std::deque<LiveConn> conns_;       // a deque: side links are added as the run goes, references stay
  std::vector<bool> resolved_;
  uint64_t prefix_ = 0;              // responses 0..prefix_-1 are all resolved
  OrderWaits order_;                 // replay/order.hpp: what each request waits for across sessions
  bool waits_met(const std::vector<OrderWait>& w) const {
    for (const OrderWait& x : w)
      if (x.response_seq < resolved_.size() && !resolved_[x.response_seq]) return false;
    return true;
  }
  TargetInfo target_;
  TrafficWriter traffic_;
  std::unique_ptr<TlsContext> tls_;
  int64_t start_us_ = 0;
  int64_t last_answer_us_ = 0;     // when the target last sent anything
  int64_t t0_recorded_us_ = 0;
  int64_t t_last_recorded_us_ = 0;
  uint64_t total_ = 0, done_ = 0, regressions_ = 0;
  int64_t last_progress_us_ = 0;
  bool progress_shown_ = false;
  Frame live_, recorded_resp_, recorded_req_, edited_;
  StickyMemory sticky_;
  std::unordered_map<int16_t, bool> sticky_apis_;
  std::unordered_set<uint32_t> asks_counted_;  // sessions whose recorded asks to come are in sticky_.asks_left
  CompareOptions cmp_;               // o_.compare, with the broker addresses learned so far
  EndpointMap endpoints_;            // recorded broker addresses -> the target's
  // The capture's cluster as its clients learnt it (which node each recorded
  // broker was) and the target's, from kwire's own Metadata to --target.
  ClusterView recorded_view_, target_view_;
  bool target_view_learnt_ = false;
  // Where a recorded broker's sessions go: --map's entry, else the target's
  // node of the recorded node id, else --target.
  HostPort route(const Endpoint& broker, size_t listener) const;
  void cluster_notes();
  // Chooses the time shift (before anything is sent) and names the capture's
  // topics whose replayed records the target's retention would delete.
  void time_setup();
  // Says which target listener each recorded listener's sessions go to, when
  // the capture or the target has more than one kind.
  void listener_notes();
  bool cluster_routing() const { return target_view_learnt_ && recorded_view_.brokers().size() >= 2; }
  // The target's node that kwire reaches at `hostport`: the node advertised
  // there, or the one whose advertised address --map says is reached there.
  int32_t target_node_at(const std::string& hostport) const {
    for (const auto& l : listeners_)
      for (const auto& [node, endpoint] : l.endpoints)
        if (endpoint == hostport || reach(endpoint) == hostport) return node;
    for (const auto& [node, endpoint] : target_view_.brokers())
      if (endpoint == hostport || reach(endpoint) == hostport) return node;
    return -1;
  }
  // Where kwire connects for an address the target advertises ("host:port"):
  // --map's destination when it names that address (a port-forward, a NAT),
  // else the address itself.
  std::string reach(const std::string& advertised) const {
    auto m = o_.map.find(advertised);
    return m == o_.map.end() ? advertised : m->second.str();
  }
  bool reach(const std::string& advertised, HostPort& hp) const {
    std::string error;
    auto m = o_.map.find(advertised);
    if (m != o_.map.end()) { hp = m->second; return true; }
    return parse_host_port(advertised, hp, error);
  }
  void classify_coordinator_session(LiveConn& c);
  // ListGroups lists the groups the asked broker coordinates, ListTransactions
  // the transactions: one that an answer lists and the other does not is not
  // a regression when the other side's coordinator of it is another node.
  // Marks such differences ignored.
  struct Listing {
    const char* api;             // ListGroups, ListTransactions
    const char* element;         // path prefix of a listed element: body.groups[
    const char* key;             // its key's JSON name: "groupId":
    CoordinatorKey type;
    const char* noun;            // group, transaction
  };
  static const Listing* listing_of(std::string_view api);
  void listed_elsewhere(const LiveConn& c, const Listing& l, std::vector<Difference>& diffs);
  // Per-request routing: the target has several brokers (the capture may have one).
  bool request_routing() const { return target_view_learnt_ && target_view_.brokers().size() >= 2; }
  // The link of session `c` that request `idx` goes over: its own, or a side
  // link to the target node where the request's role lives.
  LiveConn& link_for(LiveConn& c, uint32_t idx, bool first);
  // The session's link to target node `node`, opened as a side link when new;
  // its own when `node` is its own node or cannot be reached by address.
  LiveConn& link_to(LiveConn& c, int32_t node);
  // Sends a prepared request of session `c` where it belongs: whole over one
  // link, or split into one request per leader (split()).
  void dispatch(LiveConn& c, InFlight f, int64_t now, bool first);
  bool split(LiveConn& c, InFlight& f, int64_t now, bool first);
  // The target's leader of a recorded partition (--rename-topic applied), or ClusterView::kUnknown.
  int32_t target_leader(const PartitionRef& p) const {
    const std::string name = p.by_id ? state_.recorded_topic_name_of_text(p.topic) : p.topic;
    return name.empty() ? ClusterView::kUnknown : target_view_.leader(o_.renames.topic_prefix + name, p.partition);
  }
  // Where a recorded Fetch of partition `p` goes (KIP-392): one that a client
  // in `rack` sent a follower (the recorded session's node did not lead it)
  // goes to the target's read replica for that rack, else to the leader.
  int32_t fetch_target(const PartitionRef& p, const std::string& rack, int32_t recorded_node) {
    const int32_t lead = target_leader(p);
    if (rack.empty() || recorded_node == ClusterView::kUnknown) return lead;
    const std::string name = p.by_id ? state_.recorded_topic_name_of_text(p.topic) : p.topic;
    const int32_t recorded_lead = name.empty() ? ClusterView::kUnknown : recorded_view_.leader(name, p.partition);
    if (recorded_lead == ClusterView::kUnknown || recorded_lead == recorded_node) return lead;
    const int32_t replica = target_view_.read_replica(o_.renames.topic_prefix + name, p.partition, rack);
    if (replica == ClusterView::kUnknown) return lead;
    ++follower_fetches_;
    return replica;
  }
  uint32_t follower_fetches_ = 0;  // partitions of fetches sent to a read replica
  // preferredReadReplica compared by role: both sides read from a replica in
  // the fetch's rack, named by the answer (a replica id) or the answering
  // node itself (-1).
  void read_replica_by_role(const LiveConn& c, const InFlight& f, std::vector<Difference>& diffs);
  // ListOffsets of an internal topic (__consumer_offsets, __transaction_state,
  // __share_group_state): its offsets count the coordinators' own writes,
  // which follow their timers and the target's history, not a client's data.
  void internal_topic_offsets(std::vector<Difference>& diffs);
  void share_never_acquired();
  void assigned_sooner(const LiveConn& c, const InFlight& f, std::vector<Difference>& diffs);
  // What the session's recorded ShareGroupHeartbeat answers assign (share_assigned()),
  // from exchange `from` backward or forward: the first that `stop` takes, else -1.
  int64_t recorded_share_assignment(const LiveConn& c, uint32_t from, bool backward,
                                    const std::function<bool(int64_t)>& stop, uint64_t* frame = nullptr);
  // A split request: the request as one (compared, and sent again whole to be
  // split anew) and its parts' answers, joined once all have come.
  struct Split {
    InFlight whole;
    std::vector<std::vector<uint8_t>> answers;
    std::vector<int32_t> nodes;      // where each part went
    size_t answered = 0;
    bool by_key = false;             // cut by group or transactional id, not by partition
  };
  // A coordinator's request naming keys whose coordinators are several target
  // nodes: one request per coordinator.
  bool key_split(LiveConn& c, InFlight& f, int64_t now, bool first);
  std::vector<uint64_t> key_split_frames_;   // requests split into one per target coordinator
  // A Fetch: one per target node of the session's partitions, each in that
  // node's fetch session (LiveConn::fetches).
  bool fetch_split(LiveConn& c, InFlight& f, int64_t now, bool first);
  // The distinct nodes of node_of that are known, in order of first mention.
  static std::vector<int32_t> known_nodes(const std::vector<int32_t>& node_of);
  // Cuts `sent` (the request as sent) into one part per node of `nodes`: part k
  // keeps the elements (partitions, or by_key keys) whose node_of is nodes[k],
  // and the first also those of no known node. False when one cannot be cut.
  bool cut(const InFlight& whole, const Frame& sent, const std::vector<uint32_t>& elements,
           const std::vector<int32_t>& node_of, const std::vector<int32_t>& nodes, bool by_key, std::vector<InFlight>& parts);
  // Part k of request `whole`: `sent` (the request as sent) with only the
  // partitions (or, by_key, the keys) `keep`; `ok` false when it cannot be cut.
  InFlight part_of(const InFlight& whole, const Frame& sent, const std::vector<uint32_t>& keep, size_t k, bool& ok,
                   bool by_key = false);
  // Registers the split of `whole` and hands part k to the session's link to nodes[k].
  void send_parts(LiveConn& c, InFlight& whole, std::vector<InFlight>& parts, const std::vector<int32_t>& nodes, int64_t now,
                  bool by_key = false);
  uint32_t fetch_parts_ = 0, fetches_split_ = 0, fetch_moves_ = 0;
  std::unordered_map<uint64_t, Split> splits_;
  static uint64_t split_key(uint32_t session, uint32_t exchange) { return (uint64_t{session} << 32) | exchange; }
  // A part given up (its link dropped): true when its exchange is to be
  // finished now, once for all its parts.
  bool settle(const LiveConn& c, const InFlight& f) {
    if (f.part < 0) return true;
    return splits_.erase(split_key(c.s->id, f.exchange)) > 0;
  }
  uint32_t parts_sent_ = 0;
  // Puts a prepared request on `link`'s wire: now if it is up, else once it is.
  void transmit(LiveConn& link, InFlight f, int64_t now);
  void put_on_wire(LiveConn& link, InFlight f, int64_t now);
  size_t in_flight(const LiveConn& c) const;
  void revive(LiveConn& link) { if (link.st == LiveConn::St::Done) link.st = LiveConn::St::Idle; }
  // What the target answered of a partition's leader or a coordinator moved:
  // kwire asks the target (its own Metadata or FindCoordinator, not compared).
  void refresh_view(const Frame& live, const Exchange& e, int64_t now);
  bool ask_target(const std::vector<uint8_t>& request, int16_t api, int16_t version, Frame& answer,
                  std::vector<uint8_t>& bytes);
  std::unique_ptr<Control> control_;   // kwire's own connection to --target
  // The target's client listeners: --target's addresses (those one another's
  // Metadata lists are one listener), then each --map address of its own.
  std::vector<Listener> listeners_;
  std::map<std::string, size_t> listener_at_;   // target "host:port" -> its listener
  // Recorded broker "addr:port" -> its listener's security protocol: TLS (a
  // session recorded over TLS) and SASL (a session logged in).
  std::map<std::string, std::string> recorded_protocols_;
  bool sasl_asked_ = false;   // a listener is asked whether it wants SASL (some SASL in the capture or the options)
  // The target's endpoint of node `node` on listener `l`, or "".
  std::string endpoint_on(size_t l, int32_t node) const {
    if (l < listeners_.size()) {
      auto it = listeners_[l].endpoints.find(node);
      if (it != listeners_[l].endpoints.end()) return it->second;
    }
    return l == 0 ? target_view_.endpoint(node) : std::string();
  }
  // The --target listener for sessions recorded on broker `broker` (by its
  // security protocol), or SIZE_MAX with `error`.
  size_t listener_for(const Endpoint& broker, std::string& error) const;
  bool tls_for(const HostPort& hp) const {
    auto p = o_.protocols.find(hp.str());
    return p == o_.protocols.end() ? o_.tls.enabled : p->second == "SSL" || p->second == "SASL_SSL";
  }
  Address control_addr_;
  int64_t last_refresh_us_ = 0;
  Frame placing_;
  std::map<Role, uint32_t> routed_;          // requests sent to another node than their session's, by role
  std::vector<uint64_t> split_frames_;       // requests split into one per leader
  std::vector<uint64_t> unsplit_frames_;     // requests whose partitions (or keys) live on several nodes, sent whole
  std::vector<std::pair<uint64_t, std::string>> unplaced_;  // requests whose role's node was not known: frame, what
  uint32_t refreshes_ = 0;
  void route_to_coordinator(LiveConn& c);
  uint32_t coordinator_sessions_ = 0, coordinator_moved_ = 0, coordinator_unknown_ = 0;
  std::map<std::string, int64_t> admin_written_;  // topic -> when an admin write of the replay naming it was answered
  std::string topic_name(std::string_view id) const { return state_.recorded_topic_name(id); }
  // A lagging read whose differences an admin write not yet visible explains: sent again (true).
  bool converge_retry(LiveConn& c, InFlight& f, ExchangeResult& r, int64_t now);
  // An idempotent producer's batches (replay/sequence.hpp): whether session
  // `sess` (its own connection and side links) has a request with an earlier
  // batch of the same producer and partition that is being sent again (a
  // retry waiting, or one in flight), and whether retry `r` must wait for one.
  bool earlier_batch_resent(LiveConn& sess, const std::vector<ProducerBatch>& batches, const Retry* self = nullptr);
  bool held_back(LiveConn& sess, const Retry& r) { return !r.batches.empty() && earlier_batch_resent(sess, r.batches, &r); }
  std::vector<ProducerBatch> batches_sent(const InFlight& f);
  bool batch_resend_waits(LiveConn& sess) {
    auto waits = [](const LiveConn& l) {
      return std::any_of(l.retries.begin(), l.retries.end(), [](const Retry& r) { return !r.batches.empty(); });
    };
    return waits(sess) || std::any_of(sess.sides.begin(), sess.sides.end(), [&](const auto& s) { return waits(*s.second); });
  }
  // Whether a message's program has a field named `name`, at any depth.
  bool has_field(uint32_t sp, std::string_view name, int depth = 0) const {
    if (depth > 16) return false;
    const StructProgram& st = ps_.structure(sp);
    for (auto [first, count] : {std::pair{st.first_field, st.field_count}, std::pair{st.first_tagged, st.tagged_count}})
      for (uint32_t i = first; i < first + count; ++i) {
        const FieldDesc& d = ps_.field(i);
        if (d.name == name || (d.sub >= 0 && has_field(static_cast<uint32_t>(d.sub), name, depth + 1))) return true;
      }
    return false;
  }
  // Requests that name a replication factor (CreateTopics, a Streams group's
  // internal topics): capped at the target's brokers when it has fewer than
  // the capture's cluster.
  std::unordered_map<const MessageProgram*, bool> names_rf_;
  bool caps_replication(const MessageProgram& m) {
    if (cmp_.target_brokers <= 0 || cmp_.target_brokers >= cmp_.recorded_brokers) return false;
    auto it = names_rf_.find(&m);
    if (it != names_rf_.end()) return it->second;
    const int sub = ps_.field(m.root).sub;
    return names_rf_[&m] = sub >= 0 && has_field(static_cast<uint32_t>(sub), "ReplicationFactor");
  }
  int cap_replication(Frame& f, const ExchangeResult& r);
  // Replication factors of requests capped (api, what, first frame): the report's shape section.
  std::map<std::string, std::pair<uint32_t, uint64_t>> capped_;
  // Shape differences (CompareOptions::target_brokers), once per kind, for the report.
  void collect_shape();
  bool has_sticky(int16_t api) {
    auto it = sticky_apis_.find(api);
    if (it != sticky_apis_.end()) return it->second;
    const MessageProgram* m = ps_.find_api(std::to_string(api));
    bool yes = false;
    for (const auto* list : {&sticky_fields(), &ask_fields()})
      for (const auto& s : *list) yes |= m && s.api == m->api_name;
    return sticky_apis_[api] = yes;
  }
};

bool Engine::wanted(const LiveConn& c, const Exchange& e) const {
  if (c.filtered_session) return false;
  if (!o_.apis.empty()) {
    const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
    if (!m || !o_.apis.count(std::string(m->api_name))) return false;
  }
  if (o_.select && !o_.select(e)) return false;
  return true;
}

void Engine::resolve(uint64_t seq) {
  if (seq == kNoResponse || seq >= resolved_.size() || resolved_[seq]) return;
  resolved_[seq] = true;
  const uint64_t before = prefix_;
  while (prefix_ < resolved_.size() && resolved_[prefix_]) ++prefix_;
  if (o_.lockstep && prefix_ != before) o_.lockstep->publish(o_.lane, prefix_);
}

void Engine::finish(LiveConn& link, uint32_t idx, Outcome o, std::string note) {
  LiveConn& c = session(link);
  ExchangeResult& r = out_.exchanges[c.results[idx]];
  r.outcome = o;
  if (!note.empty()) r.note = std::move(note);
  if (o == Outcome::Regression) ++regressions_;
  ++done_;
  resolve(c.s->exchanges[idx].response_seq);
}

std::string code_text(int64_t code) {
  std::string_view name = error_name(code);
  return std::to_string(code) + (name.empty() ? "" : " " + std::string(name));
}

int Engine::control_handshake(Control& ctl, const std::string& target, const std::string& mechanism,
                              std::string& offers, std::string& error) {
  std::vector<uint8_t> resp;
  Frame f;
  wire::MessageBuilder b;
  request_header(b, 17, 1, 2, false);
  b.str(mechanism);
  if (!ctl.exchange(b.message(), resp, 10, error)) { error = "target " + target + " did not answer SaslHandshake: " + error; return -1; }
  dec_.decode_response(resp, 17, 1, f);
  const Node* ec = f.body ? find_field(f, ps_, f.body, "ErrorCode") : nullptr;
  if (!f.ok() || !ec) { error = "target " + target + " answered SaslHandshake with garbage"; return -1; }
  offers.clear();
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i)
    if (f.nodes[i].type == WireType::String && !f.nodes[i].is_null())
      offers += (offers.empty() ? "" : ", ") + std::string(f.nodes[i].str());
  return static_cast<int>(ec->v.i);
}

bool Engine::control_login(Control& ctl, const std::string& target, const SaslLogin& login, bool primary,
                           std::string& error) {
  std::string offers;
  const int code = control_handshake(ctl, target, login.mechanism, offers, error);
  if (code < 0) return false;
  if (code != 0) {
    error = "target " + target + " refused the SASL " + login.mechanism + " login" +
            (login.user.empty() ? "" : " as " + login.user) + ": SaslHandshake answered " + code_text(code) +
            (offers.empty() ? " (is it a SASL listener?)" : " (it offers " + offers + ")");
    return false;
  }
  return control_authenticate(ctl, target, login, primary, error);
}

bool Engine::control_authenticate(Control& ctl, const std::string& target, const SaslLogin& login, bool primary,
                                  std::string& error) {
  const std::string who = "target " + target + " refused the SASL " + login.mechanism + " login" +
                          (login.user.empty() ? "" : " as " + login.user);
  std::vector<uint8_t> resp;
  Frame f;
  SaslClient client(login);
  std::string msg = client.first();
  for (int32_t round = 0; round < 4; ++round) {
    wire::MessageBuilder b;
    request_header(b, 36, 2, 3 + round, true);
    b.cbytes({reinterpret_cast<const uint8_t*>(msg.data()), msg.size()}).tags0();
    if (!ctl.exchange(b.message(), resp, 10, error)) { error = who + ": " + error; return false; }
    dec_.decode_response(resp, 36, 2, f);
    const Node* ec = f.body ? find_field(f, ps_, f.body, "ErrorCode") : nullptr;
    const Node* em = f.body ? find_field(f, ps_, f.body, "ErrorMessage") : nullptr;
    const Node* ab = f.body ? find_field(f, ps_, f.body, "AuthBytes") : nullptr;
    if (!f.ok() || !ec || !ab) { error = "target " + target + " answered SaslAuthenticate with garbage"; return false; }
    if (ec->v.i != 0) {
      error = who + ": " + code_text(ec->v.i) + (em && !em->is_null() ? ": " + std::string(em->str()) : "");
      return false;
    }
    std::string reply;
    bool more = false;
    if (!client.answer({reinterpret_cast<const char*>(ab->v.p), ab->aux}, reply, more, error)) {
      error = "target " + target + ", SASL " + login.mechanism + ": " + error;
      return false;
    }
    if (!more) {
      if (primary) out_.notes.push_back("SASL " + login.mechanism + " login to " + target + (login.user.empty() ? "" : " as " + login.user) + ": accepted");
      return true;
    }
    msg = std::move(reply);
  }
  error = who + ": the login did not end after 4 rounds";
  return false;
}

bool Engine::control_setup(const HostPort& hp, const Address& a, bool primary, Listener& l, std::string& error) {
  // --target's stays open: kwire asks it again where a leader or coordinator moved.
  Control local;
  Control& ctl = primary ? *(control_ = std::make_unique<Control>()) : local;
  if (primary) control_addr_ = a;
  const TlsContext* tls = l.tls ? tls_.get() : nullptr;
  if (!ctl.connect_to(a, hp.host, tls, 5, error)) { error = "cannot connect to target " + hp.str() + ": " + error; return false; }
  if (tls)
    out_.notes.push_back("TLS to " + hp.str() + ": " + ctl.link().describe() +
                         (o_.tls.insecure ? ", the certificate NOT verified (--tls-insecure)" : ", certificate verified"));
  std::vector<uint8_t> resp;
  Frame f;
  // ApiVersions v3: what the target supports.
  {
    wire::MessageBuilder b;
    request_header(b, 18, 3, 1, true);
    b.cstr("kwire").cstr(KWIRE_VERSION).tags0();
    if (!ctl.exchange(b.message(), resp, 10, error)) { error = "target " + hp.str() + " did not answer ApiVersions: " + error; return false; }
    dec_.decode_response(resp, 18, 3, f);
    const Node* ec = f.body ? find_field(f, ps_, f.body, "ErrorCode") : nullptr;
    if (!f.ok() || !ec || ec->v.i != 0) { error = "target " + hp.str() + " answered ApiVersions v3 with an error or garbage: is it a Kafka broker?"; return false; }
    if (primary || target_.versions.empty())
      for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
        const FieldDesc& d = ps_.field(f.nodes[i].desc);
        if (d.name != "ApiKeys" || f.nodes[i].type != WireType::Array) continue;
        for (uint32_t el : Children(f, i)) {
          const Node* k = find_field(f, ps_, el, "ApiKey");
          const Node* lo = find_field(f, ps_, el, "MinVersion");
          const Node* hi = find_field(f, ps_, el, "MaxVersion");
          if (k && lo && hi) target_.versions[static_cast<int16_t>(k->v.i)] = {static_cast<int16_t>(lo->v.i), static_cast<int16_t>(hi->v.i)};
        }
        out_.target_versions.clear();
        out_.target_versions.insert(target_.versions.begin(), target_.versions.end());
        break;
      }
  }
  // SASL: where the capture or the options have some, the listener is asked
  // whether it wants a login (a listener without SASL answers SaslHandshake
  // with ILLEGAL_SASL_STATE and goes on), and kwire logs in where it does.
  if (sasl_asked_ || l.sasl) {
    constexpr int kUnsupportedMechanism = 33, kIllegalSaslState = 34;
    const SaslLogin* login = o_.sasl.empty() ? nullptr : &o_.sasl.front();
    std::string offers;
    int code = control_handshake(ctl, hp.str(), login ? login->mechanism : "PLAIN", offers, error);
    if (code < 0) return false;
    if (code == kIllegalSaslState) {
      if (l.sasl && l.sasl_known) {
        error = "target " + hp.str() + " was given as " + l.protocol() + " but does not use SASL (it answered SaslHandshake with " +
                code_text(code) + ")";
        return false;
      }
      l.sasl = false;
    } else {
      l.sasl = true;
      // The listener offers other mechanisms: another login given for one of
      // them, on a new connection (the broker closes this one).
      if (code == kUnsupportedMechanism) {
        login = nullptr;
        const auto offered = split_list(offers);
        for (const auto& g : o_.sasl)
          if (!login && std::find(offered.begin(), offered.end(), g.mechanism) != offered.end()) login = &g;
        if (login) {
          ctl = Control();
          if (!ctl.connect_to(a, hp.host, tls, 5, error)) { error = "cannot connect to target " + hp.str() + ": " + error; return false; }
          code = control_handshake(ctl, hp.str(), login->mechanism, offers, error);
          if (code < 0) return false;
        }
      }
      if (!login || code != 0) {
        std::string give;
        for (const auto& m : split_list(offers))
          if (const std::string option = sasl_option_for(m); !option.empty()) give += (give.empty() ? "" : " or ") + option;
        error = "target " + hp.str() + " asks for a SASL login (" + (offers.empty() ? code_text(code) : "it offers " + offers) +
                ")" + (give.empty() ? "" : ": give " + give);
        return false;
      }
      if (!control_authenticate(ctl, hp.str(), *login, primary, error)) return false;
      l.login = login;
    }
    l.sasl_known = true;
  }
  // Metadata v12, all topics: their ids on the target (and which exist).
  auto metadata = [&](std::set<std::string>& names) -> bool {
    wire::MessageBuilder b;
    request_header(b, 3, 12, 2, true);
    b.cnull().boolean(false).boolean(false).tags0();
    if (!ctl.exchange(b.message(), resp, 10, error)) { error = "target " + hp.str() + " did not answer Metadata: " + error; return false; }
    dec_.decode_response(resp, 3, 12, f);
    state_.learn_topics(f, true);
    Frame q;
    dec_.decode_request(b.message(), q);
    ClusterView here;
    here.learn(q, f, ps_);
    l.endpoints = here.brokers();
    if (primary) {
      target_view_.learn(q, f, ps_);
      target_view_learnt_ = true;
    }
    for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i)
      if (ps_.field(f.nodes[i].desc).name == "Name" && ps_.field(f.nodes[i].desc).entity == "topicName" && !f.nodes[i].is_null())
        names.insert(std::string(f.nodes[i].str()));
    return true;
  };
  std::set<std::string> existing;
  if (!metadata(existing)) return false;
  if (!primary || !o_.setup) return true;
  // --setup: topics of the capture (from recorded CreateTopics requests and
  // Metadata responses) that the target lacks, except those the replay itself
  // creates and the internal topics brokers make for streams groups.
  std::map<std::string, int32_t> wanted;
  std::set<std::string> made_by_replay;
  Frame q;
  for (const auto& s : rec_.sessions)
    for (const auto& e : s.exchanges) {
      const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
      if (!m) continue;
      if (m->api_name == "CreateTopics" || m->api_name == "StreamsGroupHeartbeat") {
        dec_.decode_request(e.request, q);
        for (uint32_t i = q.body + 1; i < q.nodes.size(); ++i) {
          const FieldDesc& d = ps_.field(q.nodes[i].desc);
          if (d.entity == "topicName" && d.type == WireType::String && !q.nodes[i].is_null() &&
              (m->api_name == "CreateTopics" || node_path(q, ps_, i).find("ChangelogTopics") != std::string::npos ||
               node_path(q, ps_, i).find("RepartitionSourceTopics") != std::string::npos))
            made_by_replay.insert(std::string(q.nodes[i].str()));
        }
      }
      if (m->api_name == "Metadata" && !e.response.empty()) {
        dec_.decode_response(e.response, e.api_key, e.api_version, q);
        if (!q.body) continue;
        for (uint32_t i = q.body + 1; i < q.nodes.size(); ++i) {
          if (q.nodes[i].type != WireType::Struct || !(q.nodes[i].flags & kElement)) continue;
          const Node* name = find_field(q, ps_, i, "Name");
          const Node* err = find_field(q, ps_, i, "ErrorCode");
          const Node* parts = find_field(q, ps_, i, "Partitions");
          if (!name || name->is_null() || !err || err->v.i != 0 || !parts || parts->type != WireType::Array) continue;
          if (ps_.field(name->desc).entity != "topicName") continue;
          wanted[std::string(name->str())] = std::max<int32_t>(wanted[std::string(name->str())], static_cast<int32_t>(parts->aux));
        }
      }
    }
  std::vector<Topic> create;
  for (auto& [name, n] : wanted) {
    std::string live = o_.renames.topic_prefix + name;
    if (name.starts_with("__") || made_by_replay.count(name) || existing.count(live)) continue;
    create.push_back({live, n});
  }
  if (create.empty()) { out_.notes.push_back("setup: the target has every topic the capture uses"); return true; }
  wire::MessageBuilder b;
  request_header(b, 19, 7, 3, true);
  b.carr(create.size());
  for (const auto& t : create) b.cstr(t.name).i32(t.partitions).i16(-1).carr(0).carr(0).tags0();
  b.i32(30000).boolean(false).tags0();
  if (!ctl.exchange(b.message(), resp, 40, error)) { error = "setup: CreateTopics failed: " + error; return false; }
  dec_.decode_response(resp, 19, 7, f);
  std::string made;
  for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
    if (f.nodes[i].type != WireType::Struct || !(f.nodes[i].flags & kElement)) continue;
    const Node* name = find_field(f, ps_, i, "Name");
    const Node* err = find_field(f, ps_, i, "ErrorCode");
    if (!name || !err) continue;
    if (err->v.i != 0 && err->v.i != 36 /* TOPIC_ALREADY_EXISTS */) {
      error = "setup: the target refused to create topic " + std::string(name->str()) + " (error " + std::to_string(err->v.i) + ")";
      return false;
    }
    made += (made.empty() ? "" : ", ") + std::string(name->str());
  }
  out_.notes.push_back("setup: created " + made);
  std::set<std::string> again;
  return metadata(again);
}

void Engine::classify_coordinator_session(LiveConn& c) {
  Frame q;
  int8_t type = -1;
  std::string key;
  for (const Exchange& e : c.s->exchanges) {
    dec_.decode_request(e.request, q);
    if (!q.program) continue;
    const Role role = role_of(q, ps_);
    if (role == Role::AnyBroker) continue;
    if (role != Role::GroupCoordinator && role != Role::TxnCoordinator) return;
    const auto keys = coordinator_keys(q, ps_, role);
    const int8_t t = static_cast<int8_t>(role == Role::GroupCoordinator ? CoordinatorKey::Group : CoordinatorKey::Transaction);
    if (keys.size() != 1 || (type >= 0 && (t != type || keys[0] != key))) return;
    type = t;
    key = keys[0];
  }
  if (type < 0) return;
  c.coordinator_type = type;
  c.coordinator_key = (type == static_cast<int8_t>(CoordinatorKey::Group) ? o_.renames.group_prefix : std::string()) + key;
  ++coordinator_sessions_;
}

void Engine::route_to_coordinator(LiveConn& c) {
  c.routed = true;
  const int32_t node = target_view_.coordinator(static_cast<CoordinatorKey>(c.coordinator_type), c.coordinator_key);
  HostPort hp;
  std::string error;
  Address a;
  if (node == ClusterView::kUnknown || !reach(endpoint_on(c.listener, node), hp) || !resolve_address(hp, a, error)) {
    ++coordinator_unknown_;
    return;
  }
  if (hp.str() == c.target) return;
  ++coordinator_moved_;
  c.addr = a;
  c.target_node = node;
  c.target = hp.str();
  c.host = hp.host;
  out_.sessions[c.result].target = c.target;
}

HostPort Engine::route(const Endpoint& broker, size_t listener) const {
  if (auto m = o_.map.find(broker.str()); m != o_.map.end()) return m->second;
  // A capture of one broker goes to the listener's --target address as given
  // (its spelling, its TLS server name), whatever the target advertises.
  const HostPort& bootstrap = listener < listeners_.size() ? listeners_[listener].bootstrap : o_.target;
  if (!target_view_learnt_ || recorded_view_.brokers().size() < 2) return bootstrap;
  if (const int32_t node = recorded_view_.node_at(broker.str()); node != ClusterView::kUnknown) {
    HostPort hp;
    const std::string live = endpoint_on(listener, node);
    if (!live.empty() && reach(live, hp)) return hp;
  }
  return bootstrap;
}

size_t Engine::listener_for(const Endpoint& broker, std::string& error) const {
  std::vector<size_t> of_target;
  for (size_t i = 0; i < listeners_.size(); ++i)
    if (listeners_[i].from_target) of_target.push_back(i);
  if (of_target.size() <= 1) return of_target.empty() ? 0 : of_target.front();
  auto rp = recorded_protocols_.find(broker.str());
  const std::string want = rp == recorded_protocols_.end() ? "PLAINTEXT" : rp->second;
  for (size_t i : of_target)
    if (listeners_[i].protocol() == want) return i;
  std::string have;
  for (size_t i : of_target) have += (have.empty() ? "" : ", ") + listeners_[i].protocol() + " " + listeners_[i].bootstrap.str();
  error = "the sessions recorded on " + broker.str() + " (a " + want + " listener) have no --target listener of that " +
          "security protocol (the target's: " + have + "): give --target " + want + "://HOST:PORT, or --map " +
          broker.str() + "=HOST:PORT";
  return SIZE_MAX;
}

// Says where each recorded broker's sessions go when the capture holds
// several brokers, and which recorded nodes the target lacks.
void Engine::cluster_notes() {
  const auto& recorded = recorded_view_.brokers();
  if (recorded.size() < 2) return;
  std::string line = "the capture holds " + std::to_string(recorded.size()) + " brokers; the target " +
                     (target_view_learnt_ ? "has " + std::to_string(target_view_.brokers().size()) : std::string("was not asked (--map)")) + ":";
  std::vector<int32_t> missing;
  for (const auto& [node, endpoint] : recorded) {
    const bool pinned = o_.map.count(endpoint) > 0;
    const std::string live = target_view_.endpoint(node);
    line += " node " + std::to_string(node) + " " + endpoint + " -> ";
    if (pinned) line += o_.map.at(endpoint).str() + " (--map);";
    else if (!live.empty())
      line += "node " + std::to_string(node) + " " + live + (reach(live) != live ? " (reached at " + reach(live) + ", --map)" : "") + ";";
    else line += o_.target.str() + " (--target);", missing.push_back(node);
  }
  line.pop_back();
  out_.notes.push_back(line);
  if (!missing.empty() && target_view_learnt_) {
    std::string ids;
    for (int32_t n : missing) ids += (ids.empty() ? "" : ", ") + std::to_string(n);
    out_.notes.push_back("the target has no node " + ids + ": their sessions go to " + o_.target.str() +
                         " (their ApiVersions name its node), and each request where its role lives; --map names the "
                         "target broker a recorded one is");
  }
}

void Engine::listener_notes() {
  std::map<std::string, std::vector<const RecordedSession*>> by_protocol;   // recorded protocol -> a session per broker
  std::set<std::string> seen;
  for (const auto& s : rec_.sessions)
    if (seen.insert(s.broker.str()).second) by_protocol[recorded_protocols_[s.broker.str()]].push_back(&s);
  if (listeners_.size() < 2 && by_protocol.size() < 2) return;
  std::string line = "listeners:";
  for (const auto& [protocol, sessions] : by_protocol) {
    const std::string first = sessions.front()->broker.str();
    std::string where;
    if (auto m = o_.map.find(first); m != o_.map.end()) {
      where = m->second.str() + " (--map)";
    } else {
      std::string ignored;
      const size_t l = listener_for(sessions.front()->broker, ignored);
      where = l < listeners_.size() ? listeners_[l].protocol() + " " + listeners_[l].bootstrap.str() +
                                          (listeners_[l].login ? " (" + listeners_[l].login->mechanism + " login)" : "")
                                    : "none";
    }
    line += " recorded " + protocol + " " + first +
            (sessions.size() > 1 ? " and " + std::to_string(sessions.size() - 1) + " more" : "") + " -> " + where + ";";
  }
  line.pop_back();
  out_.notes.push_back(line);
}

void Engine::time_setup() {
  const CaptureTimes times = capture_times(ps_, rec_);
  const int64_t start_ms = wall_ns() / 1'000'000;
  cmp_.run_from_ms = start_ms;
  const bool recorded_timing = o_.timing == ReplayOptions::Timing::Recorded && o_.speed <= 1.0;
  const int64_t shift = o_.keep_timestamps ? 0 : choose_shift(times, start_ms, recorded_timing);
  state_.set_time_shift(shift);
  out_.time_shift_ms = shift;
  if (times.batches == 0) return;
  if (o_.keep_timestamps)
    out_.notes.push_back("timestamps: record timestamps are sent as recorded (--keep-timestamps)");
  else
    out_.notes.push_back("timestamps: record timestamps and ListOffsets times moved by " + shift_text(shift) +
                         " (the replay's start minus the capture's " +
                         (recorded_timing ? "first request" : "last request") +
                         (times.min_age_ms >= 1000 && times.min_age_ms != INT64_MAX
                              ? ", plus the " + shift_text(times.min_age_ms).substr(1) + " every record was already old when sent"
                              : std::string()) +
                         "); answers compared modulo that shift");
  // What the target keeps: each topic's retention.ms (its own, or the
  // broker's default through it), or the broker's log.retention.* for a
  // topic the target lacks. A replayed record is deleted once it is older
  // than that; the oldest is that old when the replay ends.
  if (!control_ && listeners_.empty()) return;
  const double duration_ms = o_.timing == ReplayOptions::Timing::Recorded
                                 ? static_cast<double>(times.last_us - times.first_us) / 1000.0 / o_.speed
                                 : 0.0;
  std::map<std::string, int64_t> oldest;   // live topic name -> oldest replayed timestamp
  for (const auto& [topic, ms] : times.oldest_ms) {
    std::string name = topic;
    if (name.starts_with("id:")) {
      name = state_.recorded_topic_name_of_text(name.substr(3));
      if (name.empty()) continue;
    }
    oldest[o_.renames.topic_prefix + name] = ms + shift;
  }
  if (oldest.empty()) return;
  auto describe = [&](int8_t type, const std::vector<std::string>& names, std::map<std::string, std::map<std::string, std::string>>& out) {
    wire::MessageBuilder b;
    request_header(b, 32, 4, 4, true);
    b.carr(names.size());
    for (const auto& n : names) b.i8(type).cstr(n).cnull().tags0();
    b.boolean(false).boolean(false).tags0();
    Frame answer;
    std::vector<uint8_t> bytes;
    if (!ask_target(b.message(), 32, 4, answer, bytes)) return false;
    for (uint32_t i = answer.body + 1; i < answer.nodes.size(); ++i) {
      const Node& n = answer.nodes[i];
      if (n.type != WireType::Struct || !(n.flags & kElement) || ps_.field(n.desc).name != "Results") continue;
      const Node* err = find_field(answer, ps_, i, "ErrorCode");
      const Node* name = find_field(answer, ps_, i, "ResourceName");
      if (!err || err->v.i != 0 || !name) continue;
      auto& configs = out[std::string(name->str())];
      for (uint32_t c = i + 1; c < n.end; ++c) {
        const Node& cn = answer.nodes[c];
        if (cn.type != WireType::Struct || !(cn.flags & kElement) || ps_.field(cn.desc).name != "Configs") continue;
        const Node* k = find_field(answer, ps_, c, "Name");
        const Node* v = find_field(answer, ps_, c, "Value");
        if (k && v && !v->is_null()) configs[std::string(k->str())] = std::string(v->str());
      }
    }
    return true;
  };
  std::vector<std::string> names;
  for (const auto& [name, ms] : oldest) names.push_back(name);
  std::map<std::string, std::map<std::string, std::string>> topic_configs, broker_configs;
  if (!describe(2, names, topic_configs)) return;
  // The broker kwire asks: its node id, by the address it was reached at.
  std::string broker_default;
  int64_t broker_ms = 0;
  bool broker_known = false;
  if (!listeners_.empty()) {
    const Listener& l = listeners_.front();
    for (const auto& [node, endpoint] : l.endpoints)
      if (endpoint == l.bootstrap.str() && describe(4, {std::to_string(node)}, broker_configs)) {
        broker_known = retention_of(broker_configs[std::to_string(node)], broker_ms);
        break;
      }
  }
  const double end_ms = static_cast<double>(start_ms) + duration_ms;
  for (const auto& [name, ts] : oldest) {
    int64_t keep = 0;
    std::string where;
    if (auto t = topic_configs.find(name); t != topic_configs.end() && retention_of(t->second, keep)) where = "its retention.ms";
    else if (broker_known) { keep = broker_ms; where = "the broker's log.retention.*: the topic is not there yet"; }
    else continue;
    if (keep < 0) continue;
    const double age = end_ms - static_cast<double>(ts);
    if (age < static_cast<double>(keep)) continue;
    const std::string w = "retention: the target deletes records of topic " + name + " older than " +
                          shift_text(keep).substr(1) + " (" + where + "), and the replay writes some " +
                          shift_text(static_cast<int64_t>(age)).substr(1) + " old" +
                          (o_.keep_timestamps ? " (--keep-timestamps: drop it, or raise retention.ms)"
                                              : " (their producer dated them so): raise retention.ms, or expect answers to differ");
    out_.retention_warnings.push_back(w);
    out_.notes.push_back(w);
    if (o_.warn) o_.warn(w);
  }
}

bool Engine::prepare(std::string& error) {
  // The capture's cluster, as its clients learnt it: in capture order, so that
  // the last answer about a role is the one that holds.
  {
    std::vector<const Exchange*> order;
    for (const auto& s : rec_.sessions)
      for (const auto& e : s.exchanges)
        if (!e.response.empty()) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const Exchange* a, const Exchange* b) { return a->response_seq < b->response_seq; });
    Frame q, r;
    for (const Exchange* e : order) {
      const MessageProgram* m = ps_.find(e->api_key, e->api_version, Direction::Response);
      if (!m || (m->api_name != "Metadata" && m->api_name != "DescribeCluster" && m->api_name != "FindCoordinator")) continue;
      dec_.decode_request(e->request, q);
      dec_.decode_response(e->response, e->api_key, e->api_version, r);
      recorded_view_.learn(q, r, ps_);
    }
  }
  // Each recorded broker address's listener: TLS when a session to it was
  // recorded over TLS, SASL when one logged in.
  for (const auto& s : rec_.sessions) {
    std::string& p = recorded_protocols_[s.broker.str()];
    const bool tls = s.tls || p == "SSL" || p == "SASL_SSL";
    const bool sasl = !s.sasl_mechanism.empty() || p == "SASL_PLAINTEXT" || p == "SASL_SSL";
    p = security_protocol(tls, sasl);
    sasl_asked_ = sasl_asked_ || sasl;
  }
  sasl_asked_ = sasl_asked_ || !o_.sasl.empty();
  for (const auto& [hp, protocol] : o_.protocols) sasl_asked_ = sasl_asked_ || protocol.starts_with("SASL");
  // Targets: each recorded broker maps to --map's entry, to the target's node
  // of the same id (the target is a cluster: its brokers come from its own
  // Metadata answer), or to --target; on the target listener of its own
  // security protocol.
  std::map<std::string, std::pair<HostPort, Address>> targets;
  auto target_of = [&](const Endpoint& broker, size_t listener) -> std::pair<HostPort, Address>* {
    const HostPort hp = route(broker, listener);
    auto it = targets.find(hp.str());
    if (it != targets.end()) return &it->second;
    Address a;
    if (!resolve_address(hp, a, error)) return nullptr;
    return &targets.emplace(hp.str(), std::make_pair(hp, a)).first->second;
  };
  // A listener found at `hp`: asked (ApiVersions, SASL, Metadata), and each
  // of its brokers' addresses known as its.
  auto add_listener = [&](const HostPort& hp, bool from_target, bool primary) -> bool {
    Address a;
    if (!resolve_address(hp, a, error)) return false;
    targets.emplace(hp.str(), std::make_pair(hp, a));
    Listener l;
    l.bootstrap = hp;
    l.from_target = from_target;
    l.tls = tls_for(hp);
    if (auto p = o_.protocols.find(hp.str()); p != o_.protocols.end()) l.sasl = l.sasl_known = p->second.starts_with("SASL");
    if (!control_setup(hp, a, primary, l, error)) return false;
    const size_t index = listeners_.size();
    listener_at_.emplace(hp.str(), index);
    for (const auto& [node, endpoint] : l.endpoints) listener_at_.emplace(endpoint, index);
    listeners_.push_back(std::move(l));
    return true;
  };
  // Every target a replayed session goes to is asked first (ApiVersions,
  // Metadata): a replay that cannot reach one cannot run. --target is asked
  // first when a session is not pinned by --map: its versions decide what is
  // unsupported, and its brokers where each recorded node's sessions go.
  {
    auto replayed = [&](const RecordedSession& s) {
      if (!s.skip.empty() && !s.skip.starts_with("authenticates")) return false;
      return o_.conns.empty() || o_.conns.count(s.id) > 0;
    };
    bool unpinned = false, any = false;
    for (const auto& s : rec_.sessions) {
      if (!replayed(s)) continue;
      any = true;
      if (!o_.map.count(s.broker.str())) unpinned = true;
    }
    bool need_tls = o_.tls.enabled;
    for (const auto& [hp, protocol] : o_.protocols) need_tls = need_tls || protocol == "SSL" || protocol == "SASL_SSL";
    if (need_tls) {
      TlsClientOptions t = o_.tls;
      t.enabled = true;
      tls_ = TlsContext::create(t, error);
      if (!tls_) return false;
    }
    bool primary = true;
    if (unpinned || !any) {
      // --target's addresses: one listener each, but for those an earlier
      // one's Metadata named (bootstrap brokers of the same listener).
      for (const HostPort& hp : o_.targets.empty() ? std::vector<HostPort>{o_.target} : o_.targets) {
        if (listener_at_.count(hp.str())) continue;
        if (!add_listener(hp, true, primary)) return false;
        primary = false;
      }
    }
    std::vector<std::pair<HostPort, size_t>> used;
    for (const auto& s : rec_.sessions) {
      if (!replayed(s)) continue;
      size_t listener = 0;
      if (auto m = o_.map.find(s.broker.str()); m != o_.map.end()) {
        auto at = listener_at_.find(m->second.str());
        if (at == listener_at_.end()) {
          if (!add_listener(m->second, false, primary)) return false;
          primary = false;
          continue;
        }
        listener = at->second;
      } else if ((listener = listener_for(s.broker, error)) == SIZE_MAX) {
        return false;
      }
      const HostPort hp = route(s.broker, listener);
      if (targets.count(hp.str())) continue;
      if (std::none_of(used.begin(), used.end(), [&](const auto& u) { return u.first.str() == hp.str(); }))
        used.emplace_back(hp, listener);
    }
    // The other brokers sessions go to: reachable, on the listener they are of.
    for (const auto& [hp, listener] : used) {
      Address a;
      if (!resolve_address(hp, a, error)) return false;
      targets.emplace(hp.str(), std::make_pair(hp, a));
      Listener scratch = listeners_.at(listener);
      if (!control_setup(hp, a, false, scratch, error)) return false;
    }
    cluster_notes();
    listener_notes();
    // The two clusters' sizes, for what follows from them alone (shape
    // differences), and the target's nodes, where a leader must be.
    if (target_view_learnt_) {
      cmp_.recorded_brokers = static_cast<int>(recorded_view_.brokers().size());
      cmp_.target_brokers = static_cast<int>(target_view_.brokers().size());
      for (const auto& [node, endpoint] : target_view_.brokers()) cmp_.target_nodes.push_back(node);
    }
  }
  // Recorded topic ids, from every recorded response.
  {
    Frame f;
    for (const auto& s : rec_.sessions)
      for (const auto& e : s.exchanges)
        if (!e.response.empty()) {
          dec_.decode_response(e.response, e.api_key, e.api_version, f);
          state_.learn_topics(f, false);
        }
  }
  time_setup();
  int64_t first = INT64_MAX, last = 0;
  std::map<std::string, int> sasl_skipped;   // sessions not replayed for want of credentials, by mechanism
  int logins_added = 0;                      // sessions recorded without a login that log in first
  std::string added_with;                    // their mechanisms
  int logins_dropped = 0;                    // sessions recorded with a login, to a listener without SASL
  order_ = cross_session_order(ps_, rec_);
  if (const OrderCounts n = count_waits(order_); n.write_before_read || n.txn_end_before_read || n.read_before_truncation) {
    auto many = [](uint64_t k, const char* one, const char* more) { return std::to_string(k) + " " + (k == 1 ? one : more); };
    std::string line = "order across sessions, as the capture's brokers saw it:";
    if (n.write_before_read)
      line += " " + many(n.write_before_read, "read waits", "reads wait") + " for a write another session sent first;";
    if (n.txn_end_before_read)
      line += " " + many(n.txn_end_before_read, "read_committed fetch waits", "read_committed fetches wait") + " for a transaction's end;";
    if (n.read_before_truncation)
      line += " " + many(n.read_before_truncation, "truncation (DeleteRecords) waits", "truncations (DeleteRecords) wait") +
              " for a read sent before it;";
    line.pop_back();
    out_.notes.push_back(line);
  }
  for (const auto& s : rec_.sessions) {
    SessionResult sr;
    sr.id = s.id;
    sr.client = s.client.str();
    sr.broker = s.broker.str();
    sr.client_id = s.client_id;
    sr.skip = s.skip;
    sr.broker_traffic = s.broker_traffic;
    LiveConn c;
    c.retry.max_retries = o_.retry_budget.max_retries;
    c.retry.max_us = o_.retry_budget.max_us;
    size_t listener = 0;
    if (auto m = o_.map.find(s.broker.str()); m != o_.map.end()) {
      auto at = listener_at_.find(m->second.str());
      listener = at == listener_at_.end() ? 0 : at->second;
    } else {
      std::string ignored;
      listener = listener_for(s.broker, ignored);
      if (listener == SIZE_MAX) listener = 0;   // a session not replayed (prepare asked the others)
    }
    const Listener* to = listener < listeners_.size() ? &listeners_[listener] : nullptr;
    c.listener = listener;
    c.tls = to ? to->tls : o_.tls.enabled;
    if (!s.sasl_mechanism.empty() && s.skip.starts_with("authenticates") && to && to->sasl_known && !to->sasl) {
      // Recorded with a login, to a listener without SASL: sent without it.
      sr.skip.clear();
      c.drop_login = true;
      ++logins_dropped;
    } else if (!s.sasl_mechanism.empty() && s.skip.starts_with("authenticates")) {
      // Recorded with a SASL login: replayed with the given credentials for
      // its mechanism, or not at all (a login cannot be replayed as recorded).
      if (const SaslLogin* login = o_.login_for(s.sasl_mechanism)) {
        sr.skip.clear();
        c.sasl = std::make_unique<SaslClient>(*login);
      } else {
        const std::string option = sasl_option_for(s.sasl_mechanism);
        sr.skip += option.empty() ? ", which kwire cannot log in with" : ": give " + option + " to replay it";
        ++sasl_skipped[s.sasl_mechanism];
      }
    } else if (s.sasl_mechanism.empty() && s.skip.empty() && to && to->sasl && to->login) {
      c.login_first = to->login;
      if (added_with.find(to->login->mechanism) == std::string::npos)
        added_with += (added_with.empty() ? "" : " or ") + to->login->mechanism;
      ++logins_added;
    }
    c.s = &s;
    c.result = out_.sessions.size();
    auto* t = target_of(s.broker, listener);
    if (!t) return false;
    c.addr = t->second;
    c.target = t->first.str();
    c.host = t->first.host;
    c.target_node = target_node_at(c.target);
    // A client listener of the recorded broker stands for the target's
    // (a broker's own connections to its controller do not: skipped): as the
    // target advertises it, where kwire reaches it elsewhere (--map).
    std::string seen_as = c.target;
    if (c.target_node >= 0)
      if (const std::string adv = endpoint_on(listener, c.target_node); !adv.empty() && adv != c.target && reach(adv) == c.target)
        seen_as = adv;
    if (s.skip.empty() || c.sasl) endpoints_.add(s.broker.str(), seen_as);
    sr.target = c.target;
    if (!o_.conns.empty() && !o_.conns.count(s.id)) c.filtered_session = true, sr.skip = "not chosen (--conn)";
    if (!o_.groups.empty() && !c.filtered_session) {
      // A session is chosen when one of its requests names one of the groups.
      bool hit = false;
      Frame f;
      for (const auto& e : s.exchanges) {
        dec_.decode_request(e.request, f);
        for (uint32_t i = f.body ? f.body + 1 : f.nodes.size(); i < f.nodes.size() && !hit; ++i)
          if (ps_.field(f.nodes[i].desc).entity == "groupId" && f.nodes[i].type == WireType::String &&
              !f.nodes[i].is_null() && o_.groups.count(std::string(f.nodes[i].str())))
            hit = true;
        if (hit) break;
      }
      if (!hit) c.filtered_session = true, sr.skip = "names none of the groups (--group)";
    }
    if (!sr.skip.empty() && !c.filtered_session) c.filtered_session = true;
    if (cluster_routing() && !c.filtered_session) classify_coordinator_session(c);
    out_.sessions.push_back(sr);
    for (uint32_t i = 0; i < s.exchanges.size(); ++i) {
      const Exchange& e = s.exchanges[i];
      ExchangeResult r;
      r.session = s.id;
      r.index = i;
      r.frame = e.frame;
      r.response_frame = e.response_frame;
      r.api_key = e.api_key;
      r.api_version = e.api_version;
      const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
      r.api_name = m ? std::string(m->api_name) : "api " + std::to_string(e.api_key);
      if (e.response_us >= 0) r.recorded_latency_us = e.response_us - e.request_us;
      c.results.push_back(out_.exchanges.size());
      c.settled.push_back(false);
      out_.exchanges.push_back(std::move(r));
      if (wanted(c, e)) {
        ++total_;
        first = std::min(first, e.request_us);
        last = std::max(last, e.request_us);
      }
    }
    c.waits = &order_[static_cast<size_t>(&s - rec_.sessions.data())];
    conns_.push_back(std::move(c));
  }
  for (const auto& [mechanism, n] : sasl_skipped) {
    const std::string option = sasl_option_for(mechanism);
    out_.notes.push_back(std::to_string(n) + (n == 1 ? " session logs in" : " sessions log in") + " with SASL " + mechanism +
                         " and " + (n == 1 ? "was" : "were") + " not replayed: " +
                         (option.empty() ? "kwire cannot log in with it" : "give " + option));
  }
  if (logins_added)
    out_.notes.push_back(std::to_string(logins_added) + (logins_added == 1 ? " session" : " sessions") +
                         " recorded without a SASL login " + (logins_added == 1 ? "logs" : "log") + " in with " +
                         added_with + " first (not compared)");
  if (logins_dropped)
    out_.notes.push_back(std::to_string(logins_dropped) + (logins_dropped == 1 ? " session" : " sessions") +
                         " recorded with a SASL login " + (logins_dropped == 1 ? "goes" : "go") +
                         " to a target listener without SASL: its SaslHandshake and SaslAuthenticate are not sent");
  t0_recorded_us_ = first == INT64_MAX ? 0 : first;
  t_last_recorded_us_ = last;
  if (!o_.record_out.empty() && !traffic_.open(o_.record_out, error)) return false;
  return true;
}

void Engine::start_connect(LiveConn& c, int64_t now) {
  std::string error;
  const int fd = open_socket(c.addr, error);
  c.in.clear();
  c.out.clear();
  c.out_off = 0;
  if (fd < 0 || !c.link.attach(fd, c.tls ? tls_.get() : nullptr, c.host, error)) {
    c.st = LiveConn::St::Backoff;
    if (c.down_since_us < 0) c.down_since_us = now;
    c.wake_us = now + c.backoff_us;
    c.backoff_us = std::min<int64_t>(c.backoff_us * 2, 2000000);
    return;
  }
  c.st = LiveConn::St::Connecting;
}

void Engine::on_connected(LiveConn& c, int64_t now) {
  if (c.link.tls()) {
    c.st = LiveConn::St::Handshaking;
    tls_step(c, now);
    return;
  }
  up(c, now);
}

void Engine::tls_step(LiveConn& c, int64_t now) {
  std::string error;
  switch (c.link.handshake(error)) {
    case Link::Io::Done: up(c, now); return;
    case Link::Io::WantRead: c.tls_wants = POLLIN; return;
    case Link::Io::WantWrite: c.tls_wants = POLLOUT; return;
    case Link::Io::Closed: drop(c, now, "cannot connect to " + c.target + ": the target closed the connection in the TLS handshake"); return;
    case Link::Io::Failed: drop(c, now, "cannot connect to " + c.target + ": " + error); return;
  }
}

void Engine::up(LiveConn& c, int64_t now) {
  // A session that replays its own login (its recorded SaslHandshake and
  // SaslAuthenticate) and lost its connection once that login had begun: the
  // new connection logs in too, as a client does on every connection, and
  // what is left of the recorded login is not sent. Nothing is sent on a
  // connection before its login completes.
  const SaslLogin* login = c.login_first;
  if (!login && !c.owner && c.sasl && c.login_begun) {
    login = &c.sasl->login();
    c.relogin = true;
  }
  if (login) {
    // A login of kwire's own, not compared: one request at a time on the new
    // connection, with a deadline, before any of the session's requests.
    Control ctl(std::move(c.link));
    std::string error;
    const bool ok = control_login(ctl, c.target, *login, false, error);
    c.link = ctl.release();
    if (!ok) { drop(c, now, "cannot log in: " + error); return; }
  }
  c.st = LiveConn::St::Up;
  c.down_since_us = -1;
  c.backoff_us = 100000;
  if (traffic_.active()) {
    sockaddr_storage local{}, peer{};
    socklen_t l = sizeof local, p = sizeof peer;
    getsockname(c.link.fd(), reinterpret_cast<sockaddr*>(&local), &l);
    getpeername(c.link.fd(), reinterpret_cast<sockaddr*>(&peer), &p);
    c.flow = TrafficWriter::Flow{endpoint_of(local), endpoint_of(peer)};
    traffic_.handshake(c.flow);
  }
}

void Engine::close_link(LiveConn& c) {
  if (c.link.fd() < 0) return;
  if (traffic_.active() && c.st == LiveConn::St::Up) traffic_.finish(c.flow);
  c.link.close();
}

void Engine::flush(LiveConn& c, int64_t now) {
  while (c.link.fd() >= 0 && c.out_off < c.out.size()) {
    size_t n = 0;
    std::string error;
    const Link::Io io = c.link.write(c.out.data() + c.out_off, c.out.size() - c.out_off, n, error);
    if (io == Link::Io::Failed) { drop(c, now, error); return; }
    if (io != Link::Io::Done || n == 0) return;
    c.out_off += n;
    if (c.out_off == c.out.size()) { c.out.clear(); c.out_off = 0; }
  }
}

void Engine::drop(LiveConn& c, int64_t now, const std::string& why) {
  close_link(c);
  for (const InFlight& f : c.inflight)
    if (settle(c, f)) finish(c, f.exchange, Outcome::Unanswered, why);
  c.inflight.clear();
  for (const Retry& r : c.retries) finish(c, r.f.exchange, Outcome::Unanswered, why + " (while retrying)");
  c.retries.clear();
  if (c.next >= c.s->exchanges.size() && c.handed.empty()) { c.st = LiveConn::St::Done; return; }
  ++out_.sessions[c.result].reconnects;
  c.st = LiveConn::St::Backoff;
  if (c.down_since_us < 0) c.down_since_us = now;
  c.wake_us = now + c.backoff_us;
  c.backoff_us = std::min<int64_t>(c.backoff_us * 2, 2000000);
}

int Engine::cap_replication(Frame& f, const ExchangeResult& r) {
  int changed = 0;
  const int64_t most = cmp_.target_brokers;
  for (uint32_t i = f.body ? f.body + 1 : f.nodes.size(); i < f.nodes.size(); ++i) {
    Node& n = f.nodes[i];
    if (n.desc == kDescUnknownTag || !is_integer(n.type) || ps_.field(n.desc).name != "ReplicationFactor" || n.v.i <= most) continue;
    auto& [count, first] = capped_[r.api_name + " request " + node_path(f, ps_, i) + " " + std::to_string(n.v.i) + " sent as " +
                                   std::to_string(most)];
    if (!count++) first = r.frame;
    n.v.i = most;
    ++changed;
  }
  return changed;
}

void Engine::collect_shape() {
  out_.recorded_brokers = cmp_.recorded_brokers;
  out_.target_brokers = cmp_.target_brokers;
  for (const auto& [what, seen] : capped_) {
    ShapeDifference d;
    d.what = what;
    d.why = "a topic cannot have more replicas than the target has brokers";
    d.count = seen.first;
    d.first_frame = seen.second;
    out_.shape.push_back(std::move(d));
  }
  // Once per api, field (indices and DescribeConfigs' synonyms left out) and
  // reason; counted by responses.
  std::map<std::string, std::pair<size_t, uint64_t>> at;   // key -> its entry, the last frame counted
  for (const auto& x : out_.exchanges)
    for (const auto& diff : x.differences) {
      if (!diff.ignored || !diff.rule.starts_with(kShapeRule)) continue;
      std::string path = plain_path(diff.path);
      if (const size_t syn = path.find(".synonyms."); syn != std::string::npos) path.erase(syn, 9);
      const std::string key = x.api_name + '\x1e' + path + '\x1e' + diff.rule;
      auto [it, fresh] = at.emplace(key, std::make_pair(out_.shape.size(), uint64_t{0}));
      if (fresh) {
        ShapeDifference d;
        d.what = x.api_name + " " + path;
        d.why = diff.rule.substr(kShapeRule.size());
        d.first_frame = x.frame;
        d.recorded = diff.recorded;
        d.replayed = diff.replayed;
        out_.shape.push_back(std::move(d));
      }
      if (it->second.second != x.frame || fresh) ++out_.shape[it->second.first].count;
      it->second.second = x.frame;
    }
}

bool Engine::prepare_request(LiveConn& c, const Exchange& e, uint32_t idx, std::vector<uint8_t>& bytes, bool& skip) {
  const int32_t corr = ++c.corr;
  if (c.sasl && (e.api_key == 17 || e.api_key == 36)) c.login_begun = true;
  const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
  const bool login = c.sasl && m && m->api_name == "SaslAuthenticate";
  const bool node_id = e.api_key == 18 && e.api_version >= 5 && c.target_node >= 0;  // see below
  const bool cap = m && !e.malformed && caps_replication(*m);
  const bool share_ack = e.api_key == kShareFetchKey || e.api_key == kShareAcknowledgeKey;
  if (e.malformed || !m ||
      (!login && !node_id && !cap && !share_ack && !o_.on_request && (!state_.substituting() || !state_.may_rewrite(*m)))) {
    // Nothing in it can change (or it does not decode as recorded): sent as
    // it was, with the new correlation id.
    bytes = e.request;
    if (bytes.size() >= 12) wire::store_be32(bytes.data() + 8, static_cast<uint32_t>(corr));
    return true;
  }
  Frame& edited = edited_;
  dec_.decode_request(e.request, edited);
  ExchangeResult& r = out_.exchanges[c.results[idx]];
  r.substitutions = state_.rewrite_request(edited, c.s->id);
  // The login with the given credentials: the client's first message, then
  // its answer to what the target sent last.
  if (login) {
    std::string token = c.sasl_started ? c.sasl_reply : c.sasl->first();
    c.sasl_started = true;
    for (uint32_t i = edited.body + 1; i < edited.nodes.size(); ++i)
      if (ps_.field(edited.nodes[i].desc).name == "AuthBytes") {
        std::string_view s = edited.own(token);
        edited.nodes[i].v.p = reinterpret_cast<const uint8_t*>(s.data());
        edited.nodes[i].aux = static_cast<uint32_t>(s.size());
      }
  }
  if (o_.on_request) {
    std::string error;
    if (!o_.on_request(edited, e.frame, c.s->client.str() + "->" + c.s->broker.str(), skip, error)) {
      r.note = "script: " + error;
      skip = true;
      return false;
    }
    if (skip) return true;
  }
  if (cap) r.substitutions += cap_replication(edited, r);
  // A share consumer acknowledges what it acquired: on the target, that is
  // what this member's ShareFetches acquired there.
  if (share_ack)
    if (const int n = translate_acknowledgements(edited, ps_, share_); n > 0) {
      r.substitutions += n;
      share_rewritten_.insert({c.s->id, idx});
    }
  if (e.api_key == 18 && c.target_node >= 0 && edited.body) {
    // ApiVersions v5+ names the node the client meant (KIP-1102's
    // REBOOTSTRAP_REQUIRED answers a mismatch): the target's node it goes to.
    if (const Node* id = find_field(edited, ps_, edited.body, "NodeId"); id && id->v.i >= 0 && id->v.i != c.target_node) {
      edited.nodes[static_cast<uint32_t>(id - edited.nodes.data())].v.i = c.target_node;
      ++r.substitutions;
    }
  }
  for (uint32_t i = 1; i < edited.nodes.size() && i < edited.nodes[0].end; ++i)
    if (ps_.field(edited.nodes[i].desc).name == "CorrelationId") edited.nodes[i].v.i = corr;
  edited.correlation_id = corr;
  bytes.clear();
  std::string error;
  if (!enc_.encode(edited, bytes, error)) {
    r.note = "cannot encode the rewritten request: " + error;
    return false;
  }
  return true;
}

void Engine::pump(LiveConn& c, int64_t now, int64_t& wake) {
  const auto& ex = c.s->exchanges;
  LiveConn& owner = session(c);
  if ((c.owner || c.next >= ex.size()) && c.st != LiveConn::St::Up && (!c.handed.empty() || !c.retries.empty())) {
    // A link with requests handed to it (a side link, or the session's own
    // after its last request) connects for them.
    if (c.st == LiveConn::St::Done || c.st == LiveConn::St::Idle) {
      start_connect(c, now);
    } else if (c.st == LiveConn::St::Backoff) {
      if (now - c.down_since_us > static_cast<int64_t>(o_.reconnect_s * 1e6)) {
        out_.target_lost = true;
        for (const InFlight& f : c.handed)
          if (settle(c, f)) finish(c, f.exchange, Outcome::Unanswered, "not sent: the target " + c.target + " stayed unreachable");
        for (const Retry& r : c.retries) finish(c, r.f.exchange, Outcome::Unanswered, "not sent again: the target " + c.target + " stayed unreachable");
        c.handed.clear();
        c.retries.clear();
        c.st = LiveConn::St::Done;
        return;
      }
      if (now >= c.wake_us) start_connect(c, now);
      else wake = std::min(wake, c.wake_us);
    }
  }
  if (c.st == LiveConn::St::Up) {
    while (!c.handed.empty()) {
      InFlight f = std::move(c.handed.front());
      c.handed.pop_front();
      put_on_wire(c, std::move(f), now);
    }
    // Due retries in the order they were made, but an idempotent producer's
    // batch only after every earlier one of its partition: a pass that sends
    // one may free another.
    for (bool sent = true; sent;) {
      sent = false;
      for (size_t k = 0; k < c.retries.size();) {
        if (c.retries[k].due_us > now || held_back(owner, c.retries[k])) { ++k; continue; }
        Retry r = std::move(c.retries[k]);
        c.retries.erase(c.retries.begin() + static_cast<std::ptrdiff_t>(k));
        r.f.deadline_us = r.f.sent_us + static_cast<int64_t>(o_.timeout_s * 1e6);
        // Sent where the request's role lives now: a leader or coordinator the
        // target named since (a KIP-951 hint, kwire's own Metadata) is taken.
        dispatch(owner, std::move(r.f), now, false);
        sent = true;
      }
    }
  }
  // A retry held back waits for one that may be on another link of its
  // session: looked at again shortly.
  for (const Retry& r : c.retries) wake = std::min(wake, std::max(r.due_us, now + kHeldRetryStepUs));
  if (c.owner) {
    if (owner.next >= ex.size() && c.inflight.empty() && c.handed.empty() && c.retries.empty() && c.st != LiveConn::St::Done) {
      close_link(c);
      c.st = LiveConn::St::Done;
    }
    return;
  }
  while (c.next < ex.size()) {
    const uint32_t idx = c.next;
    const Exchange& e = ex[idx];
    if (c.settled[idx]) { ++c.next; continue; }
    if (!wanted(c, e)) {
      ExchangeResult& r = out_.exchanges[c.results[idx]];
      r.outcome = Outcome::Skipped;
      if (r.note.empty()) r.note = out_.sessions[c.result].skip.empty() ? "not chosen" : out_.sessions[c.result].skip;
      resolve(e.response_seq);
      ++c.next;
      continue;
    }
    if ((c.drop_login || c.relogin) && (e.api_key == 17 /* SaslHandshake */ || e.api_key == 36 /* SaslAuthenticate */)) {
      finish(c, idx, Outcome::Skipped,
             c.drop_login ? "not sent: the target listener " + c.target + " does not use SASL"
                          : "not sent: the connection was lost during the login, and kwire logged its new one in");
      ++c.next;
      continue;
    }
    if (!target_.versions.empty() && !target_.supports(e.api_key, e.api_version)) {
      auto it = target_.versions.find(e.api_key);
      finish(c, idx, Outcome::Unsupported,
             it == target_.versions.end()
                 ? "the target does not support this api"
                 : "the target supports v" + std::to_string(it->second.first) + "-v" + std::to_string(it->second.second));
      ++c.next;
      continue;
    }
    if (c.st == LiveConn::St::Idle && c.coordinator_type >= 0 && !c.routed) {
      if (e.after > prefix_) return;  // the answers before it say where its coordinator is
      route_to_coordinator(c);
    }
    if (c.st == LiveConn::St::Idle) { start_connect(c, now); return; }
    if (c.st == LiveConn::St::Backoff) {
      if (now - c.down_since_us > static_cast<int64_t>(o_.reconnect_s * 1e6)) {
        // Given up: the rest of the session is reported, not sent.
        out_.target_lost = true;
        for (uint32_t i = c.next; i < ex.size(); ++i)
          if (wanted(c, ex[i])) finish(c, i, Outcome::Unanswered, "not sent: the target " + c.target + " stayed unreachable");
          else resolve(ex[i].response_seq);
        c.next = static_cast<uint32_t>(ex.size());
        for (const InFlight& f : c.handed)
          if (settle(c, f)) finish(c, f.exchange, Outcome::Unanswered, "not sent: the target " + c.target + " stayed unreachable");
        c.handed.clear();
        c.st = LiveConn::St::Done;
        return;
      }
      if (now >= c.wake_us) start_connect(c, now);
      else wake = std::min(wake, c.wake_us);
      return;
    }
    if (c.st != LiveConn::St::Up) return;
    if (e.after > prefix_) return;  // an earlier response of the capture is still awaited
    if (c.waits && !waits_met((*c.waits)[idx])) return;  // another session's write (or read) reached the broker first
    if (o_.lockstep && !o_.lockstep->reached(e.after)) return;  // another target is not that far yet
    if (in_flight(c) + 1 > std::max<uint32_t>(e.depth, 1)) return;
    // An idempotent producer sends no new batch while one of its batches waits
    // to be sent again: it would only be refused as out of order.
    if (e.api_key == 0 && batch_resend_waits(c)) return;  // the retry's due time wakes it
    if (o_.timing == ReplayOptions::Timing::Recorded) {
      int64_t due = start_us_ + static_cast<int64_t>((e.request_us - t0_recorded_us_) / o_.speed);
      if (now < due) { wake = std::min(wake, due); return; }
    }
    std::vector<uint8_t> bytes;
    bool skip = false;
    bool ok = prepare_request(c, e, idx, bytes, skip);
    ++c.next;
    if (!ok) { finish(c, idx, Outcome::Skipped, {}); continue; }
    if (skip) {
      ExchangeResult& r = out_.exchanges[c.results[idx]];
      if (r.note.empty()) r.note = "the script skipped it";
      finish(c, idx, Outcome::Skipped, {});
      continue;
    }
    out_.exchanges[c.results[idx]].live_sent_us = now - start_us_;
    if (o_.timing == ReplayOptions::Timing::Recorded && c.last_sent_us >= 0) {
      double replayed = (now - c.last_sent_us) / 1000.0;
      double recorded = (e.request_us - c.last_recorded_us) / 1000.0 / o_.speed;
      out_.gap_errors_ms.push_back(std::fabs(replayed - recorded));
    }
    c.last_sent_us = now;
    c.last_recorded_us = e.request_us;
    // No response expected (acks=0), or none in the capture: the answer, if
    // any, is not compared.
    const int64_t timeout = !e.expects_response || e.response.empty()
                                ? static_cast<int64_t>(o_.timeout_s * 1e6)
                                : std::max<int64_t>(static_cast<int64_t>(o_.timeout_s * 1e6), 2 * (e.response_us - e.request_us) + 1000000);
    InFlight f{idx, c.corr, now, now + timeout, std::move(bytes), 1, now};
    f.expects = e.expects_response;
    dispatch(c, std::move(f), now, true);
  }
  if (c.next >= ex.size() && c.inflight.empty() && c.retries.empty() && c.handed.empty() && c.st != LiveConn::St::Done) {
    close_link(c);
    c.st = LiveConn::St::Done;
  }
}

size_t Engine::in_flight(const LiveConn& c) const {
  size_t n = c.inflight.size() + c.handed.size();
  for (const auto& [node, side] : c.sides) n += side->inflight.size() + side->handed.size();
  return n;
}

void Engine::transmit(LiveConn& link, InFlight f, int64_t now) {
  if (link.st != LiveConn::St::Up) {
    link.handed.push_back(std::move(f));
    revive(link);
    return;
  }
  // In the order handed: what waited for the link goes first.
  while (!link.handed.empty()) {
    InFlight g = std::move(link.handed.front());
    link.handed.pop_front();
    put_on_wire(link, std::move(g), now);
  }
  put_on_wire(link, std::move(f), now);
}

void Engine::put_on_wire(LiveConn& link, InFlight g, int64_t now) {
  g.corr = ++link.corr;
  if (g.bytes.size() >= 12) wire::store_be32(g.bytes.data() + 8, static_cast<uint32_t>(g.corr));
  g.deadline_us = now + (g.deadline_us - g.sent_us);
  g.sent_us = now;
  link.out.insert(link.out.end(), g.bytes.begin(), g.bytes.end());
  if (traffic_.active()) traffic_.data(link.flow, true, g.bytes);
  if (g.expects) link.inflight.push_back(std::move(g));
  else finish(link, g.exchange, Outcome::NotExpected, "no response expected (acks=0)");
}

LiveConn& Engine::link_for(LiveConn& c, uint32_t idx, bool first) {
  const Exchange& e = c.s->exchanges[idx];
  const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
  if (!m || e.malformed) return c;
  const Role role = role_of(*m);
  if (role != Role::PartitionLeader && role != Role::GroupCoordinator && role != Role::TxnCoordinator) return c;
  dec_.decode_request(e.request, placing_);
  if (!placing_.ok()) return c;
  const Placement p = place(placing_, ps_, target_view_, [this](std::string_view id) { return state_.recorded_topic_name_of_text(id); },
                            o_.renames.topic_prefix, o_.renames.group_prefix);
  int32_t node = p.node;
  // A fetch session lives on the broker it began on: an incremental fetch,
  // and a request that names nothing placed, go where the api's last went.
  // A share session's ShareAcknowledge goes where its ShareFetch went.
  const int16_t session_api = e.api_key == kShareAcknowledgeKey ? kShareFetchKey : e.api_key;
  auto last = c.last_node.find(session_api);
  if (last != c.last_node.end()) {
    const Node* epoch = e.api_key == 1 ? find_field(placing_, ps_, placing_.body, "SessionEpoch") : nullptr;
    if (node == ClusterView::kUnknown || (epoch && epoch->v.i > 0)) node = last->second;
  }
  if (p.nodes > 1 && first) unsplit_frames_.push_back(e.frame);
  if (node == ClusterView::kUnknown) {
    // Where its role lives is not known yet (the target named no leader or
    // coordinator for it): over the session's own connection, and said so.
    if (first && !p.unknown.empty()) unplaced_.emplace_back(e.frame, p.unknown);
    return c;
  }
  c.last_node[session_api] = node;
  LiveConn& link = link_to(c, node);
  if (first && &link != &c) ++routed_[p.role];
  return link;
}

LiveConn& Engine::link_to(LiveConn& c, int32_t node) {
  if (node == c.target_node || node == ClusterView::kUnknown) return c;
  auto it = c.sides.find(node);
  LiveConn* link = it != c.sides.end() ? it->second : nullptr;
  if (!link) {
    HostPort hp;
    Address a;
    std::string error;
    if (!reach(endpoint_on(c.listener, node), hp) || hp.str() == c.target || !resolve_address(hp, a, error))
      return c;
    LiveConn& side = conns_.emplace_back();
    side.owner = &c;
    side.s = c.s;
    side.result = c.result;
    side.addr = a;
    side.target = hp.str();
    side.host = hp.host;
    side.target_node = node;
    side.listener = c.listener;
    side.tls = c.tls;
    side.next = static_cast<uint32_t>(c.s->exchanges.size());
    // A link of a session that logs in logs in too (kwire's own login, not compared).
    side.login_first = c.sasl ? &c.sasl->login() : c.login_first;
    c.sides[node] = link = &side;
  }
  return *link;
}

void Engine::dispatch(LiveConn& c, InFlight f, int64_t now, bool first) {
  const bool routing = request_routing();
  if (routing && f.expects) {
    const Exchange& e = c.s->exchanges[f.exchange];
    const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
    if (m && !e.malformed && splittable(m->api_name) && split(c, f, now, first)) return;
    if (m && !e.malformed && m->api_name == "Fetch" && fetch_split(c, f, now, first)) return;
    if (m && !e.malformed && key_split(c, f, now, first)) return;
  }
  transmit(routing ? link_for(c, f.exchange, first) : c, std::move(f), now);
}

bool Engine::split(LiveConn& c, InFlight& f, int64_t now, bool first) {
  const Exchange& e = c.s->exchanges[f.exchange];
  dec_.decode_request(e.request, placing_);
  if (!placing_.ok()) return false;
  const auto slots = partition_slots(placing_, ps_);
  std::vector<int32_t> leader(slots.size(), ClusterView::kUnknown);
  for (size_t i = 0; i < slots.size(); ++i) leader[i] = target_leader(slots[i].ref);
  const auto nodes = known_nodes(leader);
  if (nodes.size() < 2) return false;
  // The parts are cut from the request as sent (renamed, its ids and producer
  // ids the target's), whose partitions are the recorded request's in order.
  Frame sent;
  dec_.decode_request(f.bytes, sent);
  const auto live = partition_slots(sent, ps_);
  if (!sent.ok() || live.size() != slots.size()) return false;
  std::vector<uint32_t> elements;
  for (const PartitionSlot& s : live) elements.push_back(s.element);
  std::vector<InFlight> parts;
  if (!cut(f, sent, elements, leader, nodes, false, parts)) return false;
  if (first) {
    split_frames_.push_back(e.frame);
    ++routed_[Role::PartitionLeader];
  }
  parts_sent_ += static_cast<uint32_t>(parts.size());
  send_parts(c, f, parts, nodes, now);
  return true;
}

std::vector<int32_t> Engine::known_nodes(const std::vector<int32_t>& node_of) {
  std::vector<int32_t> nodes;
  for (int32_t n : node_of)
    if (n != ClusterView::kUnknown && std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  return nodes;
}

bool Engine::cut(const InFlight& whole, const Frame& sent, const std::vector<uint32_t>& elements,
                 const std::vector<int32_t>& node_of, const std::vector<int32_t>& nodes, bool by_key,
                 std::vector<InFlight>& parts) {
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::vector<uint32_t> keep;
    for (size_t i = 0; i < elements.size(); ++i)
      if (node_of[i] == nodes[k] || (node_of[i] == ClusterView::kUnknown && k == 0)) keep.push_back(elements[i]);
    bool ok = false;
    parts.push_back(part_of(whole, sent, keep, k, ok, by_key));
    if (!ok) return false;
  }
  return true;
}

bool Engine::key_split(LiveConn& c, InFlight& f, int64_t now, bool first) {
  const Exchange& e = c.s->exchanges[f.exchange];
  const MessageProgram* m = ps_.find(e.api_key, e.api_version, Direction::Request);
  const Role role = m ? role_of(*m) : Role::AnyBroker;
  if (role != Role::GroupCoordinator && role != Role::TxnCoordinator) return false;
  dec_.decode_request(e.request, placing_);
  if (!placing_.ok()) return false;
  const auto slots = key_slots(placing_, ps_, role);
  if (slots.size() < 2) return false;
  const bool group = role == Role::GroupCoordinator;
  std::vector<int32_t> node_of(slots.size(), ClusterView::kUnknown);
  for (size_t i = 0; i < slots.size(); ++i)
    node_of[i] = target_view_.coordinator(group ? CoordinatorKey::Group : CoordinatorKey::Transaction,
                                          (group ? o_.renames.group_prefix : std::string()) + slots[i].key);
  const auto nodes = known_nodes(node_of);
  if (nodes.size() < 2) return false;
  // Cut from the request as sent (renamed), whose keys are the recorded
  // request's in order.
  Frame sent;
  dec_.decode_request(f.bytes, sent);
  const auto live = key_slots(sent, ps_, role);
  if (!sent.ok() || live.size() != slots.size()) return false;
  std::vector<uint32_t> elements;
  for (const KeySlot& s : live) elements.push_back(s.element);
  std::vector<InFlight> parts;
  if (!cut(f, sent, elements, node_of, nodes, true, parts)) return false;
  if (first) {
    key_split_frames_.push_back(e.frame);
    ++routed_[role];
  }
  parts_sent_ += static_cast<uint32_t>(parts.size());
  send_parts(c, f, parts, nodes, now, true);
  return true;
}

InFlight Engine::part_of(const InFlight& whole, const Frame& sent, const std::vector<uint32_t>& keep, size_t k, bool& ok,
                         bool by_key) {
  InFlight part{whole.exchange, 0, whole.sent_us, whole.deadline_us, {}, whole.attempts, whole.first_sent_us};
  part.part = static_cast<int32_t>(k);
  std::string error;
  ok = by_key ? keep_keys(sent, ps_, keep, part.bytes, error) : keep_partitions(sent, ps_, keep, part.bytes, error);
  return part;
}

void Engine::send_parts(LiveConn& c, InFlight& whole, std::vector<InFlight>& parts, const std::vector<int32_t>& nodes,
                        int64_t now, bool by_key) {
  Split& sp = splits_[split_key(c.s->id, whole.exchange)];
  sp.by_key = by_key;
  sp.answers.assign(parts.size(), {});
  sp.nodes = nodes;
  sp.answered = 0;
  sp.whole = std::move(whole);
  for (size_t k = 0; k < parts.size(); ++k) transmit(link_to(c, nodes[k]), std::move(parts[k]), now);
}

bool Engine::fetch_split(LiveConn& c, InFlight& f, int64_t now, bool first) {
  const Exchange& e = c.s->exchanges[f.exchange];
  dec_.decode_request(e.request, placing_);
  if (!placing_.ok() || !placing_.body) return false;
  const Node* recorded_id = find_field(placing_, ps_, placing_.body, "SessionId");
  const Node* recorded_epoch = find_field(placing_, ps_, placing_.body, "SessionEpoch");
  if (!recorded_id || !recorded_epoch) return false;  // before fetch sessions (v7)
  const int64_t epoch = recorded_epoch->v.i;
  // A new session (epoch 0) begins anew on every node; without one (-1) each
  // fetch stands alone. An incremental fetch keeps its partitions where the
  // session placed them and polls every node of the session.
  if (epoch == 0) c.fetches.clear(), c.fetch_node.clear(), c.fetch_sent.clear();
  const auto slots = partition_slots(placing_, ps_);
  const Node* rack_id = find_field(placing_, ps_, placing_.body, "RackId");
  const std::string rack = rack_id && !rack_id->is_null() ? std::string(rack_id->str()) : std::string();
  const int32_t recorded_node = recorded_view_.node_at(c.s->broker.str());
  std::vector<int32_t> node_of(slots.size(), ClusterView::kUnknown), nodes;
  if (epoch > 0)
    for (const auto& [node, session] : c.fetches) nodes.push_back(node);
  for (size_t i = 0; i < slots.size(); ++i) {
    const PartitionRef& p = slots[i].ref;
    const auto key = std::make_pair(p.topic, p.partition);
    auto owned = c.fetch_node.find(key);
    int32_t node = owned != c.fetch_node.end() ? owned->second : ClusterView::kUnknown;
    if (node == ClusterView::kUnknown) {
      node = fetch_target(p, rack, recorded_node);
      if (node == ClusterView::kUnknown) node = c.target_node;
      if (epoch >= 0) c.fetch_node[key] = node;
    }
    node_of[i] = node;
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  if (nodes.empty()) nodes.push_back(c.target_node);
  Frame sent;
  dec_.decode_request(f.bytes, sent);
  const auto live = partition_slots(sent, ps_);
  if (!sent.ok() || live.size() != slots.size()) return false;
  for (size_t i = 0; i < live.size(); ++i)
    c.fetch_sent[{live[i].ref.topic, live[i].ref.partition}] = {slots[i].ref.topic, slots[i].ref.partition};
  const Node* sid = find_field(sent, ps_, sent.body, "SessionId");
  const Node* sepoch = find_field(sent, ps_, sent.body, "SessionEpoch");
  if (!sid || !sepoch) return false;
  const auto id_at = static_cast<uint32_t>(sid - sent.nodes.data()), epoch_at = static_cast<uint32_t>(sepoch - sent.nodes.data());
  std::vector<InFlight> parts;
  bool elsewhere = false;
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::vector<uint32_t> keep;
    for (size_t i = 0; i < live.size(); ++i)
      if (node_of[i] == nodes[k]) keep.push_back(live[i].element);
    LiveConn::NodeFetch& session = c.fetches[nodes[k]];
    Frame& part_frame = sent;  // each part sets both fields before it is cut
    if (epoch < 0) {
      part_frame.nodes[id_at].v.i = recorded_id->v.i != 0 ? session.id : 0;
      part_frame.nodes[epoch_at].v.i = -1;
    } else if (epoch == 0 || session.id == 0) {
      // A node new to the session begins one of its own.
      part_frame.nodes[id_at].v.i = 0;
      part_frame.nodes[epoch_at].v.i = 0;
      session.epoch = 1;
    } else {
      part_frame.nodes[id_at].v.i = session.id;
      part_frame.nodes[epoch_at].v.i = session.epoch;
      session.epoch = session.epoch == INT32_MAX ? 1 : session.epoch + 1;
    }
    bool ok = false;
    parts.push_back(part_of(f, part_frame, keep, k, ok));
    if (!ok) return false;
    elsewhere |= nodes[k] != c.target_node;
  }
  if (first && elsewhere) ++routed_[Role::PartitionLeader];
  if (first && nodes.size() > 1) ++fetches_split_;
  fetch_parts_ += static_cast<uint32_t>(parts.size());
  send_parts(c, f, parts, nodes, now);
  return true;
}

bool Engine::ask_target(const std::vector<uint8_t>& request, int16_t api, int16_t version, Frame& answer,
                        std::vector<uint8_t>& bytes) {
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!control_) {
      control_ = std::make_unique<Control>();
      const Listener& l = listeners_.front();
      if (!control_->connect_to(control_addr_, l.bootstrap.host, l.tls ? tls_.get() : nullptr, 5, error) ||
          (l.login && !control_login(*control_, l.bootstrap.str(), *l.login, false, error))) {
        control_.reset();
        return false;
      }
    }
    if (control_->exchange(request, bytes, 5, error)) {
      dec_.decode_response(bytes, api, version, answer);
      return answer.ok();
    }
    control_.reset();  // closed by the target (idle): once more on a new connection
  }
  return false;
}

void Engine::refresh_view(const Frame& live, const Exchange& e, int64_t now) {
  constexpr int64_t kNotLeaderOrFollower = 6, kNotCoordinator = 16;
  bool leader = false, coordinator = false;
  for (uint32_t i = live.body; live.body && i < live.nodes.size(); ++i) {
    const Node& n = live.nodes[i];
    if (n.desc == kDescUnknownTag || !is_integer(n.type) || !is_error_code_field(ps_.field(n.desc))) continue;
    leader |= n.v.i == kNotLeaderOrFollower;
    coordinator |= n.v.i == kNotCoordinator;
  }
  if (!leader && !coordinator) return;
  // At most one question per 100 ms: a burst of such answers is one move.
  if (now - last_refresh_us_ < 100000) return;
  last_refresh_us_ = now;
  std::vector<uint8_t> bytes;
  Frame answer, q;
  if (leader) {
    wire::MessageBuilder b;
    request_header(b, 3, 12, 90, true);
    b.cnull().boolean(false).boolean(false).tags0();
    const auto request = b.message();
    if (ask_target(request, 3, 12, answer, bytes)) {
      dec_.decode_request(request, q);
      target_view_.learn(q, answer, ps_);
      state_.learn_topics(answer, true);
      ++refreshes_;
    }
  }
  if (coordinator) {
    dec_.decode_request(e.request, placing_);
    const Role role = placing_.ok() ? role_of(placing_, ps_) : Role::AnyBroker;
    if (role != Role::GroupCoordinator && role != Role::TxnCoordinator) return;
    const bool group = role == Role::GroupCoordinator;
    const auto keys = coordinator_keys(placing_, ps_, role);
    if (keys.empty()) return;
    wire::MessageBuilder b;
    request_header(b, 10, 4, 91, true);
    b.i8(group ? 0 : 1).carr(keys.size());
    for (const auto& k : keys) b.cstr((group ? o_.renames.group_prefix : std::string()) + k);
    b.tags0();
    const auto request = b.message();
    if (ask_target(request, 10, 4, answer, bytes)) {
      dec_.decode_request(request, q);
      target_view_.learn(q, answer, ps_);
      ++refreshes_;
    }
  }
}

void Engine::on_response(LiveConn& c, std::span<const uint8_t> msg, int64_t now) {
  if (msg.size() < 8) return;
  const int32_t corr = static_cast<int32_t>(wire::load_be32(msg.data() + 4));
  auto it = std::find_if(c.inflight.begin(), c.inflight.end(), [&](const InFlight& f) { return f.corr == corr; });
  if (it == c.inflight.end()) return;  // a late answer to a request given up on
  InFlight f = std::move(*it);
  c.inflight.erase(it);
  if (f.part >= 0) {
    // One part of a split request: the answer is compared once every part's
    // has come, joined into one.
    auto sp = splits_.find(split_key(c.s->id, f.exchange));
    if (sp == splits_.end()) return;  // given up
    sp->second.answers[static_cast<size_t>(f.part)].assign(msg.begin(), msg.end());
    const Exchange& e = c.s->exchanges[f.exchange];
    if (++sp->second.answered < sp->second.answers.size()) return;
    std::vector<Frame> frames(sp->second.answers.size());
    std::vector<const Frame*> answers;
    for (size_t k = 0; k < frames.size(); ++k) {
      const Frame& answer = frames[k];
      dec_.decode_response(sp->second.answers[k], e.api_key, e.api_version, frames[k]);
      answers.push_back(&answer);
      if (e.api_key != 1 || !answer.ok() || !answer.body) continue;
      // The node's fetch session: the id it gave, or none any more.
      const Node* error = find_field(answer, ps_, answer.body, "ErrorCode");
      const Node* id = find_field(answer, ps_, answer.body, "SessionId");
      auto& fetch = session(c).fetches[sp->second.nodes[k]];
      if (error && error->v.i == 0 && id && id->v.i != 0) fetch.id = static_cast<int32_t>(id->v.i);
      else if (error && error->v.i != 0) fetch = {};  // FETCH_SESSION_ID_NOT_FOUND and the like: the next begins anew
      // A partition this node no longer leads (its leader moved after the
      // session placed it here): placed anew by the target's leader at the
      // next fetch, and this node's session begins anew without it.
      constexpr int64_t kNotLeaderOrFollower = 6, kFencedLeaderEpoch = 74;
      LiveConn& owner = session(c);
      for (const PartitionSlot& s : partition_slots(answer, ps_)) {
        const Node* code = find_field(answer, ps_, s.element, "ErrorCode");
        if (!code || (code->v.i != kNotLeaderOrFollower && code->v.i != kFencedLeaderEpoch)) continue;
        auto sent = owner.fetch_sent.find({s.ref.topic, s.ref.partition});
        if (sent == owner.fetch_sent.end()) continue;
        auto placed = owner.fetch_node.find(sent->second);
        if (placed == owner.fetch_node.end() || placed->second != sp->second.nodes[k]) continue;
        owner.fetch_node.erase(placed);
        fetch = {};
        ++fetch_moves_;
      }
    }
    std::vector<uint8_t> joined;
    std::string error;
    const bool joined_ok = sp->second.by_key ? join_key_answers(answers, ps_, joined, error)
                                             : join_answers(answers, ps_, joined, error);
    if (!joined_ok) joined = sp->second.answers.front();  // compared as it came
    InFlight whole = std::move(sp->second.whole);
    splits_.erase(sp);
    answered(c, std::move(whole), joined, now);
    return;
  }
  answered(c, std::move(f), msg, now);
}

void Engine::answered(LiveConn& c, InFlight f, std::span<const uint8_t> msg, int64_t now) {
  LiveConn& sess = session(c);   // a side link's answers are its session's
  const Exchange& e = c.s->exchanges[f.exchange];
  ExchangeResult& r = out_.exchanges[sess.results[f.exchange]];
  r.live_latency_us = now - f.sent_us;
  if (!e.response.empty() && e.response.size() == msg.size() && !o_.on_response && o_.compare.expect.empty() &&
      e.api_key != kShareFetchKey &&   // what it acquired is kept (replay/share.hpp)
      std::equal(msg.begin() + 8, msg.end(), e.response.begin() + 8) &&
      (state_.differing() == 0 || !state_.learns_from(e.api_key))) {
    // Byte for byte the recorded answer (after the correlation id): the same;
    // what it would teach is the recorded value itself, which matters only
    // once some learned value differs from the capture's.
    finish(c, f.exchange, Outcome::Same, {});
    return;
  }
  dec_.decode_response(msg, e.api_key, e.api_version, live_);
  // (A SCRAM answer never equals the recorded one, so the shortcut above
  // never skips the login's next step.)
  if (c.sasl && e.api_key == 36 /* SaslAuthenticate */) sasl_answer(c, live_, r);
  if (e.response.empty()) {
    finish(c, f.exchange, Outcome::NotExpected, "the capture has no response to compare with");
    state_.learn_topics(live_, true);
    return;
  }
  if (request_routing() && live_.ok() &&
      (r.api_name == "FindCoordinator" || r.api_name == "Metadata" || r.api_name == "DescribeCluster" ||
       r.api_name == "Produce" || r.api_name == "Fetch")) {
    // What the target says of itself, as its clients learn it (KIP-951's
    // leader hints included).
    Frame sent;
    dec_.decode_request(f.bytes, sent);
    target_view_.learn(sent, live_, ps_);
  }
  if (request_routing() && live_.ok()) refresh_view(live_, e, now);
  dec_.decode_response(e.response, e.api_key, e.api_version, recorded_resp_);
  bool coordinator_only = false;
  const int live_class = error_class(ps_, live_, &coordinator_only);
  int recorded_class = error_class(ps_, recorded_resp_);
  const int64_t backoff = std::min<int64_t>(50000LL << std::min(f.attempts + 1, 5), 1000000);
  const bool budget_was_spent = sess.retry.spent, waited_out_before = sess.retry.waited_out;
  SessionResult& sr = out_.sessions[c.result];
  // A heartbeat the target answers "assignment delayed" (a timer, such as the
  // initial rebalance delay, not fired yet) where the capture shows none: the
  // member heartbeats again, as with a retriable error. Matters in --timing
  // fast, which would otherwise run through the member's whole life before
  // the timer fires.
  bool delayed = live_class == 0 && live_.ok() && assignment_delayed_only_live(ps_, recorded_resp_, live_);
  if (!delayed && live_class == 0 && e.api_key == 76 /* ShareGroupHeartbeat */ && live_.ok() &&
      live_share_assigned(c.s->id) == 0) {
    // A share group assigns a partition once its share state is initialized,
    // after the member joined: until then the member holds nothing, and
    // heartbeats again. Either answer may leave the assignment unchanged
    // (null): the member's is then the last one it was given.
    delayed = recorded_share_assignment(c, f.exchange, true, [](int64_t n) { return n >= 0; }) > 0;
  }
  // Waiting for the target's background work (a coordinator loading, an
  // assignment waiting for its timer or its share partitions' state) is not
  // charged to the session's budget: each request keeps its own limit.
  const bool charged = !coordinator_only && !delayed;
  // An incremental fetch the broker answered (errors only in partitions) has
  // spent its session epoch: the same request again would be answered
  // INVALID_FETCH_SESSION_EPOCH, so its partitions' errors are compared.
  bool epoch_spent = false;
  // A share session (ShareFetch, ShareAcknowledge) counts its epochs the same way.
  const bool share_session = e.api_key == kShareFetchKey || e.api_key == kShareAcknowledgeKey;
  if ((e.api_key == 1 || share_session) && live_class == 1 && live_.ok() && live_.body) {
    const Node* top = find_field(live_, ps_, live_.body, "ErrorCode");
    Frame& sent = placing_;
    dec_.decode_request(f.bytes, sent);
    const Node* epoch =
        sent.ok() && sent.body ? find_field(sent, ps_, sent.body, share_session ? "ShareSessionEpoch" : "SessionEpoch") : nullptr;
    epoch_spent = epoch && epoch->v.i > 0 && top && top->v.i == 0;
  }
  // A later batch of an idempotent producer refused because an earlier one of
  // its partition is being sent again: it goes again after that one, as
  // Kafka's producer resends its in-flight batches in sequence order.
  std::vector<ProducerBatch> batches;
  if (e.api_key == 0 && live_class != 0) batches = batches_sent(f);
  const bool resequenced = !batches.empty() && live_.ok() && has_error_code(ps_, live_, kOutOfOrderSequence) &&
                           !has_error_code(ps_, recorded_resp_, kOutOfOrderSequence) && earlier_batch_resent(sess, batches);
  // A fetch at an offset the capture's broker had and the target has not
  // written yet answers OFFSET_OUT_OF_RANGE: a read replica that has not caught
  // up with its leader (KIP-392), or a transaction's marker that the target's
  // coordinator writes after it answered EndTxn (transaction.version 2).
  // Fetched again after a back-off, within the retries' time, by which time
  // it has; what is still out of range then is compared.
  constexpr int64_t kOffsetOutOfRange = 1;
  const bool not_written_yet = e.api_key == 1 && live_.ok() && has_error_code(ps_, live_, kOffsetOutOfRange) &&
                               !has_error_code(ps_, recorded_resp_, kOffsetOutOfRange);
  // Each node's fetch session is kwire's on a cluster: a resend takes the next epoch.
  if (not_written_yet && request_routing()) epoch_spent = false;
  if (!epoch_spent && should_retry(delayed || resequenced || not_written_yet ? 1 : live_class, recorded_class, live_.ok(), now - f.first_sent_us,
                   std::min<int64_t>(static_cast<int64_t>(o_.timeout_s * 1e6), kRetryForUs), f.attempts, sess.retry,
                   now - f.sent_us + backoff, charged)) {
    // The target is not ready where the recorded broker was (a coordinator
    // loading, a leader being elected): ask again, as the client would. Also
    // where the capture shows an error that is not retriable: JoinGroup's
    // MEMBER_ID_REQUIRED, a protocol step, comes once the coordinator is loaded.
    ++f.attempts;
    if (charged) ++f.charged, f.charged_us += now - f.sent_us + backoff;
    sr.retries = sess.retry.retries;
    sr.retry_s = sess.retry.spent_us / 1e6;
    r.note = "answered after " + std::to_string(f.attempts) + " attempts (" +
             (delayed         ? "the assignment delayed before)"
              : resequenced ? "sent again after an earlier batch of its producer, in sequence order)"
              : not_written_yet ? "the offset was past the target's log before)"
                            : "retriable errors before)");
    out_.resequenced += resequenced ? 1 : 0;
    c.retries.push_back({std::move(f), now + backoff, std::move(batches)});
    return;
  }
  if (f.charged && live_class != 1 && !delayed) {
    // The retries got it answered: the target recovered, the budget is given back.
    sess.retry.refund(f.charged, f.charged_us);
    sr.retries = sess.retry.retries;
    sr.retry_s = sess.retry.spent_us / 1e6;
  }
  if (sess.retry.waited_out && !waited_out_before) {
    char line[240];
    snprintf(line, sizeof line,
             "session %u: waited %.0f s for the target's background work (coordinators loading, assignments); "
             "later waits are charged to its retry budget",
             c.s->id, sess.retry.waited_us / 1e6);
    out_.notes.push_back(line);
  }
  if (sess.retry.spent && !budget_was_spent) {
    sr.retry_budget_spent = true;
    char line[200];
    snprintf(line, sizeof line, "session %u: retry budget spent (%u retries, %.1f s); its later answers are compared as they come",
             c.s->id, sess.retry.retries, sess.retry.spent_us / 1e6);
    out_.notes.push_back(line);
  }
  if (recorded_class == 1 && live_class != 1) {
    // The capture shows a retriable error here and the client's retries after
    // it; the target answered at once. Compare with the recorded answer to the
    // last retry, and do not send the retries. The target's answer may be an
    // error that is a protocol step (JoinGroup's MEMBER_ID_REQUIRED), which the
    // recorded retry then shows too.
    for (uint32_t k = f.exchange + 1; k < c.s->exchanges.size(); ++k) {
      const Exchange& later = c.s->exchanges[k];
      if (later.api_key != e.api_key || k < sess.next || later.response.empty()) continue;
      // Only a true retry, the same request again (a producer's next
      // AddPartitionsToTxn may name more partitions): otherwise the later
      // request goes out as recorded.
      if (!same_request(later.request, e.request)) break;
      Frame probe;
      dec_.decode_response(later.response, later.api_key, later.api_version, probe);
      const int cls = error_class(ps_, probe);
      ExchangeResult& lr = out_.exchanges[sess.results[k]];
      lr.note = "a retry in the capture; the target answered the first attempt (frame " + std::to_string(e.frame) + ")";
      sess.settled[k] = true;
      lr.outcome = Outcome::Skipped;
      resolve(later.response_seq);
      if (cls == 1) continue;
      dec_.decode_response(later.response, later.api_key, later.api_version, recorded_resp_);
      recorded_class = cls;
      r.note = "the capture shows retriable errors here; compared with the recorded answer to its retry, frame " +
               std::to_string(later.response_frame);
      break;
    }
  }
  dec_.decode_request(e.request, recorded_req_);
  state_.learn(recorded_req_, recorded_resp_, live_, c.s->id);
  state_.translate_response(recorded_resp_, recorded_req_, c.s->id);
  if ((r.api_name == "Metadata" || r.api_name == "DescribeCluster") && live_.ok())
    learn_node_endpoints(ps_, recorded_resp_, live_, endpoints_);
  if (is_admin_write(r.api_name) && live_.ok()) {
    // Writes older than kAdminWriteVisibleUs explain nothing any more.
    std::erase_if(admin_written_, [&](const auto& w) { return now - w.second >= kAdminWriteVisibleUs; });
    for (auto& t : written_topics(ps_, recorded_req_, live_)) admin_written_[t] = now;
  }
  if (!live_.ok()) {
    r.differences.push_back({"", "\"a response that decodes\"", "\"" + live_.errors.front().reason + "\"", "", false});
  }
  if (has_sticky(e.api_key)) {
    const std::string member = std::to_string(c.s->id);
    if (!asks_counted_.count(c.s->id) && asks_alone(ps_, recorded_resp_, live_)) {
      // Whether the capture makes that ask later: the recorded asks still to come.
      asks_counted_.insert(c.s->id);
      for (uint32_t k = f.exchange + 1; k < c.s->exchanges.size(); ++k) {
        const Exchange& any = c.s->exchanges[k];
        if (!has_sticky(any.api_key) || any.response.empty()) continue;
        Frame probe;
        dec_.decode_response(any.response, any.api_key, any.api_version, probe);
        count_recorded_asks(ps_, probe, member, sticky_);
      }
    }
    // What the capture shows at this member's next answer of the same api.
    sticky_.next.clear();
    for (uint32_t k = f.exchange + 1; k < c.s->exchanges.size(); ++k) {
      const Exchange& later = c.s->exchanges[k];
      if (later.api_key != e.api_key || later.response.empty()) continue;
      Frame probe;
      dec_.decode_response(later.response, later.api_key, later.api_version, probe);
      sticky_lookahead(ps_, probe, member, sticky_);
      break;
    }
  }
  // Endpoints an answer names are those of the listener it came over.
  cmp_.target_endpoints = nullptr;
  if (c.listener < listeners_.size())
    cmp_.target_endpoints = !listeners_[c.listener].endpoints.empty() ? &listeners_[c.listener].endpoints
                            : c.listener == 0                        ? &target_view_.brokers()
                                                                     : nullptr;
  if (e.api_key == kShareFetchKey && live_.ok()) {
    Frame& sent = placing_;
    dec_.decode_request(f.bytes, sent);
    learn_acquired(sent, recorded_resp_, live_, ps_, share_, sess.results[f.exchange]);
  }
  cmp_.run_to_ms = wall_ns() / 1'000'000;
  compare(ps_, recorded_resp_, live_, cmp_, r.differences, &sticky_, std::to_string(c.s->id));
  if (const Listing* l = listing_of(r.api_name); l && (request_routing() || cluster_routing()))
    listed_elsewhere(c, *l, r.differences);
  if (e.api_key == 1) read_replica_by_role(c, f, r.differences);
  if (e.api_key == 2) internal_topic_offsets(r.differences);
  if (r.api_name == "DescribeShareGroupOffsets") settled_start_offsets(recorded_resp_, live_, ps_, r.differences);
  if (e.api_key == 76 /* ShareGroupHeartbeat */) assigned_sooner(c, f, r.differences);
  if (share_rewritten_.count({c.s->id, f.exchange})) rewritten_acknowledgements(e.api_key, r.differences);
  if (o_.on_response) {
    std::vector<std::pair<std::string, std::string>> add;
    std::string error;
    if (!o_.on_response(live_, recorded_resp_, e.frame, c.s->client.str() + "->" + c.s->broker.str(), add, error)) {
      r.differences.push_back({"", "\"script\"", "\"" + error + "\"", "script error", false});
    }
    std::vector<ExpectRule> rules;
    for (auto& [path, value] : add) {
      ExpectRule er;
      std::string perr;
      if (!parse_pattern(path, er.pattern, perr)) { r.differences.push_back({path, "\"valid path\"", "\"" + perr + "\"", "script expect", false}); continue; }
      er.path = path;
      er.value = value;
      rules.push_back(std::move(er));
    }
    check_expectations(ps_, live_, rules, r.differences);
  }
  if (recorded_class == 1 && (live_class == 0 || live_class == 1)) {
    // A retriable error in the capture where the target answered (and no retry
    // left to compare with), or retriable errors on both sides: which broker
    // was ready when is timing.
    for (auto& d : r.differences)
      if (!d.ignored && d.rule.empty()) { d.ignored = true; d.rule = "retriable error in the capture (timing)"; }
  } else if (recorded_class != 1 && live_class == 1) {
    // Still retriable after the retries' time was up, or the session's retry budget is spent.
    r.note = "the target still answered with a retriable error after " + std::to_string(f.attempts) + " attempts" +
             (sess.retry.spent ? " (the session's retry budget is spent)" : "");
  }
  bool regression = false, any = false;
  for (const auto& d : r.differences) { any = true; if (!d.ignored) regression = true; }
  if (regression && converge_retry(c, f, r, now)) return;
  // Also a lagging read that the retriable-error rule sent again (LEADER_NOT_AVAILABLE
  // right after a CreateTopics): counted with the reads that converged.
  bool after_admin_write = false;
  for (const auto& [topic, at] : admin_written_) after_admin_write |= now - at < kAdminWriteVisibleUs;
  const int resent = f.converge + (is_lagging_read(r.api_name) && after_admin_write ? f.attempts - 1 : 0);
  if (resent > 0) {
    regression ? ++out_.reads_not_converged : ++out_.reads_converged;
    r.note = (regression ? "did not converge after " : "converged after ") + std::to_string(resent) +
             (resent == 1 ? " re-send" : " re-sends") + " (an admin write of the replay not yet visible)";
  }
  finish(c, f.exchange, regression ? Outcome::Regression : any ? Outcome::IgnoredOnly : Outcome::Same, {});
}

const Engine::Listing* Engine::listing_of(std::string_view api) {
  static const Listing kListings[] = {
      {"ListGroups", "body.groups[", "\"groupId\":", CoordinatorKey::Group, "group"},
      {"ListTransactions", "body.transactionStates[", "\"transactionalId\":", CoordinatorKey::Transaction, "transaction"},
  };
  for (const Listing& l : kListings)
    if (api == l.api) return &l;
  return nullptr;
}

void Engine::listed_elsewhere(const LiveConn& c, const Listing& l, std::vector<Difference>& diffs) {
  // The key of an element's JSON text: {"groupId": "g", ...}.
  const std::string_view key = l.key;
  auto key_of = [key](const std::string& json) -> std::string {
    size_t at = json.find(key);
    if (at == std::string::npos) return {};
    at = json.find('"', at + key.size());
    const size_t end = at == std::string::npos ? at : json.find('"', at + 1);
    if (end == std::string::npos || json.find('\\', at) < end) return {};
    return json.substr(at + 1, end - at - 1);
  };
  // Group ids are renamed by --rename-group; transactional ids are not.
  const std::string prefix = l.type == CoordinatorKey::Group ? o_.renames.group_prefix : std::string();
  const int32_t recorded_node = recorded_view_.node_at(c.s->broker.str());
  if (recorded_node == ClusterView::kUnknown || c.target_node < 0) return;  // which node answered is not known
  const std::string absent = "\"(absent)\"";
  const std::string_view element = l.element;
  auto listed = [element](const Difference& d) {
    return d.path.starts_with(element) && d.path.find('.', element.size()) == std::string::npos;
  };
  // Where the target's coordinators of the keys in question are not known
  // yet, kwire asks the target (its own FindCoordinator, not compared).
  std::vector<std::string> ask;
  for (const auto& d : diffs)
    if (!d.ignored && listed(d) && d.replayed == absent) {
      const std::string k = key_of(d.recorded);
      if (!k.empty() && target_view_.coordinator(l.type, prefix + k) == ClusterView::kUnknown) ask.push_back(prefix + k);
    }
  if (!ask.empty()) {
    wire::MessageBuilder b;
    request_header(b, 10, 4, 92, true);
    b.i8(static_cast<int8_t>(l.type)).carr(ask.size());
    for (const auto& k : ask) b.cstr(k);
    b.tags0();
    const auto request = b.message();
    std::vector<uint8_t> bytes;
    Frame answer, q;
    if (ask_target(request, 10, 4, answer, bytes)) {
      dec_.decode_request(request, q);
      target_view_.learn(q, answer, ps_);
    }
  }
  for (auto& d : diffs) {
    if (d.ignored || !listed(d)) continue;
    if (d.replayed == absent) {
      const std::string k = key_of(d.recorded);
      const int32_t node = target_view_.coordinator(l.type, prefix + k);
      if (k.empty() || node == ClusterView::kUnknown || node == c.target_node) continue;
      d.ignored = true;
      d.rule = std::string(l.noun) + " " + k + " is coordinated by node " + std::to_string(node) + " on the target";
    } else if (d.recorded == absent) {
      std::string k = key_of(d.replayed);
      if (!k.starts_with(prefix)) continue;
      k = k.substr(prefix.size());
      const int32_t node = recorded_view_.coordinator(l.type, k);
      if (k.empty() || node == ClusterView::kUnknown || node == recorded_node) continue;
      d.ignored = true;
      d.rule = std::string(l.noun) + " " + k + " was coordinated by node " + std::to_string(node) + " in the capture";
    }
  }
}

std::vector<ProducerBatch> Engine::batches_sent(const InFlight& f) {
  Frame sent;
  dec_.decode_request(f.bytes, sent);
  return producer_batches(sent, ps_);
}

bool Engine::earlier_batch_resent(LiveConn& sess, const std::vector<ProducerBatch>& batches, const Retry* self) {
  auto look = [&](LiveConn& l) {
    for (const Retry& r : l.retries)
      if (&r != self && precedes(r.batches, batches)) return true;
    for (const InFlight& f : l.inflight)
      if (f.attempts > 1 && f.exchange != (self ? self->f.exchange : UINT32_MAX) &&
          l.s->exchanges[f.exchange].api_key == 0 && precedes(batches_sent(f), batches))
        return true;
    return false;
  };
  if (look(sess)) return true;
  for (auto& [node, side] : sess.sides)
    if (look(*side)) return true;
  return false;
}

namespace {

// "body.topics[3].partitions[1].offset" -> 3, 1 and "offset"; false for
// another shape. The indexes are the recorded answer's elements.
bool partition_path(std::string_view path, std::string_view topics, std::string_view partitions, uint32_t& t,
                    uint32_t& p, std::string_view& field) {
  auto number = [&](std::string_view& rest, uint32_t& out) {
    size_t n = 0;
    out = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') out = out * 10 + static_cast<uint32_t>(rest[n++] - '0');
    if (n == 0 || n >= rest.size() || rest[n] != ']') return false;
    rest.remove_prefix(n + 1);
    return true;
  };
  std::string_view rest = path;
  if (!rest.starts_with("body.") || !rest.substr(5).starts_with(topics)) return false;
  rest.remove_prefix(5 + topics.size());
  if (!rest.starts_with("[")) return false;
  rest.remove_prefix(1);
  if (!number(rest, t) || !rest.starts_with(".") || !rest.substr(1).starts_with(partitions)) return false;
  rest.remove_prefix(1 + partitions.size());
  if (!rest.starts_with("[")) return false;
  rest.remove_prefix(1);
  if (!number(rest, p) || !rest.starts_with(".")) return false;
  field = rest.substr(1);
  return field.find('.') == std::string_view::npos && field.find('[') == std::string_view::npos;
}

// Element `i` of array field `name` under `parent`, or 0.
uint32_t element_of(const Frame& f, const ProgramSet& ps, uint32_t parent, std::string_view name, uint32_t i) {
  const Node* a = find_field(f, ps, parent, name);
  if (!a || a->is_null() || a->type != WireType::Array) return 0;
  for (uint32_t el : Children(f, static_cast<uint32_t>(a - f.nodes.data())))
    if (i-- == 0) return el;
  return 0;
}

}  // namespace

void Engine::read_replica_by_role(const LiveConn& c, const InFlight& f, std::vector<Difference>& diffs) {
  auto number = [](const std::string& v, int64_t& out) {
    char* end = nullptr;
    out = std::strtoll(v.c_str(), &end, 10);
    return !v.empty() && end && *end == '\0';
  };
  Frame sent;
  bool decoded = false;
  std::string rack;
  const LiveConn& owner = c.owner ? *c.owner : c;
  for (auto& d : diffs) {
    uint32_t ti = 0, pi = 0;
    std::string_view field;
    int64_t recorded = 0, live = 0;
    if (d.ignored || !partition_path(d.path, "responses", "partitions", ti, pi, field) || field != "preferredReadReplica" ||
        !number(d.recorded, recorded) || !number(d.replayed, live))
      continue;
    if (!decoded) {
      decoded = true;
      dec_.decode_request(f.bytes, sent);
      const Node* id = sent.ok() && sent.body ? find_field(sent, ps_, sent.body, "RackId") : nullptr;
      if (id && !id->is_null()) rack = std::string(id->str());
    }
    if (rack.empty()) continue;
    // The node each side read from: the one the answer names, or (-1) the one
    // that answered. The recorded one answered at the session's recorded
    // address; the live one where the fetch session placed the partition.
    int32_t recorded_node = static_cast<int32_t>(recorded), live_node = static_cast<int32_t>(live);
    if (recorded < 0) recorded_node = recorded_view_.node_at(c.s->broker.str());
    if (live < 0) {
      live_node = c.target_node;
      const uint32_t topic = element_of(recorded_resp_, ps_, recorded_resp_.body, "Responses", ti);
      const uint32_t part = topic ? element_of(recorded_resp_, ps_, topic, "Partitions", pi) : 0;
      const Node* index = part ? find_field(recorded_resp_, ps_, part, "PartitionIndex") : nullptr;
      const Node* id = topic ? find_field(recorded_resp_, ps_, topic, "TopicId") : nullptr;
      const Node* name = topic ? find_field(recorded_resp_, ps_, topic, "Topic") : nullptr;
      std::string key = id && id->type == WireType::Uuid ? wire::uuid_to_string(id->v.p) : std::string();
      if (key.empty() && name && !name->is_null()) key = std::string(name->str());
      if (index)
        if (auto placed = owner.fetch_node.find({key, static_cast<int32_t>(index->v.i)}); placed != owner.fetch_node.end())
          live_node = placed->second;
    }
    if (recorded_node < 0 || live_node < 0 || recorded_view_.rack(recorded_node) != rack ||
        target_view_.rack(live_node) != rack)
      continue;
    // Both read from a replica in the fetch's rack.
    d.ignored = true;
    d.rule = "read replica by role: both sides read from a replica in the fetch's rack " + rack + " (node " +
             std::to_string(recorded_node) + " recorded, " + std::to_string(live_node) + " on the target)";
  }
}

// A share group member that the target assigned partitions where the capture
// shows none yet: the target initialized the share partitions' state sooner
// (in the background). Timing, when the member's later answers in the capture
// assign it partitions too.
void Engine::assigned_sooner(const LiveConn& c, const InFlight& f, std::vector<Difference>& diffs) {
  for (auto& d : diffs) {
    if (d.ignored || d.path != "body.assignment" || live_share_assigned(c.s->id) <= 0 ||
        d.recorded.find("\"topicPartitions\":[]") == std::string::npos)
      continue;
    uint64_t frame = 0;
    if (recorded_share_assignment(c, f.exchange + 1, false, [](int64_t n) { return n > 0; }, &frame) > 0) {
      d.ignored = true;
      d.rule = "assigned sooner on the target (its share partitions initialized sooner); the capture assigns it in frame " +
               std::to_string(frame);
    }
  }
}

int64_t Engine::recorded_share_assignment(const LiveConn& c, uint32_t from, bool backward,
                                          const std::function<bool(int64_t)>& stop, uint64_t* frame) {
  Frame probe;
  const auto& ex = c.s->exchanges;
  const size_t count = backward ? from + 1 : from < ex.size() ? ex.size() - from : 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t k = backward ? from - i : from + i;
    if (ex[k].api_key != 76 /* ShareGroupHeartbeat */ || ex[k].response.empty()) continue;
    dec_.decode_response(ex[k].response, ex[k].api_key, ex[k].api_version, probe);
    if (const int64_t n = share_assigned(ps_, probe); stop(n)) {
      if (frame) *frame = ex[k].response_frame;
      return n;
    }
  }
  return -1;
}

// Which member of a share group acquires a record is timing (a race); that
// some member acquires every record the capture's members did is not. A lack
// is a regression of the last ShareFetch answer of that partition.
void Engine::share_never_acquired() {
  struct Left {
    uint64_t frame;
    std::string group, offsets;
  };
  std::vector<Left> left_unacquired;
  for (const auto& lack : share_.never_acquired()) {
    if (lack.exchange >= out_.exchanges.size()) continue;
    ExchangeResult& r = out_.exchanges[lack.exchange];
    std::string offsets;
    for (const auto& o : lack.offsets)
      offsets += (offsets.empty() ? "" : ",") + std::to_string(o.first) + (o.last > o.first ? "-" + std::to_string(o.last) : "");
    if (r.outcome == Outcome::Race && lack.in_last) {
      // The capture's last fetch to acquire them raced (with another member,
      // or with the write it waited for): here it acquired others, or its
      // wait ended first, and the members' sessions end as recorded, before
      // fetching these. The race says so; so do the lags it leaves.
      r.note += "; offsets " + offsets + " that this fetch acquired in the capture were acquired by no member here";
      left_unacquired.push_back({r.frame, lack.where.group, offsets});
      continue;
    }
    const std::string id = wire::uuid_to_string(reinterpret_cast<const uint8_t*>(lack.where.topic_id.data()));
    r.differences.insert(r.differences.begin(),
                         {"share group " + lack.where.group + " topic " + id + " partition " + std::to_string(lack.where.partition),
                          "\"offsets " + offsets + " acquired by some member\"", "\"acquired by no member\"", "", false});
    r.outcome = Outcome::Regression;
    r.races.clear();
    r.note = "records that the capture's members of share group " + lack.where.group + " acquired and no member on the target did";
  }
  if (left_unacquired.empty()) return;
  // A later DescribeShareGroupOffsets counts what was left: its lags and start
  // offsets alone differing follow from the same race.
  for (auto& x : out_.exchanges) {
    if (x.api_name != "DescribeShareGroupOffsets" || x.outcome != Outcome::Regression) continue;
    const Left* by = nullptr;
    for (const Left& l : left_unacquired)
      if (l.frame < x.frame) by = &l;
    const bool lags_only = std::all_of(x.differences.begin(), x.differences.end(), [](const Difference& d) {
      return d.ignored || d.path.ends_with(".lag") || d.path.ends_with(".startOffset");
    });
    if (!by || !lags_only) continue;
    x.outcome = Outcome::Race;
    for (auto& d : x.differences)
      if (!d.ignored) d.rule = "race";
    x.note = "share group " + by->group + ": offsets " + by->offsets + " left unacquired by the race of frame " +
             std::to_string(by->frame);
  }
}

void Engine::internal_topic_offsets(std::vector<Difference>& diffs) {
  for (auto& d : diffs) {
    uint32_t ti = 0, pi = 0;
    std::string_view field;
    if (d.ignored || !partition_path(d.path, "topics", "partitions", ti, pi, field) ||
        (field != "offset" && field != "timestamp" && field != "leaderEpoch"))
      continue;
    const uint32_t topic = element_of(recorded_resp_, ps_, recorded_resp_.body, "Topics", ti);
    const Node* name = topic ? find_field(recorded_resp_, ps_, topic, "Name") : nullptr;
    if (!name || name->is_null() || !name->str().starts_with("__")) continue;
    d.ignored = true;
    d.rule = "an internal topic (" + std::string(name->str()) + "): its offsets count the coordinators' own writes";
  }
}

bool Engine::converge_retry(LiveConn& c, InFlight& f, ExchangeResult& r, int64_t now) {
  if (!is_lagging_read(r.api_name) || admin_written_.empty() || now - f.first_sent_us >= kConvergeForUs) return false;
  std::set<std::string> pending;
  for (const auto& [topic, at] : admin_written_)
    if (now - at < kAdminWriteVisibleUs) pending.insert(topic);
  if (pending.empty() ||
      !lag_explains(ps_, recorded_resp_, live_, r.differences, pending, [this](std::string_view id) { return topic_name(id); }))
    return false;
  // Asked again after a pause, as a client waiting for metadata would; the
  // last answer is the one compared.
  ++f.converge;
  r.differences.clear();
  c.retries.push_back({std::move(f), now + kConvergeStepUs});
  return true;
}

void Engine::sasl_answer(LiveConn& c, const Frame& f, ExchangeResult& r) {
  const Node* ec = f.body ? find_field(f, ps_, f.body, "ErrorCode") : nullptr;
  const Node* ab = f.body ? find_field(f, ps_, f.body, "AuthBytes") : nullptr;
  // A refused login is an error code the comparison reports.
  if (!f.ok() || !ec || ec->v.i != 0 || !ab) return;
  bool more = false;
  std::string error;
  if (!c.sasl->answer({reinterpret_cast<const char*>(ab->v.p), ab->aux}, c.sasl_reply, more, error)) {
    TextBuffer t;
    json_string(t, error);
    r.differences.push_back({"body.authBytes", "\"the SASL " + c.sasl->login().mechanism + " login completed\"", t.str(), "", false});
  }
}

void Engine::give_up(const std::string& why, int64_t /*now*/) {
  out_.target_lost = true;
  abandon(why);
}

void Engine::abandon(const std::string& why) {
  out_.notes.push_back(why);
  for (auto& c : conns_) {
    if (c.st == LiveConn::St::Done) continue;
    close_link(c);
    for (const InFlight& f : c.inflight)
      if (settle(c, f)) finish(c, f.exchange, Outcome::Unanswered, why);
    c.inflight.clear();
    for (const Retry& r : c.retries) finish(c, r.f.exchange, Outcome::Unanswered, why);
    c.retries.clear();
    for (const InFlight& f : c.handed)
      if (settle(c, f)) finish(c, f.exchange, Outcome::Unanswered, "not sent: " + why);
    c.handed.clear();
    for (uint32_t i = c.next; i < c.s->exchanges.size(); ++i)
      if (!c.settled[i] && wanted(c, c.s->exchanges[i])) finish(c, i, Outcome::Unanswered, "not sent: " + why);
    c.next = static_cast<uint32_t>(c.s->exchanges.size());
    c.st = LiveConn::St::Done;
  }
}

void Engine::on_readable(LiveConn& c, int64_t now) {
  uint8_t buf[1 << 16];
  while (true) {
    size_t n = 0;
    std::string error;
    const Link::Io io = c.link.read(buf, sizeof buf, n, error);
    if (io == Link::Io::Done) {
      last_answer_us_ = now;
      if (traffic_.active()) traffic_.data(c.flow, false, {buf, n});
      c.in.insert(c.in.end(), buf, buf + n);
      size_t off = 0;
      while (c.in.size() - off >= 4) {
        uint32_t size = wire::load_be32(c.in.data() + off);
        if (size > (256u << 20)) { drop(c, now, "the target sent an implausible size prefix"); return; }
        if (c.in.size() - off < 4 + size) break;
        on_response(c, {c.in.data() + off, 4 + size}, now);
        off += 4 + size;
      }
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<ptrdiff_t>(off));
      if (c.link.fd() < 0) return;
      // A short read emptied the socket: no second recv just to hear EAGAIN.
      // (TLS may hold decrypted bytes of a record read whole: read them too.)
      if (n < sizeof buf && !c.link.buffered() && !c.link.tls()) return;
      continue;
    }
    if (io == Link::Io::Closed) { drop(c, now, "the target closed the connection"); return; }
    if (io == Link::Io::Failed) { drop(c, now, error); return; }
    return;
  }
}

void Engine::progress(int64_t now, bool last) {
  if (!o_.progress) return;
  if (!last && now - last_progress_us_ < (o_.progress_lines ? 5000000 : 250000)) return;
  if (last && o_.progress_lines && !progress_shown_) return;
  last_progress_us_ = now;
  double elapsed = (now - start_us_) / 1e6;
  double left = 0;
  if (o_.timing == ReplayOptions::Timing::Recorded)
    left = std::max(0.0, (t_last_recorded_us_ - t0_recorded_us_) / 1e6 / o_.speed - elapsed);
  else if (done_ > 0)
    left = elapsed / static_cast<double>(done_) * static_cast<double>(total_ - std::min(total_, done_));
  char line[160];
  snprintf(line, sizeof line, "\rkwire replay: %llu/%llu requests, %llu regressions, %.0f s left   ",
           static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
           static_cast<unsigned long long>(regressions_), left);
  if (o_.progress_lines) std::cerr << (line + 1) << "\n" << std::flush;  // without the \r
  else std::cerr << line << (last ? "\n" : "") << std::flush;
  progress_shown_ = true;
}

std::string seconds_text(double s) {
  char b[32];
  snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

bool Engine::run(std::string& error) {
  if (!prepare(error)) return false;
  // Timer slack of 1 us instead of the default 50 us: sleeps end when asked.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  start_us_ = now_us();
  last_answer_us_ = start_us_;
  rusage ru0{};
  getrusage(RUSAGE_THREAD, &ru0);
  std::vector<pollfd> fds;
  std::vector<size_t> owner;
  while (true) {
    int64_t now = now_us();
    if (o_.stop && *o_.stop) {
      out_.stopped = "interrupted by a signal";
      abandon("the replay was interrupted by a signal after " + seconds_text((now - start_us_) / 1e6));
      break;
    }
    if (o_.budget_s > 0 && now - start_us_ > static_cast<int64_t>(o_.budget_s * 1e6)) {
      out_.stopped = "budget spent";
      abandon("the run's budget of " + seconds_text(o_.budget_s) + " is spent (--budget)");
      break;
    }
    int64_t wake = now + 100000;
    bool open = false;
    // By index: a request may open a side link (conns_ grows as it goes).
    for (size_t i = 0; i < conns_.size(); ++i) {
      LiveConn& c = conns_[i];
      if (c.st == LiveConn::St::Done && c.handed.empty()) continue;
      pump(c, now, wake);
      // Timeouts: the oldest request in flight.
      if (!c.inflight.empty()) {
        int64_t dl = c.inflight.front().deadline_us;
        for (const auto& f : c.inflight) dl = std::min(dl, f.deadline_us);
        if (now >= dl) {
          drop(c, now, "no response within the timeout");
          if (now - last_answer_us_ > static_cast<int64_t>(o_.reconnect_s * 1e6)) {
            // Nothing at all from the target for that long: it has stopped
            // answering (connections still open, as with a stopped process).
            give_up("the target " + c.target + " stopped answering (nothing for " +
                    std::to_string((now - last_answer_us_) / 1000000) + " s)", now);
            break;
          }
        } else {
          wake = std::min(wake, dl);
        }
      }
      if (c.st != LiveConn::St::Done) open = true;
    }
    if (!open) break;
    fds.clear();
    owner.clear();
    for (size_t i = 0; i < conns_.size(); ++i) {
      LiveConn& c = conns_[i];
      if (c.link.fd() < 0) continue;
      short ev = 0;
      if (c.st == LiveConn::St::Handshaking) ev = c.tls_wants;
      else if (c.st == LiveConn::St::Connecting || c.out_off < c.out.size()) ev |= POLLOUT;
      if (c.st == LiveConn::St::Up) ev |= POLLIN;
      fds.push_back({c.link.fd(), ev, 0});
      owner.push_back(i);
    }
    if (o_.lockstep) {
      fds.push_back({o_.lockstep->fd(o_.lane), POLLIN, 0});
      owner.push_back(SIZE_MAX);
    }
    // ppoll: microsecond wake-ups, so recorded gaps are kept to well under a
    // millisecond; the last stretch before a due request is polled without
    // sleeping, since a sleeping process wakes up late on a busy machine.
    int64_t wait_us = std::max<int64_t>(0, wake - now_us());
    if (o_.timing == ReplayOptions::Timing::Recorded && wait_us < kSpinUs) wait_us = 0;
    else if (o_.timing == ReplayOptions::Timing::Recorded) wait_us -= kSpinUs;
    timespec ts{static_cast<time_t>(wait_us / 1000000), static_cast<long>(wait_us % 1000000) * 1000};
    if (ppoll(fds.data(), fds.size(), &ts, nullptr) < 0 && errno != EINTR) { error = std::string("poll: ") + strerror(errno); return false; }
    now = now_us();
    for (size_t k = 0; k < fds.size(); ++k) {
      if (owner[k] == SIZE_MAX) {
        if (fds[k].revents) o_.lockstep->drain(o_.lane);
        continue;
      }
      LiveConn& c = conns_[owner[k]];
      if (c.link.fd() != fds[k].fd || !fds[k].revents) continue;
      if (c.st == LiveConn::St::Connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c.link.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
          c.link.close();
          c.st = LiveConn::St::Idle;
          drop(c, now, std::string("cannot connect to ") + c.target + ": " + strerror(err));
          continue;
        }
        on_connected(c, now);
      } else if (c.st == LiveConn::St::Handshaking) {
        tls_step(c, now);
      }
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) && c.st == LiveConn::St::Up) on_readable(c, now);
      if (c.st == LiveConn::St::Up) flush(c, now);
    }
    // Anything written into out this round goes out at once.
    for (auto& c : conns_) {
      if (c.st == LiveConn::St::Up && c.out_off < c.out.size()) flush(c, now);
    }
    progress(now, false);
  }
  progress(now_us(), true);
  rusage ru1{};
  getrusage(RUSAGE_THREAD, &ru1);
  auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  out_.cpu_s = secs(ru1.ru_utime) - secs(ru0.ru_utime) + secs(ru1.ru_stime) - secs(ru0.ru_stime);
  out_.wall_s = (now_us() - start_us_) / 1e6;
  collect_shape();
  classify_races(ps_, rec_, [this](std::string_view id) { return topic_name(id); }, out_);
  share_never_acquired();
  if (out_.reads_converged || out_.reads_not_converged)
    out_.notes.push_back(std::to_string(out_.reads_converged + out_.reads_not_converged) +
                         " reads after an admin write were sent again until they converged: " +
                         std::to_string(out_.reads_converged) + " converged, " + std::to_string(out_.reads_not_converged) +
                         " did not (compared as they were)");
  if (follower_fetches_)
    out_.notes.push_back(std::to_string(follower_fetches_) + (follower_fetches_ == 1 ? " partition" : " partitions") +
                         " of fetches recorded to a follower went to the target's read replica in the fetch's rack "
                         "(KIP-392), not to its leader");
  if (out_.resequenced)
    out_.notes.push_back(std::to_string(out_.resequenced) +
                         " times a Produce request of an idempotent producer was refused as out of order while an earlier "
                         "batch of its partition was sent again, and went again behind it, in sequence order");
  if (coordinator_sessions_)
    out_.notes.push_back(std::to_string(coordinator_sessions_) +
                         " coordinator connections (one group's or transaction's requests alone) went to the target's "
                         "coordinator of their key: " + std::to_string(coordinator_moved_) + " to another node than their "
                         "recorded node id's, " + std::to_string(coordinator_unknown_) +
                         " to their recorded node's (the target had not named the coordinator yet)");
  if (!routed_.empty()) {
    std::string line;
    uint32_t total = 0;
    for (const auto& [role, n] : routed_) {
      line += (line.empty() ? "" : ", ") + std::to_string(n) + " to the " + std::string(role_name(role));
      total += n;
    }
    out_.notes.push_back(std::to_string(total) + (total == 1 ? " request" : " requests") +
                         " went to another target node than their session's, where their role lives: " + line);
  }
  auto frames = [](std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end());
    std::string out;
    for (size_t i = 0; i < v.size() && i < 20; ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + (v.size() > 20 ? ", ..." : "");
  };
  if (!split_frames_.empty())
    out_.notes.push_back(std::to_string(split_frames_.size()) + (split_frames_.size() == 1 ? " request was" : " requests were") +
                         " split into one request per target leader of their partitions (" + std::to_string(parts_sent_) +
                         " parts sent, retries included), the answers joined: frames " + frames(split_frames_));
  if (fetch_moves_)
    out_.notes.push_back(std::to_string(fetch_moves_) + (fetch_moves_ == 1 ? " partition" : " partitions") +
                         " of a fetch session answered by a node that no longer led them: fetched from their new "
                         "leader from the next fetch on, the old node's session begun anew");
  if (!key_split_frames_.empty())
    out_.notes.push_back(std::to_string(key_split_frames_.size()) +
                         (key_split_frames_.size() == 1 ? " request was" : " requests were") +
                         " split into one request per target coordinator of the groups or transactional ids they name, "
                         "the answers joined: frames " + frames(key_split_frames_));
  if (fetches_split_)
    out_.notes.push_back(std::to_string(fetches_split_) + (fetches_split_ == 1 ? " fetch" : " fetches") +
                         " named partitions whose leaders are on several target nodes: each session fetches from each "
                         "of them in a fetch session of its own there (" + std::to_string(fetch_parts_) + " fetches sent)");
  if (!unsplit_frames_.empty())
    out_.notes.push_back(std::to_string(unsplit_frames_.size()) + (unsplit_frames_.size() == 1 ? " request names" : " requests name") +
                         " partitions or keys that live on several target nodes and went whole to the first one's node "
                         "(a fetch session, several groups): frames " + frames(unsplit_frames_));
  if (!unplaced_.empty()) {
    std::string which;
    for (size_t i = 0; i < unplaced_.size() && i < 10; ++i)
      which += (i ? ", " : "") + std::to_string(unplaced_[i].first) + " (" + unplaced_[i].second + ")";
    out_.notes.push_back(std::to_string(unplaced_.size()) + (unplaced_.size() == 1 ? " request" : " requests") +
                         " went over their session's own connection because the target had not said where their "
                         "partition's leader or key's coordinator is (no Metadata or FindCoordinator answer named it "
                         "yet): frames " + which + (unplaced_.size() > 10 ? ", ..." : ""));
  }
  if (refreshes_)
    out_.notes.push_back("asked the target " + std::to_string(refreshes_) +
                         " times where a partition's leader or a coordinator had moved (NOT_LEADER_OR_FOLLOWER, "
                         "NOT_COORDINATOR)");
  if (state_.learned())
    out_.notes.push_back("learned " + std::to_string(state_.learned()) + " values from the target's responses, " +
                         std::to_string(state_.differing()) + " of them (topic ids included) differing from the capture's");
  std::string werr;
  if (!traffic_.close(werr)) { error = "--record-out: " + werr; return false; }
  return true;
}

}  // namespace

bool run_replay(const ProgramSet& ps, const Recording& rec, const ReplayOptions& opts, ReplayResult& out,
                std::string& error) {
  control_stop = opts.stop;
  Engine e(ps, rec, opts, out);
  const bool ok = e.run(error);
  control_stop = nullptr;
  // Ended (or never started): the other targets of a differential replay go on alone.
  if (opts.lockstep) opts.lockstep->leave(opts.lane);
  return ok;
}

Lockstep::Lockstep(size_t lanes) : prefix_(new std::atomic<uint64_t>[lanes]) {
  for (size_t i = 0; i < lanes; ++i) {
    prefix_[i].store(0);
    fds_.push_back(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  }
}

Lockstep::~Lockstep() {
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void Lockstep::publish(size_t lane, uint64_t prefix) {
  prefix_[lane].store(prefix, std::memory_order_release);
  const uint64_t one = 1;
  for (size_t i = 0; i < fds_.size(); ++i)
    if (i != lane && fds_[i] >= 0 && write(fds_[i], &one, sizeof one) < 0) {
      // The counter is full (cannot happen before 2^64 - 1 wake-ups): the lane is awake anyway.
    }
}

bool Lockstep::reached(uint64_t k) const {
  for (size_t i = 0; i < fds_.size(); ++i)
    if (prefix_[i].load(std::memory_order_acquire) < k) return false;
  return true;
}

void Lockstep::drain(size_t lane) const {
  uint64_t n = 0;
  if (fds_[lane] >= 0 && read(fds_[lane], &n, sizeof n) < 0) {
    // EAGAIN: nothing to drain.
  }
}

bool RetryBudget::grant(int64_t cost_us, bool charged) {
  if (spent) return false;
  if (!charged && !waited_out) {
    if (waited_us + cost_us <= max_wait_us) {
      waited_us += cost_us;
      return true;
    }
    waited_out = true;
  }
  if (retries >= max_retries || spent_us + cost_us > max_us) {
    spent = true;
    return false;
  }
  ++retries;
  spent_us += cost_us;
  return true;
}

void RetryBudget::refund(uint32_t n, int64_t cost_us) {
  retries -= std::min(retries, n);
  spent_us -= std::min(spent_us, cost_us);
}

bool should_retry(int live_class, int recorded_class, bool live_decoded, int64_t age_us, int64_t request_limit_us,
                  int attempts, RetryBudget& budget, int64_t cost_us, bool charged) {
  if (live_class != 1 || recorded_class == 1 || !live_decoded) return false;
  if (age_us >= request_limit_us || attempts >= 100) return false;
  return budget.grant(cost_us, charged);
}

}  // namespace kwire::replay
