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
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/kafka_messages.hpp"
#include "recorder/pcap_writer.hpp"

using namespace kwire;
using namespace kwire::bench;

namespace {

constexpr int kProduceVersion = 8;
constexpr int kMetadataVersion = 9;

int usage() {
  std::fprintf(stderr, "usage: kwire-gencap OUT.pcap SIZE_MB [--seed N] [--apis-both-know]\n");
  return 2;
}

struct Generator {
  SyntheticCapture& cap;
  uint64_t estimated = 24;  // pcap file header

  void exchange(uint32_t c, const WireMessage& req, const WireMessage& resp) {
    cap.send(c, StreamSide::FromClient, req.bytes);
    cap.send(c, StreamSide::FromServer, resp.bytes);
    // Record header 16 + Ethernet 14 + IPv4 20 + TCP 20 + 12 (timestamp option), per segment.
    for (const auto* m : {&req, &resp}) estimated += m->bytes.size() + ((m->bytes.size() + 1459) / 1460) * 82;
  }
};

void report(SyntheticCapture& cap, const std::string& out, uint64_t messages, uint64_t rounds) {
  uint64_t packets = cap.packets();
  cap.finish();
  auto size = std::filesystem::file_size(out);
  std::printf("%s: %.1f MB, %llu packets, %llu Kafka messages, %llu rounds\n", out.c_str(), size / 1e6,
              static_cast<unsigned long long>(packets), static_cast<unsigned long long>(messages),
              static_cast<unsigned long long>(rounds));
}

int small_messages(Generator& g, uint64_t target, const std::string& out) {
  SyntheticCapture& cap = g.cap;
  const Endpoint brokers[3] = {make_endpoint("10.0.0.1", 9092), make_endpoint("10.0.0.2", 9092),
                               make_endpoint("10.0.0.3", 9092)};
  constexpr int kConsumers = 6, kMembers = 2, kAdmins = 2;
  const int heartbeat_v[kConsumers] = {0, 1, 2, 3, 4, 4};
  const int commit_v[kConsumers] = {2, 5, 7, 8, 9, 10};
  const int list_v[kConsumers] = {1, 3, 5, 6, 7, 9};
  uint32_t consumers[kConsumers], members[kMembers], admins[kAdmins];
  int32_t corr[kConsumers + kMembers + kAdmins] = {};
  for (int k = 0; k < kConsumers; ++k)
    consumers[k] = cap.connect(make_endpoint("10.0.4." + std::to_string(10 + k), uint16_t(44000 + k)), brokers[k % 3]);
  for (int k = 0; k < kMembers; ++k)
    members[k] = cap.connect(make_endpoint("10.0.1." + std::to_string(10 + k), uint16_t(41000 + k)), brokers[0]);
  for (int k = 0; k < kAdmins; ++k)
    admins[k] = cap.connect(make_endpoint("10.0.2." + std::to_string(10 + k), uint16_t(42000 + k)), brokers[1 + k]);
  uint64_t rounds = 0, messages = 0;
  int64_t offset = 1000;
  for (uint64_t r = 0; g.estimated < target; ++r, ++rounds) {
    for (int k = 0; k < kConsumers; ++k) {
      int32_t c = ++corr[k];
      g.exchange(consumers[k], heartbeat_request(c, heartbeat_v[k], k, 7), heartbeat_response(c, heartbeat_v[k], 0));
      messages += 2;
      if (r % 2 == 0) {
        c = ++corr[k];
        g.exchange(consumers[k], offset_commit_request(c, commit_v[k], k, 7, 2, 6, offset),
                   offset_commit_response(c, commit_v[k], 2, 6));
        messages += 2;
      }
      if (r % 10 == 0) {
        c = ++corr[k];
        g.exchange(consumers[k], list_offsets_request(c, list_v[k], k, 2, 6), list_offsets_response(c, list_v[k], 2, 6));
        messages += 2;
      }
    }
    offset += 25;
    for (int k = 0; k < kMembers; ++k) {
      int32_t c = ++corr[kConsumers + k];
      g.exchange(members[k], sg_heartbeat_steady_request(c, k, 3), sg_heartbeat_steady_response(c, k, 3));
      messages += 2;
    }
    if (r % 4 == 0) {
      const int k = static_cast<int>(r / 4) % kAdmins;
      const int version = static_cast<int>(r / 4) % 13 + 1;
      const int topics = 10 + static_cast<int>((r * 7) % 31);                    // 10-40
      const int partitions = std::max(100 / topics + 1, static_cast<int>(100 + (r * 37) % 901) / topics);  // 100-1000 in all
      int32_t c = ++corr[kConsumers + kMembers + k];
      g.exchange(admins[k], metadata_request(c, version, topics), metadata_response(c, version, topics, partitions));
      messages += 2;
    }
  }
  for (uint32_t c : consumers) cap.close(c);
  for (uint32_t c : members) cap.close(c);
  for (uint32_t c : admins) cap.close(c);
  report(cap, out, messages, rounds);
  return 0;
}

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
    Generator g{cap};

    if (small) return small_messages(g, target, out);
    Endpoint brokers[3] = {make_endpoint("10.0.0.1", 9092), make_endpoint("10.0.0.2", 9092),
                           make_endpoint("10.0.0.3", 9092)};
    uint32_t members[kStreamsMembers];
    for (int k = 0; k < kStreamsMembers; ++k) {
      ConnectOptions co;
      co.client_isn = 1000u + 7919u * static_cast<uint32_t>(k);
      members[k] = cap.connect(make_endpoint("10.0.1." + std::to_string(10 + k), uint16_t(41000 + k)),
                               brokers[0], co);
    }
    uint32_t admin = cap.connect(make_endpoint("10.0.2.10", 42000), brokers[1]);
    uint32_t producers[3];
    const Codec codecs[3] = {Codec::None, Codec::Lz4, Codec::Zstd};
    for (int p = 0; p < 3; ++p)
      producers[p] = cap.connect(make_endpoint("10.0.3." + std::to_string(10 + p), uint16_t(43000 + p)),
                                 brokers[p]);

    uint32_t consumers[3] = {};
    for (int k = 0; both_know && k < 3; ++k)
      consumers[k] = cap.connect(make_endpoint("10.0.4." + std::to_string(10 + k), uint16_t(44000 + k)), brokers[k]);
    int32_t consumer_corr[3] = {};
    int32_t corr[kStreamsMembers] = {};
    int32_t admin_corr = 0, producer_corr[3] = {};
    int64_t offsets[3] = {};
    int epoch = 1;
    uint64_t rounds = 0, messages = 0;
    for (uint64_t r = 0; g.estimated < target; ++r, ++rounds) {
      int64_t now_ms = 1'700'000'000'000 + static_cast<int64_t>(r) * 100;
      bool rebalance = r % 25 == 0;
      if (rebalance && r > 0) ++epoch;
      for (int k = 0; k < (both_know ? 0 : kStreamsMembers); ++k) {
        if (rebalance) {
          int32_t c = ++corr[k];
          if (r == 0) g.exchange(members[k], sg_heartbeat_join_request(c, k), sg_heartbeat_assignment_response(c, k, epoch));
          c = ++corr[k];
          g.exchange(members[k], sg_heartbeat_tasks_request(c, k, epoch), sg_heartbeat_assignment_response(c, k, epoch));
          messages += r == 0 ? 4 : 2;
        } else {
          int32_t c = ++corr[k];
          g.exchange(members[k], sg_heartbeat_steady_request(c, k, epoch), sg_heartbeat_steady_response(c, k, epoch));
          messages += 2;
        }
      }
      for (int p = 0; p < 3; ++p) {
        int32_t c = ++producer_corr[p];
        uint64_t batch_seed = seed * 1'000'000'007ULL + r * 3 + static_cast<uint64_t>(p);
        g.exchange(producers[p], produce_request(c, kProduceVersion, 2, 2, 100, codecs[p], batch_seed, now_ms),
                   produce_response(c, kProduceVersion, 2, 2, offsets[p]));
        offsets[p] += 100;
        messages += 2;
      }
      for (int k = 0; both_know && k < 3; ++k) {
        int32_t c = ++consumer_corr[k];
        uint64_t batch_seed = seed * 2'000'000'011ULL + r * 3 + static_cast<uint64_t>(k);
        g.exchange(consumers[k], fetch_request(c, 2, 2, offsets[k]),
                   fetch_response(c, 2, 2, 100, codecs[k], batch_seed, offsets[k], now_ms));
        c = ++consumer_corr[k];
        g.exchange(consumers[k], heartbeat_request(c, k, epoch), heartbeat_response(c));
        messages += 4;
      }
      if (!both_know && r % 5 == 0) {
        int32_t c = ++admin_corr;
        g.exchange(admin, sg_describe_request(c), sg_describe_response(c, epoch));
        messages += 2;
      }
      if (r % 10 == 0) {
        int32_t c = ++admin_corr;
        bool all = r % 100 == 0;
        g.exchange(admin, metadata_request(c, kMetadataVersion, all ? 0 : 40),
                   metadata_response(c, kMetadataVersion, all ? 200 : 40, all ? 10 : 6));
        messages += 2;
      }
    }
    for (int k = 0; k < kStreamsMembers; ++k) cap.close(members[k]);
    cap.close(admin);
    for (int k = 0; both_know && k < 3; ++k) cap.close(consumers[k]);
    for (int p = 0; p < 3; ++p) cap.close(producers[p]);
    report(cap, out, messages, rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kwire-gencap: %s\n", e.what());
    return 1;
  }
  return 0;
}
