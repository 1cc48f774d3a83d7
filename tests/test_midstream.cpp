// Captures that start in the middle of connections: the real Kafka 4.4
// captures, re-segmented at random sizes and cut at a random packet, decoded
// again. Every message the cut capture holds whole is decoded as in the full
// capture (a response whose request was cut off may only be reported
// unmatched or skipped), nothing is misread, and every byte not in a message
// is reported as skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "dissector/output/output.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

const ProgramSet& programs() { return ProgramSet::release(); }

// The byte streams of a capture, chunk by chunk in capture order.
struct Chunk {
  uint32_t conn;
  StreamSide side;
  uint64_t offset;
  std::vector<uint8_t> bytes;
};

class StreamCollector : public StreamSink {
 public:
  void on_open(const TcpConnection& c) override { endpoints[c.id] = {c.client, c.server}; }
  void on_data(const TcpConnection& c, StreamSide side, uint64_t offset, std::span<const uint8_t> bytes,
               const PacketMeta&) override {
    chunks.push_back({c.id, side, offset, {bytes.begin(), bytes.end()}});
  }
  void on_gap(const TcpConnection&, StreamSide, uint64_t, uint64_t, const PacketMeta&) override { ++gaps; }
  void on_close(const TcpConnection&) override {}
  void on_error(const PacketMeta&, const std::string&, const std::string&) override { ++errors; }

  std::map<uint32_t, std::pair<Endpoint, Endpoint>> endpoints;
  std::vector<Chunk> chunks;
  int gaps = 0, errors = 0;
};

// One decoded message, keyed by where its bytes sit in the original streams.
struct Seen {
  std::string src;
  std::string dst;
  uint64_t offset;         // stream offset in the original (uncut) stream
  std::string summary;
  bool unmatched;
  bool request;
  int32_t corr;
  size_t size;
  bool ok;
};

class Collect : public FrameHandler {
 public:
  // `base` maps "src>dst" to the original offset of the first byte seen.
  explicit Collect(std::map<std::string, uint64_t> base = {}) : base_(std::move(base)) {}
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    const std::string src = ctx.src.str();
    frames.push_back({src, ctx.dst.str(), ctx.stream_offset + base_[src + ">" + ctx.dst.str()], summarize(programs(), f, &ctx), ctx.unmatched,
                      f.direction == Direction::Request, f.correlation_id, f.message.size(), f.ok()});
  }
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    const std::string src = ctx.src.str();
    skipped.push_back({src, ctx.dst.str(), ctx.stream_offset + base_[src + ">" + ctx.dst.str()], length, reason});
  }
  void on_capture_error(const PacketMeta&, const std::string& where, const std::string& reason) override {
    errors.push_back(where + ": " + reason);
  }
  void on_verdict(const TcpConnection& c, bool kafka, const Endpoint& client) override {
    if (!kafka) not_kafka.insert({c.client.str() + ">" + c.server.str(), c.server.str() + ">" + c.client.str()});
    else brokers.insert(client == c.client ? c.server.str() : c.client.str());
  }
  std::set<std::string> not_kafka;  // "src>dst" of both directions
  std::set<std::string> brokers;    // the broker side of every Kafka connection
  struct Skip { std::string src, dst; uint64_t offset, length; std::string reason; };
  std::vector<Seen> frames;
  std::vector<Skip> skipped;
  std::vector<std::string> errors;

 private:
  std::map<std::string, uint64_t> base_;
};

struct Original {
  StreamCollector streams;
  std::vector<Seen> messages;
};

Original load(const std::string& name) {
  Original o;
  const std::string path = std::string(KWIRE_SOURCE_DIR) + "/captures/" + name;
  CaptureStats stats;
  std::string error;
  EXPECT_TRUE(read_capture_file(path, {}, o.streams, stats, error)) << error;
  Collect all;
  KafkaSessions sessions(programs(), {}, all);
  EXPECT_TRUE(read_capture_file(path, {}, sessions, stats, error)) << error;
  o.messages = all.frames;
  return o;
}

struct Packet {
  uint32_t conn;
  StreamSide side;
  uint64_t offset;
  std::vector<uint8_t> bytes;
};

// The streams cut into segments of 1 to `max_segment` bytes, in capture order.
std::vector<Packet> resegment(const StreamCollector& s, std::mt19937& rng, size_t max_segment) {
  std::vector<Packet> out;
  std::uniform_int_distribution<size_t> len(1, max_segment);
  for (const Chunk& c : s.chunks) {
    for (size_t at = 0; at < c.bytes.size();) {
      const size_t n = std::min(len(rng), c.bytes.size() - at);
      out.push_back({c.conn, c.side, c.offset + at, {c.bytes.begin() + at, c.bytes.begin() + at + n}});
      at += n;
    }
  }
  return out;
}

struct CutResult {
  Collect seen;
  std::map<std::string, uint64_t> first;  // per "src>dst": first original offset in the cut capture
  std::map<std::string, uint64_t> end;    // per "src>dst": original offset after the last byte
};

// Writes packets [cut, end) as a capture (connections that start after the
// cut keep their handshake) and decodes it.
CutResult decode_cut(const Original& o, const std::vector<Packet>& packets, size_t cut, const SessionOptions& opts,
                     const std::string& path) {
  CutResult r;
  {
    SyntheticCapture cap(path);
    std::map<uint32_t, uint32_t> handle;
    for (size_t i = cut; i < packets.size(); ++i) {
      const Packet& p = packets[i];
      const auto& [client, server] = o.streams.endpoints.at(p.conn);
      if (!handle.count(p.conn)) {
        ConnectOptions co;
        bool whole = true;  // nothing of this connection before the cut
        for (size_t j = 0; j < cut && whole; ++j) whole = packets[j].conn != p.conn;
        co.handshake = whole;
        handle[p.conn] = cap.connect(client, server, co);
      }
      const std::string src = p.side == StreamSide::FromClient ? client.str() + ">" + server.str()
                                                               : server.str() + ">" + client.str();
      if (!r.first.count(src)) r.first[src] = p.offset;
      r.end[src] = p.offset + p.bytes.size();
      cap.send_at(handle[p.conn], p.side, p.offset - r.first[src], p.bytes);
    }
  }
  r.seen = Collect(r.first);
  KafkaSessions sessions(programs(), opts, r.seen);
  CaptureStats stats;
  std::string error;
  EXPECT_TRUE(read_capture_file(path, {}, sessions, stats, error)) << error;
  return r;
}

// Checks one cut: nothing misread, nothing whole lost.
void check_cut(const Original& o, const CutResult& r, const std::string& what) {
  auto key = [](const Seen& m) { return m.src + ">" + m.dst; };
  std::map<std::pair<std::string, uint64_t>, const Seen*> original;
  for (const Seen& m : o.messages) original[{key(m), m.offset}] = &m;
  std::set<std::pair<std::string, int32_t>> requests_seen;  // (client endpoint, corr) decoded in the cut
  std::set<std::pair<std::string, int32_t>> requests_whole;  // (client endpoint, corr) whole in the cut
  auto whole = [&](const Seen& m) {
    auto first = r.first.find(key(m));
    return first != r.first.end() && m.offset >= first->second && m.offset + m.size <= r.end.at(key(m));
  };
  for (const Seen& m : o.messages)
    if (m.request && whole(m)) requests_whole.insert({key(m), m.corr});
  for (const Seen& f : r.seen.frames) {
    auto it = original.find({key(f), f.offset});
    ASSERT_NE(it, original.end()) << what << ": a message at " << f.src << " offset " << f.offset
                                  << " that the full capture does not have: " << f.summary;
    const Seen& m = *it->second;
    EXPECT_EQ(f.size, m.size) << what << ": " << f.summary;
    if (f.unmatched) {
      EXPECT_FALSE(m.request) << what;
      EXPECT_EQ(f.corr, m.corr) << what << ": " << f.summary << " vs " << m.summary;
    } else {
      EXPECT_EQ(f.summary, m.summary) << what << " at " << f.src << " offset " << f.offset;
    }
    EXPECT_TRUE(f.ok) << what << ": " << f.summary;
    if (f.request) requests_seen.insert({key(f), f.corr});
    if (!f.request && f.unmatched) {
      EXPECT_FALSE(requests_seen.count({f.dst + ">" + f.src, f.corr}))
          << what << ": response unmatched though its request was decoded: " << f.summary;
    }
  }
  EXPECT_TRUE(r.seen.errors.empty()) << what << ": " << r.seen.errors.front();
  // Every whole request after the cut is there, and every whole response to one of them.
  std::map<std::pair<std::string, uint64_t>, const Seen*> got;
  for (const Seen& f : r.seen.frames) got[{key(f), f.offset}] = &f;
  for (const Seen& m : o.messages) {
    if (!whole(m)) continue;
    const bool present = got.count({key(m), m.offset});
    if (m.request) {
      EXPECT_TRUE(present) << what << ": whole request lost: " << m.src << " offset " << m.offset << " " << m.summary;
      continue;
    }
    // A response must be there, matched, when its request is whole in the cut.
    if (requests_whole.count({m.dst + ">" + m.src, m.corr})) {
      if (present) {
        EXPECT_FALSE(got.at({key(m), m.offset})->unmatched) << what << ": " << m.summary;
      }
      EXPECT_TRUE(present) << what << ": whole response lost: " << m.src << " offset " << m.offset << " " << m.summary;
    }
  }
  // Every byte of every stream is in a message or a skip.
  std::map<std::string, uint64_t> accounted;
  for (const Seen& f : r.seen.frames) accounted[key(f)] += f.size;
  for (const auto& sk : r.seen.skipped) accounted[sk.src + ">" + sk.dst] += sk.length;
  for (const auto& [k, first] : r.first) {
    if (r.seen.not_kafka.count(k)) continue;  // counted as a connection, checked below
    EXPECT_EQ(accounted[k], r.end.at(k) - first) << what << ": bytes of " << k << " not accounted for";
  }
  // A connection may be judged not Kafka only when the cut left it no whole
  // request, and no Kafka connection in the cut showed either endpoint to be
  // a broker (one that ends before that evidence comes waits for it).
  for (const auto& k : r.seen.not_kafka) {
    if (!r.first.count(k)) continue;  // no payload in this direction
    const std::string src = k.substr(0, k.find('>')), dst = k.substr(k.find('>') + 1);
    EXPECT_FALSE(r.seen.brokers.count(src) || r.seen.brokers.count(dst))
        << what << ": connection " << k << " judged not Kafka, though the capture shows a broker at one end";
  }
  for (const Seen& m : o.messages) {
    if (m.request && whole(m)) {
      EXPECT_FALSE(r.seen.not_kafka.count(key(m))) << what << ": connection " << key(m) << " lost: " << m.summary;
    }
  }
  // Skips only cover bytes that are in no decoded message.
  for (const auto& s : r.seen.skipped) {
    for (const Seen& f : r.seen.frames) {
      if (f.src != s.src || f.dst != s.dst) continue;
      const bool overlap = f.offset < s.offset + s.length && s.offset < f.offset + f.size;
      EXPECT_FALSE(overlap) << what << ": skip " << s.offset << "+" << s.length << " overlaps " << f.summary;
    }
  }
}

class MidStream : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("kwire-midstream-" + std::to_string(::getpid()) + ".pcap")).string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

}  // namespace

TEST_P(MidStream, CutAndResegmentedRealCaptureDecodesEveryWholeMessage) {
  const Original o = load(GetParam());
  ASSERT_EQ(o.streams.gaps, 0);
  ASSERT_GT(o.messages.size(), 100u);
  const uint32_t seeds = getenv("KWIRE_MIDSTREAM_SEEDS") ? static_cast<uint32_t>(std::stoul(getenv("KWIRE_MIDSTREAM_SEEDS"))) : 120;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    // Small segments make most cuts land inside a message; large ones keep
    // whole messages in one packet, as on loopback.
    const size_t max_segment = seed % 3 == 0 ? 4000 : seed % 3 == 1 ? 300 : 40;
    const auto packets = resegment(o.streams, rng, max_segment);
    const size_t cut = std::uniform_int_distribution<size_t>(1, packets.size() / 2)(rng);
    for (bool by_port : {true, false}) {
      SessionOptions opts;
      // By port: the broker's port is given (-p). Otherwise it must come from the bytes.
      opts.ports.clear();
      if (by_port) opts.ports = {o.streams.endpoints.begin()->second.second.port};
      const std::string what = GetParam() + " seed " + std::to_string(seed) + " cut at packet " +
                               std::to_string(cut) + (by_port ? " (port known)" : " (no port)");
      const CutResult r = decode_cut(o, packets, cut, opts, path_);
      // KWIRE_KEEP_CUT=/tmp/cut keeps each cut capture for a look with tshark or kwire.
      if (getenv("KWIRE_KEEP_CUT")) std::filesystem::copy_file(path_, std::string(getenv("KWIRE_KEEP_CUT")) + "-" + std::to_string(seed) + (by_port ? "p" : "e") + ".pcap", std::filesystem::copy_options::overwrite_existing);
      check_cut(o, r, what);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealCaptures, MidStream,
                         ::testing::Values("demo.pcapng", "stateful.pcapng", "admin.pcapng",
                                           "plugin-failures.pcapng", "old-client.pcapng",
                                           "topology-upgrade.pcapng"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& ch : n) if (ch == '-') ch = '_';
                           return n;
                         });
