// kwire-gencap: writes a pcap of synthetic but realistic Kafka traffic on port
// 9092, about SIZE_MB megabytes (10^6 bytes), for whole-process benchmarks.
//
//   kwire-gencap OUT.pcap SIZE_MB [--seed N] [--apis-both-know | --small]
//
// Connections (all with handshakes, to three brokers 10.0.0.1-3:9092):
//   4 Kafka Streams members of "orders-app": StreamsGroupHeartbeat v1 every
//     round (steady state), a rebalance (join with topology, assignment, task
//     report with offsets) at the start and every 25 rounds;
//   1 admin client: StreamsGroupDescribe v1 every 5 rounds, Metadata v9 for
//     40 topics every 10 rounds and for all 200 topics x 10 partitions every
//     100 rounds;
//   3 producers: a Produce v8 request per round, 2 topics x 2 partitions x
//     one batch of 100 ~100-byte records, uncompressed / lz4 / zstd, and the
//     responses.
// --apis-both-know replaces the streams traffic (which tshark 4.0's built-in
// kafka dissector cannot read) by 3 classic consumers: a Fetch v11 per round
// (2 topics x 2 partitions, one batch of 100 records each, uncompressed / lz4
// / zstd) and a Heartbeat v3, for comparisons with that dissector.
// --small writes many small messages with many small fields instead, the
// commonest traffic of a cluster's control plane, at every version clients
// send: 6 classic consumers (each at its own versions: Heartbeat v0-4 every
// round, OffsetCommit v2-10 of 2 topics x 6 partitions every 2 rounds,
// ListOffsets v1-9 of 2 x 6 every 10 rounds), 2 Kafka Streams members
// (StreamsGroupHeartbeat v1 steady state every round) and 2 admin clients
// whose Metadata v1-v13 (cycling) ask every 4 rounds for 100 to 1000
// partitions of 10 to 40 topics.
// Produce v8 and Metadata v9 are used (not the newest, v13) because they are
// the newest versions tshark 4.0 dissects (it stops at "Unsupported ...
// version" for later ones), so a comparison makes both tools do the full work.
// Real clients of the Kafka 2.x/3.x era send exactly these.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/traffic.hpp"
#include "recorder/pcap_writer.hpp"

using namespace kwire;
using namespace kwire::bench;

namespace {

int usage() {
  std::fprintf(stderr, "usage: kwire-gencap OUT.pcap SIZE_MB [--seed N] [--apis-both-know | --small]\n");
  return 2;
}

// Each message in segments of 1460 bytes, request then response.
class PcapTraffic : public Traffic {
 public:
  explicit PcapTraffic(SyntheticCapture& cap) : cap_(cap) {}
  uint32_t connect(const Endpoint& client, const Endpoint& server, const ConnectOptions& opts) override {
    return cap_.connect(client, server, opts);
  }
  void close(uint32_t conn) override { cap_.close(conn); }

 protected:
  void send(uint32_t conn, const WireMessage& req, const WireMessage& resp) override {
    cap_.send(conn, StreamSide::FromClient, req.bytes);
    cap_.send(conn, StreamSide::FromServer, resp.bytes);
  }

 private:
  SyntheticCapture& cap_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  std::string out = argv[1];
  double mb = std::atof(argv[2]);
  uint64_t seed = 1;
  bool both_know = false, small = false;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--apis-both-know") both_know = true;
    else if (a == "--small") small = true;
    else return usage();
  }
  if (mb <= 0 || (small && both_know)) return usage();
  const uint64_t target = static_cast<uint64_t>(mb * 1e6);

  try {
    SyntheticCaptureOptions opts;
    opts.time_step = std::chrono::microseconds(250);
    SyntheticCapture cap(out, opts);
    PcapTraffic t(cap);
    const uint64_t rounds = small ? small_traffic(t, target) : mixed_traffic(t, target, seed, both_know);
    const uint64_t packets = cap.packets();
    cap.finish();
    std::printf("%s: %.1f MB, %llu packets, %llu Kafka messages, %llu rounds\n", out.c_str(),
                std::filesystem::file_size(out) / 1e6, static_cast<unsigned long long>(packets),
                static_cast<unsigned long long>(t.messages()), static_cast<unsigned long long>(rounds));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kwire-gencap: %s\n", e.what());
    return 1;
  }
  return 0;
}
