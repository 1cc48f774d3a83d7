// Decode (and encode) throughput into Frames, no output. Bytes are Kafka
// payload: whole messages, size prefix included, as they are on the wire
// (compressed batches count at their compressed size). One Frame is reused
// across iterations, as kwire decode does, so steady state does not allocate.
//
// Every message is checked once before timing: it must decode without errors
// and re-encode byte for byte, so the numbers are for the successful path.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/kafka_messages.hpp"
#include "bench/traffic.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"

using namespace kwire;
using namespace kwire::bench;

namespace {

struct Workload {
  std::string name;
  std::vector<WireMessage> messages;
  size_t bytes = 0;
  size_t nodes = 0;  // tape nodes per pass
  size_t plain_bytes = 0;  // compressed workloads: the same messages uncompressed (0: same as bytes)
  size_t capture_bytes = 0;  // capture_* workloads: the pcap file these messages make
};

void decode(const FrameDecoder& d, const WireMessage& m, Frame& f) {
  if (m.request) d.decode_request(m.bytes, f);
  else d.decode_response(m.bytes, m.api_key, m.api_version, f);
}

// Aborts the run if a message does not decode cleanly or round-trip.
void check(Workload& w) {
  const ProgramSet& ps = ProgramSet::release();
  FrameDecoder dec(ps);
  FrameEncoder enc(ps);
  Frame f;
  w.bytes = w.nodes = 0;
  for (const auto& m : w.messages) {
    decode(dec, m, f);
    if (!f.ok() || !f.program) {
      std::fprintf(stderr, "%s: api %d v%d %s does not decode: %s at offset %u\n", w.name.c_str(), m.api_key,
                   m.api_version, m.request ? "request" : "response",
                   f.errors.empty() ? "no program" : f.errors[0].reason.c_str(),
                   f.errors.empty() ? 0u : f.errors[0].offset);
      std::exit(1);
    }
    std::vector<uint8_t> again;
    std::string error;
    if (!enc.encode(f, again, error) || again != m.bytes) {
      std::fprintf(stderr, "%s: api %d v%d does not re-encode identically: %s\n", w.name.c_str(), m.api_key,
                   m.api_version, error.c_str());
      std::exit(1);
    }
    w.bytes += m.bytes.size();
    w.nodes += f.nodes.size();
  }
}

// `compiled`: the release's structs read by their generated decoders (as
// kwire does), or all by the interpreter (FrameDecoder::set_compiled), the
// peer they are measured against in the same run.
void BM_Decode(benchmark::State& state, const Workload* w, bool compiled) {
  const ProgramSet& ps = ProgramSet::release();
  FrameDecoder dec(ps);
  dec.set_compiled(compiled);
  Frame f;
  for (auto _ : state) {
    for (const auto& m : w->messages) {
      decode(dec, m, f);
      benchmark::DoNotOptimize(f.nodes.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w->bytes));
  state.counters["msgs/s"] = benchmark::Counter(static_cast<double>(w->messages.size()),
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(w->nodes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes/msg"] = static_cast<double>(w->bytes) / static_cast<double>(w->messages.size());
  if (w->plain_bytes)
    state.counters["uncompressed_bytes_per_second"] = benchmark::Counter(
        static_cast<double>(w->plain_bytes), benchmark::Counter::kIsIterationInvariantRate);
  if (w->capture_bytes)
    state.counters["capture_bytes_per_second"] = benchmark::Counter(
        static_cast<double>(w->capture_bytes), benchmark::Counter::kIsIterationInvariantRate);
}

// What writing the tape node by node costs: the workload's nodes, decoded
// once, are written again one at a time into a reused Frame
// (Frame::put_leaf, as the decoder writes strings and opens structs), with
// no wire bytes read or checked. The generated decoders write runs of
// fixed-size fields and whole integer arrays as one block, without the
// tape's bookkeeping per node, and on Metadata outrun this.
void BM_TapeWrite(benchmark::State& state, const Workload* w) {
  const ProgramSet& ps = ProgramSet::release();
  FrameDecoder dec(ps);
  std::vector<Frame> frames(w->messages.size());
  for (size_t i = 0; i < w->messages.size(); ++i) decode(dec, w->messages[i], frames[i]);
  Frame out;
  for (auto _ : state) {
    for (const auto& f : frames) {
      out.nodes.clear();
      for (const Node& n : f.nodes) out.put_leaf(n.desc, n.type, n.parent, n.offset, n.length, n.flags, n.v.u, n.aux);
      benchmark::DoNotOptimize(out.nodes.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w->bytes));
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(w->nodes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// Encodes Frames decoded once up front; the output vector is reused.
void BM_Encode(benchmark::State& state, const Workload* w) {
  const ProgramSet& ps = ProgramSet::release();
  FrameDecoder dec(ps);
  FrameEncoder enc(ps);
  std::vector<Frame> frames(w->messages.size());
  for (size_t i = 0; i < w->messages.size(); ++i) decode(dec, w->messages[i], frames[i]);
  std::vector<uint8_t> out;
  std::string error;
  for (auto _ : state) {
    for (const auto& f : frames) {
      out.clear();
      if (!enc.encode(f, out, error)) state.SkipWithError(error.c_str());
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w->bytes));
  state.counters["msgs/s"] = benchmark::Counter(static_cast<double>(w->messages.size()),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<Workload>& workloads() {
  static std::vector<Workload> all = [] {
    std::vector<Workload> v;
    // (a) Metadata v13 response: 200 topics x 10 partitions, 6 brokers, RF 3.
    v.push_back({"metadata_v13_200x10", {metadata_response(7, 13, 200, 10)}});
    // (b) StreamsGroupHeartbeat v1 during a rebalance: join (topology),
    // assignment, task report with offsets, assignment again.
    {
      Workload w{"sg_heartbeat_v1_rebalance", {}};
      for (int k = 0; k < kStreamsMembers; ++k) {
        w.messages.push_back(sg_heartbeat_join_request(100 + k, k));
        w.messages.push_back(sg_heartbeat_assignment_response(100 + k, k, 5));
        w.messages.push_back(sg_heartbeat_tasks_request(200 + k, k, 5));
        w.messages.push_back(sg_heartbeat_assignment_response(200 + k, k, 5));
      }
      v.push_back(std::move(w));
    }
    // (b') StreamsGroupHeartbeat v1 in steady state: small request and response.
    {
      Workload w{"sg_heartbeat_v1_steady", {}};
      for (int k = 0; k < kStreamsMembers; ++k) {
        w.messages.push_back(sg_heartbeat_steady_request(300 + k, k, 5));
        w.messages.push_back(sg_heartbeat_steady_response(300 + k, k, 5));
      }
      v.push_back(std::move(w));
    }
    // (c) StreamsGroupDescribe v1 response: 4 members, topology and its description.
    v.push_back({"sg_describe_v1_response", {sg_describe_response(9, 5)}});
    // (d) Produce v13: 2 topics x 3 partitions, one batch of 100 ~100-byte records each.
    v.push_back({"produce_v13_100rec_none", {produce_request(11, 13, 2, 3, 100, Codec::None, 1)}});
    v.push_back({"produce_v13_100rec_lz4", {produce_request(12, 13, 2, 3, 100, Codec::Lz4, 1)}});
    v.push_back({"produce_v13_100rec_zstd", {produce_request(13, 13, 2, 3, 100, Codec::Zstd, 1)}});
    // (e) The messages of bench/run-all's 15 MB captures, in capture order
    // (kwire-gencap's traffic): what decoding alone costs of `kwire decode -r
    // CAPTURE -c 0`, with no file to read, no TCP to reassemble and no
    // messages to cut. Its rate in capture bytes bounds the whole process's.
    for (const bool small : {false, true}) {
      MessageList t;
      constexpr uint64_t kCaptureBytes = 15'000'000;
      if (small) small_traffic(t, kCaptureBytes);
      else mixed_traffic(t, kCaptureBytes, 1, false);
      Workload w{small ? "capture_small_15mb" : "capture_mixed_15mb", std::move(t.messages)};
      w.capture_bytes = t.estimated();
      v.push_back(std::move(w));
    }
    for (auto& w : v) check(w);
    // Same seed, same records: the uncompressed request is the decompressed size.
    const size_t plain = v[4].bytes;
    v[5].plain_bytes = v[6].plain_bytes = plain;
    return v;
  }();
  return all;
}

void register_all() {
  auto& ws = workloads();
  for (const auto& w : ws) {
    std::fprintf(stderr, "workload %-28s %3zu message(s), %8zu bytes, %7zu nodes\n", w.name.c_str(),
                 w.messages.size(), w.bytes, w.nodes);
    benchmark::RegisterBenchmark(("decode/" + w.name).c_str(), BM_Decode, &w, true);
  }
  for (const auto& w : ws)
    if (!w.capture_bytes) benchmark::RegisterBenchmark(("decode_interpreted/" + w.name).c_str(), BM_Decode, &w, false);
  for (const auto& w : ws)
    if (w.name == "metadata_v13_200x10") benchmark::RegisterBenchmark(("tape_write/" + w.name).c_str(), BM_TapeWrite, &w);
  for (const auto& w : ws)
    if (w.name == "metadata_v13_200x10" || w.name == "sg_heartbeat_v1_rebalance")
      benchmark::RegisterBenchmark(("encode/" + w.name).c_str(), BM_Encode, &w);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
