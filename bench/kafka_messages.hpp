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
#include "wire/message_builder.hpp"

namespace kwire::bench {

// Appends Kafka wire encodings; message() prepends the size.
using Msg = wire::MessageBuilder;

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

// --- Metadata (api key 3), versions 0 to 13 (flexible from 9) ----------------
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

// --- Consumers of the classic protocol: Fetch v11 and Heartbeat v3 -----------
// The newest non-flexible versions, which tshark 4.0's kafka dissector reads
// in full. A fetch of `topics` x `partitions` partitions from `offset`; the
// response carries one batch of `records` records per partition.
WireMessage fetch_request(int32_t corr, int topics, int partitions, int64_t offset);
WireMessage fetch_response(int32_t corr, int topics, int partitions, int records, Codec codec, uint64_t seed,
                           int64_t offset, int64_t base_timestamp);
WireMessage heartbeat_request(int32_t corr, int consumer, int generation);
WireMessage heartbeat_response(int32_t corr);

// --- Small messages of consumer groups, any version --------------------------
// Heartbeat v0-4 (flexible from 4) of group "orders-consumers".
WireMessage heartbeat_request(int32_t corr, int version, int consumer, int generation);
WireMessage heartbeat_response(int32_t corr, int version, int error);
// OffsetCommit v2-10 (flexible from 8; v10 names topics by id): `topics` x
// `partitions` committed offsets near `offset`.
WireMessage offset_commit_request(int32_t corr, int version, int consumer, int generation, int topics, int partitions,
                                  int64_t offset);
WireMessage offset_commit_response(int32_t corr, int version, int topics, int partitions);
// ListOffsets v1-11 (flexible from 6): earliest/latest of `topics` x `partitions`.
WireMessage list_offsets_request(int32_t corr, int version, int consumer, int topics, int partitions);
WireMessage list_offsets_response(int32_t corr, int version, int topics, int partitions);

}  // namespace kwire::bench
