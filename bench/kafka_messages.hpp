// Deterministic, realistic Kafka messages for the benchmarks and for
// kwire-gencap, written field by field from specs/kafka/*.json (flexible
// versions only: compact strings and arrays, tagged-field sections). Every
// function returns a whole message, 4-byte size prefix included.
//
// The shapes follow what a Kafka 4.x cluster with a Kafka Streams application
// sends: one streams group ("orders-app") with a three-subtopology topology,
// members that own active/standby/warmup tasks, producers that send record
// batches of ~100-byte JSON records.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/records.hpp"

namespace kwire::bench {

// Appends Kafka wire encodings; message() prepends the size.
class Msg {
 public:
  Msg& i8(int v) { b_.push_back(static_cast<uint8_t>(v)); return *this; }
  Msg& i16(int v) { return i8(v >> 8).i8(v); }
  Msg& i32(int64_t v) { return i16(static_cast<int>(v >> 16)).i16(static_cast<int>(v & 0xffff)); }
  Msg& i64(int64_t v) { return i32(v >> 32).i32(v & 0xffffffff); }
  Msg& boolean(bool v) { return i8(v ? 1 : 0); }
  Msg& uvarint(uint64_t v) {
    while (v >= 0x80) { b_.push_back(static_cast<uint8_t>(v | 0x80)); v >>= 7; }
    b_.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Msg& raw(std::span<const uint8_t> s) { b_.insert(b_.end(), s.begin(), s.end()); return *this; }
  Msg& raw(std::string_view s) { b_.insert(b_.end(), s.begin(), s.end()); return *this; }
  // Classic (int16 length) string, as in the request header's client id.
  Msg& str(std::string_view s) { return i16(static_cast<int>(s.size())).raw(s); }
  Msg& cstr(std::string_view s) { return uvarint(s.size() + 1).raw(s); }
  Msg& cnull() { return uvarint(0); }            // null compact string / array / bytes
  Msg& carr(size_t n) { return uvarint(n + 1); }  // compact array length
  Msg& cbytes(std::span<const uint8_t> s) { return uvarint(s.size() + 1).raw(s); }
  Msg& uuid(uint64_t hi, uint64_t lo) { return i64(static_cast<int64_t>(hi)).i64(static_cast<int64_t>(lo)); }
  Msg& tags0() { return uvarint(0); }
  // Compact (flexible versions) or classic (int16 string, int32 array) encodings.
  Msg& s(bool compact, std::string_view v) { return compact ? cstr(v) : str(v); }
  Msg& arr(bool compact, size_t n) { return compact ? carr(n) : i32(static_cast<int64_t>(n)); }
  Msg& present() { return i8(1); }               // nullable struct: present
  Msg& absent() { return i8(-1); }               // nullable struct: null
  size_t size() const { return b_.size(); }
  std::vector<uint8_t> message() const;

 private:
  std::vector<uint8_t> b_;
};

// Request header v2 / response header v1 (flexible messages).
Msg request_header(int api_key, int version, int32_t corr, std::string_view client_id);
Msg response_header(int32_t corr);
// Request header v1 (non-flexible requests); response header v0 is just the correlation id.
Msg request_header_v1(int api_key, int version, int32_t corr, std::string_view client_id);

// A message and what decode_response needs to know about it.
struct WireMessage {
  std::vector<uint8_t> bytes;
  bool request = true;
  int16_t api_key = 0;
  int16_t api_version = 0;
};

// --- Metadata (api key 3), versions 9 to 13 (the flexible ones) --------------
// topics == 0: a request for all topics (null array).
WireMessage metadata_request(int32_t corr, int version, int topics);
// `topics` topics of `partitions` partitions each, replication factor 3 over
// `brokers` brokers.
WireMessage metadata_response(int32_t corr, int version, int topics, int partitions, int brokers = 6);

// --- Streams groups (KIP-1071) -----------------------------------------------
constexpr int kStreamsMembers = 4;     // members of the "orders-app" group
constexpr int kStreamsPartitions = 12;  // partitions of each source topic

std::string member_id(int member);
// StreamsGroupHeartbeat v1: the first heartbeat of a member (topology, process
// id, endpoint, client tags; no tasks yet).
WireMessage sg_heartbeat_join_request(int32_t corr, int member);
// A heartbeat reporting owned tasks and task offsets after a rebalance.
WireMessage sg_heartbeat_tasks_request(int32_t corr, int member, int epoch);
// The broker's answer carrying the member's assignment and the group's
// partitions by user endpoint.
WireMessage sg_heartbeat_assignment_response(int32_t corr, int member, int epoch);
// Steady state: nothing changed, nothing assigned.
WireMessage sg_heartbeat_steady_request(int32_t corr, int member, int epoch);
WireMessage sg_heartbeat_steady_response(int32_t corr, int member, int epoch);

// StreamsGroupDescribe v1 of "orders-app" with its topology description.
WireMessage sg_describe_request(int32_t corr);
WireMessage sg_describe_response(int32_t corr, int epoch);

// --- Produce (api key 0), versions 3 to 13 -----------------------------------
// `records` records of ~100 bytes (12-byte key, ~85-byte JSON value);
// deterministic for a given `seed`.
BatchSpec record_batch_spec(uint64_t seed, int records, Codec codec, int64_t base_timestamp);
// Produce request: `topics` x `partitions` partitions, one batch each. v3-8
// are classic (non-flexible), v9+ flexible; v3-12 name topics, v13 identifies
// them by TopicId.
WireMessage produce_request(int32_t corr, int version, int topics, int partitions, int records, Codec codec,
                            uint64_t seed, int64_t base_timestamp = 1'700'000'000'000);
WireMessage produce_response(int32_t corr, int version, int topics, int partitions, int64_t base_offset);

std::string topic_name(int i);

}  // namespace kwire::bench
