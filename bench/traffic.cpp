#include "bench/traffic.hpp"

#include <algorithm>
#include <string>

namespace kwire::bench {

namespace {

constexpr int kProduceVersion = 8;
constexpr int kMetadataVersion = 9;

const Endpoint& broker(int k) {
  static const Endpoint brokers[3] = {make_endpoint("10.0.0.1", 9092), make_endpoint("10.0.0.2", 9092),
                                      make_endpoint("10.0.0.3", 9092)};
  return brokers[k];
}

}  // namespace

void Traffic::exchange(uint32_t conn, const WireMessage& req, const WireMessage& resp) {
  send(conn, req, resp);
  for (const auto* m : {&req, &resp}) estimated_ += m->bytes.size() + ((m->bytes.size() + 1459) / 1460) * 82;
  messages_ += 2;
}

uint64_t mixed_traffic(Traffic& t, uint64_t target, uint64_t seed, bool both_know) {
  uint32_t members[kStreamsMembers];
  for (int k = 0; k < kStreamsMembers; ++k) {
    ConnectOptions co;
    co.client_isn = 1000u + 7919u * static_cast<uint32_t>(k);
    members[k] = t.connect(make_endpoint("10.0.1." + std::to_string(10 + k), uint16_t(41000 + k)), broker(0), co);
  }
  uint32_t admin = t.connect(make_endpoint("10.0.2.10", 42000), broker(1));
  uint32_t producers[3];
  const Codec codecs[3] = {Codec::None, Codec::Lz4, Codec::Zstd};
  for (int p = 0; p < 3; ++p)
    producers[p] = t.connect(make_endpoint("10.0.3." + std::to_string(10 + p), uint16_t(43000 + p)), broker(p));
  uint32_t consumers[3] = {};
  for (int k = 0; both_know && k < 3; ++k)
    consumers[k] = t.connect(make_endpoint("10.0.4." + std::to_string(10 + k), uint16_t(44000 + k)), broker(k));
  int32_t consumer_corr[3] = {};
  int32_t corr[kStreamsMembers] = {};
  int32_t admin_corr = 0, producer_corr[3] = {};
  int64_t offsets[3] = {};
  int epoch = 1;
  uint64_t rounds = 0;
  for (uint64_t r = 0; t.estimated() < target; ++r, ++rounds) {
    int64_t now_ms = 1'700'000'000'000 + static_cast<int64_t>(r) * 100;
    bool rebalance = r % 25 == 0;
    if (rebalance && r > 0) ++epoch;
    for (int k = 0; k < (both_know ? 0 : kStreamsMembers); ++k) {
      if (rebalance) {
        int32_t c = ++corr[k];
        if (r == 0) t.exchange(members[k], sg_heartbeat_join_request(c, k), sg_heartbeat_assignment_response(c, k, epoch));
        c = ++corr[k];
        t.exchange(members[k], sg_heartbeat_tasks_request(c, k, epoch), sg_heartbeat_assignment_response(c, k, epoch));
      } else {
        int32_t c = ++corr[k];
        t.exchange(members[k], sg_heartbeat_steady_request(c, k, epoch), sg_heartbeat_steady_response(c, k, epoch));
      }
    }
    for (int p = 0; p < 3; ++p) {
      int32_t c = ++producer_corr[p];
      uint64_t batch_seed = seed * 1'000'000'007ULL + r * 3 + static_cast<uint64_t>(p);
      t.exchange(producers[p], produce_request(c, kProduceVersion, 2, 2, 100, codecs[p], batch_seed, now_ms),
                 produce_response(c, kProduceVersion, 2, 2, offsets[p]));
      offsets[p] += 100;
    }
    for (int k = 0; both_know && k < 3; ++k) {
      int32_t c = ++consumer_corr[k];
      uint64_t batch_seed = seed * 2'000'000'011ULL + r * 3 + static_cast<uint64_t>(k);
      t.exchange(consumers[k], fetch_request(c, 2, 2, offsets[k]),
                 fetch_response(c, 2, 2, 100, codecs[k], batch_seed, offsets[k], now_ms));
      c = ++consumer_corr[k];
      t.exchange(consumers[k], heartbeat_request(c, k, epoch), heartbeat_response(c));
    }
    if (!both_know && r % 5 == 0) {
      int32_t c = ++admin_corr;
      t.exchange(admin, sg_describe_request(c), sg_describe_response(c, epoch));
    }
    if (r % 10 == 0) {
      int32_t c = ++admin_corr;
      bool all = r % 100 == 0;
      t.exchange(admin, metadata_request(c, kMetadataVersion, all ? 0 : 40),
                 metadata_response(c, kMetadataVersion, all ? 200 : 40, all ? 10 : 6));
    }
  }
  for (int k = 0; k < kStreamsMembers; ++k) t.close(members[k]);
  t.close(admin);
  for (int k = 0; both_know && k < 3; ++k) t.close(consumers[k]);
  for (int p = 0; p < 3; ++p) t.close(producers[p]);
  return rounds;
}

uint64_t small_traffic(Traffic& t, uint64_t target) {
  constexpr int kConsumers = 6, kMembers = 2, kAdmins = 2;
  const int heartbeat_v[kConsumers] = {0, 1, 2, 3, 4, 4};
  const int commit_v[kConsumers] = {2, 5, 7, 8, 9, 10};
  const int list_v[kConsumers] = {1, 3, 5, 6, 7, 9};
  uint32_t consumers[kConsumers], members[kMembers], admins[kAdmins];
  int32_t corr[kConsumers + kMembers + kAdmins] = {};
  for (int k = 0; k < kConsumers; ++k)
    consumers[k] = t.connect(make_endpoint("10.0.4." + std::to_string(10 + k), uint16_t(44000 + k)), broker(k % 3));
  for (int k = 0; k < kMembers; ++k)
    members[k] = t.connect(make_endpoint("10.0.1." + std::to_string(10 + k), uint16_t(41000 + k)), broker(0));
  for (int k = 0; k < kAdmins; ++k)
    admins[k] = t.connect(make_endpoint("10.0.2." + std::to_string(10 + k), uint16_t(42000 + k)), broker(1 + k));
  uint64_t rounds = 0;
  int64_t offset = 1000;
  for (uint64_t r = 0; t.estimated() < target; ++r, ++rounds) {
    for (int k = 0; k < kConsumers; ++k) {
      int32_t c = ++corr[k];
      t.exchange(consumers[k], heartbeat_request(c, heartbeat_v[k], k, 7), heartbeat_response(c, heartbeat_v[k], 0));
      if (r % 2 == 0) {
        c = ++corr[k];
        t.exchange(consumers[k], offset_commit_request(c, commit_v[k], k, 7, 2, 6, offset),
                   offset_commit_response(c, commit_v[k], 2, 6));
      }
      if (r % 10 == 0) {
        c = ++corr[k];
        t.exchange(consumers[k], list_offsets_request(c, list_v[k], k, 2, 6), list_offsets_response(c, list_v[k], 2, 6));
      }
    }
    offset += 25;
    for (int k = 0; k < kMembers; ++k) {
      int32_t c = ++corr[kConsumers + k];
      t.exchange(members[k], sg_heartbeat_steady_request(c, k, 3), sg_heartbeat_steady_response(c, k, 3));
    }
    if (r % 4 == 0) {
      const int k = static_cast<int>(r / 4) % kAdmins;
      const int version = static_cast<int>(r / 4) % 13 + 1;
      const int topics = 10 + static_cast<int>((r * 7) % 31);  // 10-40
      const int partitions = std::max(100 / topics + 1, static_cast<int>(100 + (r * 37) % 901) / topics);  // 100-1000 in all
      int32_t c = ++corr[kConsumers + kMembers + k];
      t.exchange(admins[k], metadata_request(c, version, topics), metadata_response(c, version, topics, partitions));
    }
  }
  for (uint32_t c : consumers) t.close(c);
  for (uint32_t c : members) t.close(c);
  for (uint32_t c : admins) t.close(c);
  return rounds;
}

}  // namespace kwire::bench
