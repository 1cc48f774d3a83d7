// Helpers shared by the tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "wire/message_builder.hpp"

namespace kwire::test {

// Builds wire bytes field by field, as a reader of the spec would.
using Bytes = wire::MessageBuilder;

// Request header v2 (flexible): api key, version, correlation id, classic client id, tags.
inline Bytes request_header_v2(int api, int version, int corr, const std::string& client = "kwire-test") {
  Bytes b;
  b.i16(api).i16(version).i32(corr).str(client).tags0();
  return b;
}

// Reads a field by dotted path from the body ("Groups[0].Members[1].MemberEpoch").
const Node* at(const Frame& f, const ProgramSet& ps, const std::string& path);

// Runs the kwire binary under test with `args`.
struct CommandResult {
  std::string out;
  std::string err;
  int status = -1;  // as from pclose
};
CommandResult kwire_cmd(const std::string& args);
// The standard output of a shell command (tshark, capinfos), stderr dropped.
std::string shell_output(const std::string& cmd);
// The lines of `s`, without their newlines.
std::vector<std::string> lines(const std::string& s);

}  // namespace kwire::test

namespace kwire::test {

// A StreamsGroupHeartbeat v1 request of a steady-state member (no topology).
inline std::vector<uint8_t> heartbeat_request(int corr, const std::string& member, int epoch) {
  Bytes b = request_header_v2(88, 1, corr);
  b.cstr("orders-app").cstr(member).i32(epoch).i32(0)  // GroupId, MemberId, MemberEpoch, EndpointInformationEpoch
      .cnull().cnull().i32(-1)                         // InstanceId, RackId, RebalanceTimeoutMs
      .i8(-1)                                          // Topology: null
      .cnull().cnull().cnull()                         // Active/Standby/WarmupTasks
      .cnull().i8(-1).cnull().cnull().cnull()          // ProcessId, UserEndpoint, ClientTags, TaskOffsets, TaskEndOffsets
      .i8(0).tags0();                                  // ShutdownApplication
  return b.message();
}

// Its v1 response: no error, the member's new epoch, nothing assigned.
inline std::vector<uint8_t> heartbeat_response(int corr, const std::string& member, int epoch, int error = 0) {
  Bytes b;
  b.i32(corr).tags0();
  b.i32(0).i16(error).cnull().cstr(member).i32(epoch).i32(5000)  // Throttle, Error, Message, MemberId, Epoch, Interval
      .i32(30000).i64(10000)                                      // TaskOffsetIntervalMs, AcceptableRecoveryLag
      .cnull().cnull().cnull().cnull()                            // Status, Active, Standby, Warmup
      .i8(1).i32(0).cnull().tags0();                              // TopologyDescriptionRequired, EndpointEpoch, PartitionsByUserEndpoint
  return b.message();
}

// A response message (correlation id first) decoded by `ps`. The frame points
// into `message`, which must outlive it.
inline Frame decoded_response(const ProgramSet& ps, const std::vector<uint8_t>& message, int api, int version) {
  FrameDecoder d(ps);
  Frame f;
  d.decode_response(message, static_cast<int16_t>(api), static_cast<int16_t>(version), f);
  return f;
}

}  // namespace kwire::test
