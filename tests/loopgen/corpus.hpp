// The Kafka messages kwire-loopgen exchanges: bodies serialized by Kafka's own
// kafka-clients classes (tests/conformance-corpus), framed with headers built
// here from the spec facts alone (api key, flexible versions). Nothing in this
// directory uses kwire's decoder or encoder: it is the independent side of the
// live tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace loopgen {

using Bytes = std::vector<uint8_t>;

// One api version: its sample bodies and the header versions its messages use.
struct Kind {
  int16_t api_key = 0;
  int16_t api_version = 0;
  std::string name;             // e.g. "Heartbeat"
  bool request_flexible = false;   // request header v2 (else v1)
  bool response_flexible = false;  // response header v1 (else v0), never for ApiVersions
  std::vector<Bytes> requests;
  std::vector<bool> answered;   // per request: expects_response()
  std::vector<Bytes> responses;
  size_t max_body() const;
};

struct Corpus {
  std::vector<Kind> kinds;
  std::map<std::pair<int16_t, int16_t>, size_t> index;  // (api, version) -> kinds[i]
  const Kind* find(int16_t api, int16_t version) const;
};

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether version v lies in a spec range: "none", "N", "N+", "N-M".
bool in_version_range(const std::string& range, int v);

// Reads every NNN-Name-vV-request.jsonl with its -response.jsonl from
// corpus_dir, and each api's flexibleVersions from spec_dir/<Name>Request.json
// and <Name>Response.json. Throws Error on anything inconsistent.
Corpus load_corpus(const std::string& corpus_dir, const std::string& spec_dir);

// A whole request on the wire: int32 size, request header v1 or v2
// (api key, api version, correlation id, int16-length client id, and for v2
// an empty tagged-field section), body.
Bytes frame_request(const Kind& k, int32_t correlation_id, const std::string& client_id, const Bytes& body);

// A whole response: int32 size, response header v0 (correlation id) or v1
// (plus an empty tagged-field section), body.
Bytes frame_response(const Kind& k, int32_t correlation_id, const Bytes& body);

// Whether a broker answers this request: not a Produce with acks=0 (Kafka
// sends nothing back for those, and decoders rely on it).
bool expects_response(const Kind& k, const Bytes& body);

// A request as the server side reads it back (message = the bytes after the
// size prefix). Throws Error when the header does not parse.
struct ParsedRequest {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  size_t body_offset = 0;   // into the message
};
ParsedRequest parse_request(const Corpus& c, const uint8_t* message, size_t size);

}  // namespace loopgen
