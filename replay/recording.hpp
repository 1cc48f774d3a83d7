// The client sessions of a capture, as replay needs them: per Kafka
// connection, its requests in order with the recorded responses, timestamps,
// the pipelining depth each request was sent at, and how many responses of the
// whole capture had arrived before it (the causal order replay keeps).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dissector/filter/filter.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire::replay {

constexpr uint64_t kNoResponse = UINT64_MAX;

struct Exchange {
  uint64_t frame = 0;            // packet number of the packet that completed the request
  uint64_t response_frame = 0;   // 0: no response in the capture
  int64_t request_us = 0;        // capture timestamps, microseconds since the epoch
  int64_t response_us = -1;
  int16_t api_key = -1;
  int16_t api_version = -1;
  int32_t correlation_id = 0;
  bool expects_response = true;  // false for Produce with acks=0
  bool malformed = false;        // the recorded request did not decode cleanly
  std::vector<uint8_t> request;  // size prefix included
  std::vector<uint8_t> response; // empty when the capture has none
  uint32_t depth = 1;            // requests of this connection in flight when it was sent, itself included
  uint64_t after = 0;            // responses (capture-wide) completed before it was sent
  uint64_t response_seq = kNoResponse;  // its response's place in that capture-wide order
};

struct RecordedSession {
  uint32_t id = 0;               // 1-based, in order of appearance in the capture
  Endpoint client, broker;
  std::string client_id;         // header.clientId of its first request
  std::vector<Exchange> exchanges;
  std::string skip;              // non-empty: why it cannot be replayed as is (SASL, TLS, controller)
  std::string sasl_mechanism;    // from SaslHandshake, when the session authenticated
  std::string broker_traffic;    // a broker's own connection: its kind (replay/routing.hpp), never sent
  bool midstream = false;        // the capture starts inside it (no SYN, or hunting needed)
  bool tls = false;              // recorded over TLS (read with its keys)
};

struct Recording {
  std::vector<RecordedSession> sessions;
  uint64_t responses = 0;        // size of the capture-wide response order
  uint64_t not_kafka = 0;        // connections that carried something else (TLS, ...)
  std::vector<std::string> notes;   // skipped bytes, damaged file, ...
};

// Reads FILE (pcap/pcapng, "-" for stdin) with kwire's session decoder.
// False with `error` when the file cannot be read at all.
// TLS connections are read decrypted with the keys `capture` names (and the
// file's own secrets blocks).
bool load_recording(const std::string& file, const ProgramSet& ps, const SessionOptions& opts,
                    Recording& out, std::string& error, const CaptureOptions& capture = {});

// A broker endpoint that carries the KRaft quorum's own RPCs (a broker's
// registration and heartbeats, votes, snapshots) is a controller listener:
// every connection to it is a broker's or a controller's, whatever it sends
// (a broker forwards CreateTopics there too). Marks those sessions as
// broker-to-broker "controller" traffic, never sent. Load_recording runs it.
void mark_controller_listeners(Recording& rec, const ProgramSet& ps);

// replay -Y: the exchanges a display filter selects, by their request or by
// their recorded response (matched with its request, so request.* works).
void select_exchanges(const ProgramSet& ps, const filter::Filter& f, const Recording& rec,
                      std::set<const Exchange*>& out);

}  // namespace kwire::replay
