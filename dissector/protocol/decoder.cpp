#include "dissector/protocol/decoder.hpp"

#include <algorithm>
#include <string>

#include "dissector/protocol/decoder_run.hpp"
#include "dissector/protocol/records.hpp"
#include "wire/wire.hpp"

namespace kwire {

namespace {

using detail::Run;
using wire::load_be16;
using wire::load_be32;

// `cut`: the capture ended inside the message, so fewer bytes than the size
// prefix says are expected; the decoder reads what is there.
bool check_size(std::span<const uint8_t> msg, Frame& out, bool cut) {
  if (msg.size() < 4) {
    out.fail(0, "message of " + std::to_string(msg.size()) + " bytes has no size prefix");
    return false;
  }
  int32_t size = static_cast<int32_t>(load_be32(msg.data()));
  if (cut && size >= 0 && static_cast<uint64_t>(size) > msg.size() - 4) {
    out.fail(0, "message truncated: size prefix says " + std::to_string(size) + " bytes, the capture has " +
                    std::to_string(msg.size() - 4));
    return true;
  }
  if (size < 0 || static_cast<uint64_t>(size) != msg.size() - 4) {
    out.fail(0, "size prefix " + std::to_string(size) + " does not match the " + std::to_string(msg.size() - 4) +
                    " bytes that follow");
    return false;
  }
  return true;
}

void decode_body(const ProgramSet& ps, Run& run, Frame& out) {
  const FieldDesc& root = ps.field(out.program->root);
  uint32_t body = out.open(out.program->root, WireType::Struct, Frame::kRoot, run.pos());
  out.body = body;
  run.structure(static_cast<uint32_t>(root.sub), body);
  out.close(body, run.pos());
  if (!run.failed() && run.left() > 0)
    run.fail(run.pos(), std::to_string(run.left()) + " bytes left after the end of " +
                            std::string(out.program->spec_name) + " v" + std::to_string(out.api_version));
}

void decode_header(const ProgramSet& ps, Run& run, Frame& out, uint32_t header_desc) {
  uint32_t h = out.open(header_desc, WireType::Struct, Frame::kRoot, run.pos());
  run.structure(static_cast<uint32_t>(ps.field(header_desc).sub), h);
  out.close(h, run.pos());
}

}  // namespace

bool FrameDecoder::peek_request(std::span<const uint8_t> m, RequestId& id) {
  if (m.size() < 12) return false;
  // The same reader session framing recognises requests with; the client id
  // length it also reads is not needed here (nor always present).
  uint8_t head[kRequestHeadBytes] = {};
  std::copy_n(m.begin(), std::min(m.size(), kRequestHeadBytes), head);
  RequestHead h;
  read_request_head(head, h);
  id = {h.api_key, h.api_version, h.correlation_id};
  return true;
}

void FrameDecoder::decode_request(std::span<const uint8_t> msg, Frame& out, bool cut, const ResponseHint* hint) const {
  out.clear();
  out.message = msg;
  out.direction = Direction::Request;
  if (!check_size(msg, out, cut)) return;
  RequestId id;
  if (!peek_request(msg, id)) {
    out.fail(4, "request header needs 8 bytes, " + std::to_string(msg.size() - 4) + " present");
    return;
  }
  out.api_key = id.api_key;
  out.api_version = id.api_version;
  out.correlation_id = id.correlation_id;
  out.program = ps_.find(id.api_key, id.api_version, Direction::Request);
  bool flexible = out.program && out.program->flexible;
  out.header_version = request_header_version(id.api_key, id.api_version, flexible);
  Run run(ps_, out, msg.data(), msg.data() + msg.size(), 4, compiled_);
  decode_header(ps_, run, out, ps_.request_header(out.header_version));
  if (run.failed()) return;
  if (nested_) run.nest(id.api_key, Direction::Request, hint, 0);
  if (!out.program) {
    auto known = ps_.versions(id.api_key, Direction::Request);
    if (known.empty())
      out.fail(4, "unknown api key " + std::to_string(id.api_key));
    else
      out.fail(6, "unknown version " + std::to_string(id.api_version) + " of " + std::string(known.front()->api_name) +
                      " (known: " + std::to_string(known.front()->version) + "-" +
                      std::to_string(known.back()->version) + ")");
    return;
  }
  decode_body(ps_, run, out);
}

void FrameDecoder::decode_response(std::span<const uint8_t> msg, int16_t api_key, int16_t api_version,
                                   Frame& out, bool cut, const ResponseHint& hint) const {
  out.clear();
  out.message = msg;
  out.direction = Direction::Response;
  out.api_key = api_key;
  out.api_version = api_version;
  if (!check_size(msg, out, cut)) return;
  if (msg.size() < 8) {
    out.fail(4, "response header needs 4 bytes, " + std::to_string(msg.size() - 4) + " present");
    return;
  }
  out.correlation_id = static_cast<int32_t>(load_be32(msg.data() + 4));
  out.program = ps_.find(api_key, api_version, Direction::Response);
  bool flexible = out.program && out.program->flexible;
  out.header_version = response_header_version(api_key, flexible);
  Run run(ps_, out, msg.data(), msg.data() + msg.size(), 4, compiled_);
  decode_header(ps_, run, out, ps_.response_header(out.header_version));
  if (run.failed()) return;
  if (nested_) run.nest(api_key, Direction::Response, &hint, 0);
  if (!out.program) {
    out.fail(run.pos(), "no spec for " + std::to_string(api_key) + " v" + std::to_string(api_version) + " response");
    return;
  }
  decode_body(ps_, run, out);
  // A broker that does not support the requested ApiVersions version answers
  // UNSUPPORTED_VERSION in the v0 layout; like Kafka's client, read it that
  // way only when the requested layout does not fit.
  if (!cut && !out.ok() && api_key == 18 && api_version > 0 && msg.size() >= 10 &&
      static_cast<int16_t>(load_be16(msg.data() + 8)) == 35) {
    decode_response(msg, api_key, 0, out);
  }
}

ResponseHint response_hint(const ProgramSet& ps, const Frame& request) {
  ResponseHint h;
  if (request.direction != Direction::Request || !request.body) return h;
  if (request.api_key == 11 || request.api_key == 14) {
    const Node* type = find_field(request, ps, request.body, "ProtocolType");
    h.consumer_protocol = type && !type->is_null() && type->str() == "consumer";
  } else if (request.api_key == 58) {
    const Node* data = find_field(request, ps, request.body, "RequestData");
    if (data && !data->is_null() && data->aux >= 4) {
      h.inner_api_key = static_cast<int16_t>(load_be16(data->v.p));
      h.inner_api_version = static_cast<int16_t>(load_be16(data->v.p + 2));
    }
  }
  return h;
}

ResponseHint GroupProtocols::learn(const ProgramSet& ps, const Frame& f) {
  // Only a JoinGroup teaches and only a SyncGroup before v5 asks: the name
  // lookups stay off every other request.
  const bool join = f.api_key == 11;
  const bool old_sync = f.api_key == 14 && f.api_version < 5 && f.program;
  if ((!join && !old_sync) || !f.body) return response_hint(ps, f);
  const Node* group = find_field(f, ps, f.body, "GroupId");
  const bool named = group && !group->is_null();
  if (old_sync) {
    ResponseHint h;
    const auto it = named ? consumer_.find(std::string(group->str())) : consumer_.end();
    h.consumer_protocol = it != consumer_.end() && it->second;
    return h;
  }
  const Node* type = find_field(f, ps, f.body, "ProtocolType");
  if (named && type && !type->is_null()) {
    if (consumer_.size() >= kMaxGroups) consumer_.clear();
    consumer_[std::string(group->str())] = type->str() == "consumer";
  }
  return response_hint(ps, f);
}

}  // namespace kwire
