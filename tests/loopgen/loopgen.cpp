// kwire-loopgen: exchanges a known set of real Kafka requests and responses over
// loopback TCP, so that a recorder can be checked against what was really sent.
//
//   kwire-loopgen serve+client [--port P|0] [--connections N] [--messages M]
//                 [--pipeline D] [--manifest FILE.jsonl] [--rate R --duration S]
//                 [--wait-file F] [--quiet] [--seed S] [--order rr|random]
//                 [--apis KEY[:VERSION],...] [--max-body BYTES] [--timeout S]
//                 [--corpus DIR] [--specs DIR]
//
// A server listens on 127.0.0.1 (port 0: the kernel picks one) and prints
// "port=NNNN" on stdout before anything else. N client connections each send M
// requests (or, with --duration, as many as the rate allows for S seconds) with
// up to D in flight; the server answers every request in order with a response
// of the same api version and correlation id (except Produce with acks=0, which
// Kafka never answers). Every request and response is
// checked byte for byte on arrival (the server: the body is one of the corpus
// bodies of its api version; the client: the response is exactly the one
// expected), and any socket error, mismatch or shortfall makes the exit status
// non-zero.
//
// The manifest has one JSON line per message, in the order the client sent or
// received it: {"client_port", "direction" (request|response), "apiKey",
// "apiVersion", "correlationId", "size"} where size is the message's size
// prefix (header + body bytes, without the 4 prefix bytes).
//
// --rate R paces the clients to R Kafka messages per second in all (requests
// and responses together: R/2 requests per second, spread over the
// connections), for --messages per connection or for --duration S seconds.
// Without --apis/--max-body, --duration (the benchmark's mode) uses only small
// api versions (bodies of at most 64 bytes) so that message rate, not
// bandwidth, is what varies. The last stdout line is a summary:
//   sent_requests=N sent_responses=N received_responses=N unanswered_requests=N
//   connections=N packets_estimate=N elapsed_s=X messages_per_s=X
// packets_estimate counts the TCP segments both ends sent (TCP_INFO
// tcpi_segs_out) plus the handshake and teardown segments that counter misses:
// what a capture of the port should hold, give or take one per connection.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "corpus.hpp"

namespace loopgen {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  int connections = 4;
  long messages = 100;
  int pipeline = 8;
  std::string manifest;
  double rate = 0;       // Kafka messages per second in all; 0 = as fast as possible
  double duration = 0;   // seconds of sending; 0 = --messages per connection
  bool quiet = false;
  std::string wait_file;
  uint64_t seed = 1;
  bool random_order = false;
  std::string apis;
  size_t max_body = 0;   // 0 = no limit
  double timeout = 0;    // 0 = derived from the run
  std::string corpus_dir = KWIRE_LOOPGEN_CORPUS;
  std::string spec_dir = KWIRE_LOOPGEN_SPECS;
};

struct ManifestEntry {
  uint16_t client_port;
  bool response;
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
  uint32_t size;
};

// State shared by every thread: the corpus, the mix, counters, the first error.
struct Shared {
  const Corpus* corpus = nullptr;
  std::vector<size_t> mix;   // indices into corpus->kinds
  Options opt;
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string first_error;
  std::atomic<uint64_t> sent_requests{0}, received_requests{0}, sent_responses{0}, received_responses{0};
  std::atomic<uint64_t> unanswered{0};  // Produce with acks=0: no response by design
  std::atomic<uint64_t> segments{0};

  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (!failed.exchange(true)) first_error = what;
  }
};

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// The response body a request gets: fixed by its correlation id, so the
// client knows exactly which bytes to expect.
const Bytes& response_body(const Kind& k, int32_t corr) {
  return k.responses[static_cast<uint32_t>(corr) % k.responses.size()];
}

uint64_t segments_sent(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return 0;
  return info.tcpi_segs_out;
}

bool send_all(int fd, const Bytes& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// ---- server side --------------------------------------------------------------

// Answers one request; false (after recording why) when it is not one the
// clients could have sent.
bool answer(int fd, Shared& sh, const uint8_t* msg, size_t size) {
  ParsedRequest r = parse_request(*sh.corpus, msg, size);
  const Kind& k = *sh.corpus->find(r.api_key, r.api_version);
  Bytes body(msg + r.body_offset, msg + size);
  auto sample = std::find(k.requests.begin(), k.requests.end(), body);
  if (sample == k.requests.end()) {
    sh.fail("server: the body of " + k.name + " v" + std::to_string(k.api_version) + " request correlation id " +
            std::to_string(r.correlation_id) + " is not one of the corpus bodies");
    return false;
  }
  sh.received_requests++;
  if (!k.answered[static_cast<size_t>(sample - k.requests.begin())]) return true;
  if (!send_all(fd, frame_response(k, r.correlation_id, response_body(k, r.correlation_id)))) {
    sh.fail(errno_text("server: send"));
    return false;
  }
  sh.sent_responses++;
  return true;
}

void serve_connection(int fd, Shared& sh) {
  Bytes buf;
  std::vector<uint8_t> chunk(1 << 16);
  for (;;) {
    ssize_t n = recv(fd, chunk.data(), chunk.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      sh.fail(errno_text("server: recv"));
      break;
    }
    if (n == 0) {
      if (!buf.empty()) sh.fail("server: connection closed inside a request (" + std::to_string(buf.size()) + " bytes)");
      break;
    }
    buf.insert(buf.end(), chunk.begin(), chunk.begin() + n);
    size_t pos = 0;
    bool ok = true;
    while (ok && buf.size() - pos >= 4) {
      uint32_t size = load_be32(buf.data() + pos);
      if (size > (64u << 20)) {
        sh.fail("server: implausible request size prefix " + std::to_string(size));
        ok = false;
        break;
      }
      if (buf.size() - pos - 4 < size) break;
      try {
        ok = answer(fd, sh, buf.data() + pos + 4, size);
      } catch (const Error& e) {
        sh.fail(std::string("server: ") + e.what());
        ok = false;
      }
      pos += 4 + size;
    }
    if (!ok) break;
    buf.erase(buf.begin(), buf.begin() + static_cast<long>(pos));
  }
  sh.segments += segments_sent(fd);
  close(fd);
}

// Accepts exactly the expected number of connections, one thread each.
void accept_loop(int listen_fd, int expected, Shared& sh) {
  std::vector<std::thread> servers;
  for (int i = 0; i < expected; ++i) {
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR) {
        --i;
        continue;
      }
      if (!sh.failed) sh.fail(errno_text("server: accept"));
      break;
    }
    servers.emplace_back(serve_connection, fd, std::ref(sh));
  }
  for (auto& t : servers) t.join();
}

// ---- client side --------------------------------------------------------------

struct Outstanding {
  int32_t corr;
  const Kind* kind;
};

class Client {
 public:
  Client(int index, Shared& sh, Clock::time_point t0, std::vector<ManifestEntry>& manifest)
      : index_(index), sh_(sh), opt_(sh.opt), t0_(t0), manifest_(manifest),
        rng_(opt_.seed * 1000003 + static_cast<uint64_t>(index)) {}

  void run(int port);

 private:
  bool connect_to(int port);
  const Kind& next_kind();
  void queue_request();
  bool flush();
  bool read_responses();
  bool check_response(const uint8_t* msg, size_t size);
  bool sending_done(Clock::time_point now) const;
  double per_connection_rate() const { return opt_.rate / 2.0 / opt_.connections; }
  void finish();

  int index_;
  Shared& sh_;
  const Options& opt_;
  Clock::time_point t0_;
  std::vector<ManifestEntry>& manifest_;
  std::mt19937_64 rng_;
  int fd_ = -1;
  uint16_t local_port_ = 0;
  std::string client_id_;
  int32_t next_corr_ = 0;
  long sent_ = 0;
  std::deque<Outstanding> outstanding_;
  Bytes out_;          // bytes not yet accepted by the socket
  size_t out_pos_ = 0;
  Bytes in_;
};

bool Client::connect_to(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return sh_.fail(errno_text("client: socket")), false;
  int one = 1;
  // One segment per message, as Kafka clients do (they set TCP_NODELAY too).
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return sh_.fail(errno_text("client: connect to 127.0.0.1:" + std::to_string(port))), false;
  socklen_t len = sizeof a;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  local_port_ = ntohs(a.sin_port);
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  return true;
}

// Round-robin starts each connection at another point of the mix, so the
// first request (the one --auto recognises a connection by) differs too.
const Kind& Client::next_kind() {
  const auto& mix = sh_.mix;
  size_t i = opt_.random_order
                 ? static_cast<size_t>(rng_() % mix.size())
                 : (static_cast<size_t>(index_) * mix.size() / static_cast<size_t>(opt_.connections) +
                    static_cast<size_t>(sent_)) % mix.size();
  return sh_.corpus->kinds[mix[i]];
}

void Client::queue_request() {
  const Kind& k = next_kind();
  int32_t corr = next_corr_++;
  // Round-robin takes the next sample body on each pass over the mix.
  size_t sample = opt_.random_order ? static_cast<size_t>(rng_() % k.requests.size())
                                    : static_cast<size_t>(sent_ / static_cast<long>(sh_.mix.size())) % k.requests.size();
  Bytes msg = frame_request(k, corr, client_id_, k.requests[sample]);
  out_.insert(out_.end(), msg.begin(), msg.end());
  if (k.answered[sample]) outstanding_.push_back({corr, &k});
  else sh_.unanswered++;
  if (!opt_.manifest.empty())
    manifest_.push_back({local_port_, false, k.api_key, k.api_version, corr, static_cast<uint32_t>(msg.size() - 4)});
  ++sent_;
  sh_.sent_requests++;
}

bool Client::flush() {
  while (out_pos_ < out_.size()) {
    ssize_t n = send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) return sh_.fail(errno_text("client: send")), false;
    out_pos_ += static_cast<size_t>(n);
  }
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
  }
  return true;
}

bool Client::check_response(const uint8_t* msg, size_t size) {
  if (outstanding_.empty())
    return sh_.fail("client " + std::to_string(local_port_) + ": a response while no request is outstanding"), false;
  Outstanding o = outstanding_.front();
  outstanding_.pop_front();
  Bytes expected = frame_response(*o.kind, o.corr, response_body(*o.kind, o.corr));
  if (expected.size() - 4 != size || !std::equal(msg, msg + size, expected.begin() + 4)) {
    int32_t got = size >= 4 ? static_cast<int32_t>(load_be32(msg)) : -1;
    sh_.fail("client " + std::to_string(local_port_) + ": response to " + o.kind->name + " v" +
             std::to_string(o.kind->api_version) + " correlation id " + std::to_string(o.corr) +
             " is not the expected one (correlation id " + std::to_string(got) + ", " + std::to_string(size) +
             " bytes, expected " + std::to_string(expected.size() - 4) + ")");
    return false;
  }
  if (!opt_.manifest.empty())
    manifest_.push_back({local_port_, true, o.kind->api_key, o.kind->api_version, o.corr, static_cast<uint32_t>(size)});
  sh_.received_responses++;
  return true;
}

bool Client::read_responses() {
  uint8_t chunk[1 << 16];
  for (;;) {
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) return sh_.fail(errno_text("client: recv")), false;
    if (n == 0)
      return sh_.fail("client " + std::to_string(local_port_) + ": server closed the connection with " +
                      std::to_string(outstanding_.size()) + " requests unanswered"), false;
    in_.insert(in_.end(), chunk, chunk + n);
  }
  size_t pos = 0;
  while (in_.size() - pos >= 4) {
    uint32_t size = load_be32(in_.data() + pos);
    if (in_.size() - pos - 4 < size) break;
    if (!check_response(in_.data() + pos + 4, size)) return false;
    pos += 4 + size;
  }
  in_.erase(in_.begin(), in_.begin() + static_cast<long>(pos));
  return true;
}

bool Client::sending_done(Clock::time_point now) const {
  if (opt_.duration > 0) return std::chrono::duration<double>(now - t0_).count() >= opt_.duration;
  return sent_ >= opt_.messages;
}

void Client::run(int port) {
  client_id_ = "kwire-loopgen-" + std::to_string(index_);
  next_corr_ = (index_ + 1) * 1000000;  // distinct per connection, easy to read in a decode
  if (!connect_to(port)) return;
  for (;;) {
    if (sh_.failed) break;
    auto now = Clock::now();
    bool done = sending_done(now);
    if (done && outstanding_.empty() && out_.empty()) break;
    double elapsed = std::chrono::duration<double>(now - t0_).count();
    double r = per_connection_rate();
    // Paced: the requests due by now (the first at once); a late client
    // catches up, bounded by the pipeline depth.
    long due = r > 0 ? static_cast<long>(elapsed * r) + 1 : LONG_MAX;
    while (!done && static_cast<int>(outstanding_.size()) < opt_.pipeline && sent_ < due) {
      queue_request();
      if (!flush()) return finish();
      done = sending_done(now);
    }
    short events = static_cast<short>((outstanding_.empty() ? 0 : POLLIN) | (out_.empty() ? 0 : POLLOUT));
    timespec ts{};
    timespec* timeout = nullptr;
    if (!done && static_cast<int>(outstanding_.size()) < opt_.pipeline && r > 0) {
      double wait = std::max(0.0, static_cast<double>(sent_) / r - elapsed);
      if (opt_.duration > 0) wait = std::min(wait, std::max(0.0, opt_.duration - elapsed));
      ts.tv_sec = static_cast<time_t>(wait);
      ts.tv_nsec = static_cast<long>((wait - std::floor(wait)) * 1e9);
      timeout = &ts;
    }
    pollfd p{fd_, events, 0};
    int rc = ppoll(&p, 1, timeout, nullptr);
    if (rc < 0 && errno != EINTR) return sh_.fail(errno_text("client: poll")), finish();
    if (rc <= 0) continue;
    if ((p.revents & (POLLIN | POLLERR | POLLHUP)) && !read_responses()) return finish();
    if ((p.revents & POLLOUT) && !flush()) return finish();
  }
  finish();
}

// Counts this end's segments, then closes in order: our FIN, the server's FIN.
void Client::finish() {
  if (fd_ < 0) return;
  sh_.segments += segments_sent(fd_);
  shutdown(fd_, SHUT_WR);
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  uint8_t b[4096];
  while (!sh_.failed && recv(fd_, b, sizeof b, 0) > 0) {
  }
  close(fd_);
  fd_ = -1;
}

// ---- main ---------------------------------------------------------------------

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "kwire-loopgen: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: kwire-loopgen serve+client [--port P|0] [--connections N] [--messages M] [--pipeline D]\n"
               "         [--manifest FILE.jsonl] [--rate MSGS_PER_S --duration S] [--wait-file F] [--quiet]\n"
               "         [--seed S] [--order rr|random] [--apis KEY[:VERSION],...] [--max-body BYTES]\n"
               "         [--timeout S] [--corpus DIR] [--specs DIR]\n");
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "serve+client") usage("the only mode is serve+client");
  Options o;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--port") o.port = std::stoi(value());
      else if (a == "--connections") o.connections = std::stoi(value());
      else if (a == "--messages") o.messages = std::stol(value());
      else if (a == "--pipeline") o.pipeline = std::stoi(value());
      else if (a == "--manifest") o.manifest = value();
      else if (a == "--rate") o.rate = std::stod(value());
      else if (a == "--duration") o.duration = std::stod(value());
      else if (a == "--wait-file") o.wait_file = value();
      else if (a == "--quiet") o.quiet = true;
      else if (a == "--seed") o.seed = std::stoull(value());
      else if (a == "--order") {
        std::string v = value();
        if (v != "rr" && v != "random") usage("--order is rr or random");
        o.random_order = v == "random";
      } else if (a == "--apis") o.apis = value();
      else if (a == "--max-body") o.max_body = std::stoul(value());
      else if (a == "--timeout") o.timeout = std::stod(value());
      else if (a == "--corpus") o.corpus_dir = value();
      else if (a == "--specs") o.spec_dir = value();
      else usage("unknown option " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (o.connections < 1 || o.pipeline < 1 || o.messages < 0 || o.port < 0 || o.port > 65535)
    usage("--connections and --pipeline must be >= 1, --messages >= 0, --port 0-65535");
  if (o.duration > 0 && o.rate <= 0) usage("--duration needs --rate");
  if (o.duration > 0 && o.apis.empty() && o.max_body == 0) o.max_body = 64;
  if (o.timeout == 0) o.timeout = o.duration > 0 ? o.duration + 60 : 300;
  return o;
}

// Every corpus api version except SaslHandshake (17) and SaslAuthenticate (36):
// a successful SASL exchange turns the connection into raw tokens, which is
// not what this traffic is for; and except Envelope (58) and JoinGroup (11),
// whose bytes fields carry payloads that kwire decodes: most corpus samples
// fill them with random bytes (an Envelope's request that is no request), and
// a JoinGroup response before v7 reads its member metadata as its request's
// protocol type says, which a response sample picked by correlation id does
// not match. --apis and --max-body narrow it further.
std::vector<size_t> choose_mix(const Corpus& c, const Options& o) {
  std::set<std::pair<int, int>> wanted;  // version -1: every version
  std::stringstream ss(o.apis);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos) wanted.insert({std::stoi(item), -1});
    else wanted.insert({std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1))});
  }
  std::vector<size_t> mix;
  for (size_t i = 0; i < c.kinds.size(); ++i) {
    const Kind& k = c.kinds[i];
    if (k.api_key == 17 || k.api_key == 36 || k.api_key == 58 || k.api_key == 11) continue;
    if (!wanted.empty() && !wanted.count({k.api_key, -1}) && !wanted.count({k.api_key, k.api_version})) continue;
    if (o.max_body > 0 && k.max_body() > o.max_body) continue;
    mix.push_back(i);
  }
  if (mix.empty()) usage("no corpus api version fits --apis/--max-body");
  return mix;
}

int listen_on(int port, int& bound) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1024) != 0) {
    std::fprintf(stderr, "kwire-loopgen: cannot listen on 127.0.0.1:%d: %s\n", port, std::strerror(errno));
    std::exit(1);
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  bound = ntohs(a.sin_port);
  return fd;
}

void write_manifest(const std::string& path, const std::vector<std::vector<ManifestEntry>>& per_client) {
  std::ofstream out(path);
  for (const auto& entries : per_client)
    for (const auto& e : entries) {
      nlohmann::json j = {{"client_port", e.client_port}, {"direction", e.response ? "response" : "request"},
                          {"apiKey", e.api_key}, {"apiVersion", e.api_version},
                          {"correlationId", e.correlation_id}, {"size", e.size}};
      out << j.dump() << '\n';
    }
  if (!out) {
    std::fprintf(stderr, "kwire-loopgen: cannot write manifest %s\n", path.c_str());
    std::exit(1);
  }
}

// A stuck run (a peer that never answers) must fail the test, not hang it.
void start_watchdog(double seconds) {
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::fprintf(stderr, "kwire-loopgen: not finished after %.0f s (--timeout); giving up\n", seconds);
    std::_Exit(3);
  }).detach();
}

int run(const Options& opt) {
  Corpus corpus = load_corpus(opt.corpus_dir, opt.spec_dir);
  Shared sh;
  sh.corpus = &corpus;
  sh.opt = opt;
  sh.mix = choose_mix(corpus, opt);
  int port = 0;
  int listen_fd = listen_on(opt.port, port);
  std::printf("port=%d\n", port);
  std::fflush(stdout);
  if (!opt.quiet)
    std::fprintf(stderr, "kwire-loopgen: %zu api versions in the mix, %d connections, pipeline %d\n", sh.mix.size(),
                 opt.connections, opt.pipeline);
  start_watchdog(opt.timeout);
  while (!opt.wait_file.empty() && !std::filesystem::exists(opt.wait_file))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));

  std::thread acceptor(accept_loop, listen_fd, opt.connections, std::ref(sh));
  std::vector<std::vector<ManifestEntry>> manifests(static_cast<size_t>(opt.connections));
  std::vector<std::thread> clients;
  auto t0 = Clock::now();
  for (int i = 0; i < opt.connections; ++i)
    clients.emplace_back([&, i] { Client(i, sh, t0, manifests[static_cast<size_t>(i)]).run(port); });
  for (auto& t : clients) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (sh.failed) shutdown(listen_fd, SHUT_RDWR);  // unblocks accept when a client never connected
  acceptor.join();
  close(listen_fd);

  uint64_t req = sh.sent_requests, got_req = sh.received_requests, resp = sh.sent_responses,
           got_resp = sh.received_responses, unanswered = sh.unanswered;
  if (!sh.failed && (req != got_req || req != resp + unanswered || resp != got_resp))
    sh.fail("counts differ: sent_requests=" + std::to_string(req) + " server received " + std::to_string(got_req) +
            ", acks=0 produce " + std::to_string(unanswered) + ", sent_responses=" + std::to_string(resp) +
            " client received " + std::to_string(got_resp));
  if (!opt.manifest.empty()) write_manifest(opt.manifest, manifests);
  // Per connection: the SYN-ACK (sent before the accepted socket exists) and
  // the teardown sent after the counters were read (client FIN, server ACK and
  // FIN, last ACK; the server's ACK and FIN often travel as one segment).
  uint64_t packets = sh.segments + 4 * static_cast<uint64_t>(opt.connections);
  std::printf("sent_requests=%llu sent_responses=%llu received_responses=%llu unanswered_requests=%llu "
              "connections=%d packets_estimate=%llu elapsed_s=%.3f messages_per_s=%.0f\n",
              static_cast<unsigned long long>(req), static_cast<unsigned long long>(resp),
              static_cast<unsigned long long>(got_resp), static_cast<unsigned long long>(unanswered),
              opt.connections, static_cast<unsigned long long>(packets),
              elapsed, elapsed > 0 ? static_cast<double>(req + resp) / elapsed : 0.0);
  std::fflush(stdout);
  if (sh.failed) {
    std::fprintf(stderr, "kwire-loopgen: FAILED: %s\n", sh.first_error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace loopgen

int main(int argc, char** argv) {
  loopgen::Options opt = loopgen::parse_options(argc, argv);
  try {
    return loopgen::run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kwire-loopgen: %s\n", e.what());
    return 1;
  }
}
