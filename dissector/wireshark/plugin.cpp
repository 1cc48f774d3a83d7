// The kwire Wireshark plugin: a thin adapter from kwire's decoded Frames to
// proto_tree items. Wireshark reassembles TCP and cuts Kafka's size-prefixed
// PDUs (tcp_dissect_pdus); kwire's FrameDecoder decodes each one, exactly as
// `kwire decode` does, and every Frame node becomes an item of the field
// generated for its spec path (fields.gen.cpp, written by kwire-wsgen).
//
// Wireshark's exceptions are longjmp()s: nothing below keeps an object with a
// destructor alive across a call into Wireshark that can throw, except the
// long-lived globals and the reused Frame. kwire's decoder runs before the
// first such call.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/packet.h>
#include <epan/prefs.h>
#include <epan/proto.h>
#include <epan/proto_data.h>
#include <epan/srt_table.h>
#include <epan/stats_tree.h>
#include <epan/tap.h>
#include <wsutil/report_message.h>
#include <ws_version.h>

extern "C" {
#include <epan/dissectors/packet-tcp.h>
}

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/overlays.hpp"
#include "dissector/protocol/session.hpp"
#include "dissector/wireshark/field_names.hpp"
#include "dissector/wireshark/generated_fields.hpp"
#include "dissector/wireshark/ws_compat.hpp"
#include "wire/wire.hpp"

#ifndef KWIRE_PLUGIN_VERSION
#define KWIRE_PLUGIN_VERSION "0.0.0"
#endif

extern "C" {
WS_DLL_PUBLIC_DEF extern const char plugin_version[];
WS_DLL_PUBLIC_DEF extern const int plugin_want_major;
WS_DLL_PUBLIC_DEF extern const int plugin_want_minor;
WS_DLL_PUBLIC void plugin_register(void);
#if KWIRE_WS_HAS_PLUGIN_DESCRIBE
WS_DLL_PUBLIC uint32_t plugin_describe(void);
#endif
}
const char plugin_version[] = KWIRE_PLUGIN_VERSION;
const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
const int plugin_want_minor = WIRESHARK_VERSION_MINOR;

namespace kwire::wireshark {
namespace {

constexpr uint32_t kMaxMessage = 256u << 20;  // as `kwire decode`

int proto_kwire = -1;
int kwire_tap = -1;
dissector_handle_t kwire_handle;
dissector_handle_t tls_handle;

// Generic fields.
int hf_length = -1, hf_api_key = -1, hf_api_version = -1, hf_correlation_id = -1, hf_direction = -1,
    hf_api_name = -1, hf_error_code = -1, hf_request_in = -1, hf_response_in = -1, hf_time = -1,
    hf_null = -1, hf_redacted = -1, hf_unknown_tag = -1, hf_unknown_tag_number = -1, hf_overlay = -1, hf_overlay_field = -1,
    hf_not_kafka = -1;
int ett_kwire = -1, ett_array = -1, ett_generic = -1;

expert_field ei_malformed = EI_INIT;
expert_field ei_error_code = EI_INIT;
expert_field ei_unmatched = EI_INIT;
expert_field ei_not_kafka = EI_INIT;
expert_field ei_overlay = EI_INIT;

// Generated fields: ids and ett per kGenFields entry, looked up by name.
std::vector<int> gen_hf;
std::vector<int> gen_ett;
std::unordered_map<std::string, uint32_t> gen_by_abbrev;   // -> index into kGenFields
std::vector<int32_t> builtin_field;                        // BuiltinDesc -> kGenFields index or -1

// Preferences.
ws::pref_bool pref_desegment = true;
ws::pref_bool pref_heuristic = true;
const char* pref_spec_dir = "";
const char* pref_overlay = "";

// The programs in use: the release, plus an overlay from the preferences.
std::unique_ptr<ProgramSet> programs;
std::unordered_map<uint64_t, int32_t> path_cache;   // (parent field + 1) << 32 | desc -> field, -1 unknown

const ProgramSet& ps() { return programs ? *programs : ProgramSet::release(); }

// What the first pass learnt about one PDU, kept for the later passes (the
// GUI dissects packets again, in any order).
struct PduInfo {
  bool request = true;
  bool unmatched = false;       // a response whose request is not in the capture
  bool not_kafka = false;       // SASL token, TLS, or after lost sync
  const char* note = nullptr;
  int16_t api_key = -1, api_version = -1;   // of the request, for a response
  uint32_t peer_frame = 0;      // the request of a response, the response of a request
  nstime_t request_ts{};
  // A request's: what its response's nested payloads need; a SyncGroup's
  // before v5 also its own (its group's protocol type, from a JoinGroup).
  // A response's: its request's.
  ResponseHint hint;
  PduInfo* next = nullptr;      // the next PDU of the same frame
};

struct Pending {
  int32_t corr;
  int16_t api_key, api_version;
  PduInfo* info;
  uint32_t frame;
  nstime_t ts;
};

// What kwire's tap carries for each PDU to Wireshark's statistics (the SRT
// table and the stats tree): plain values in pinfo->pool, which lives until
// the taps have run.
struct TapPdu {
  bool request = true;
  bool matched = false;        // a response whose request is in the capture
  bool unmatched = false;      // a response whose request is not
  bool malformed = false;
  const char* not_kafka = nullptr;   // why, for a PDU that is not Kafka
  int16_t api_key = -1, api_version = -1;
  nstime_t request_ts{};       // a matched response's request
  const char* client_id = nullptr;   // a request's, null when null on the wire
  // The error codes of the message (not of payloads nested in bytes
  // fields), by where they sit: the body's own, a partition's (inside an
  // array whose spec name has "Partition"), and any other entry's (topic,
  // group, member, resource...).
  enum Level : uint8_t { kTop, kPartition, kEntry, kLevels };
  const int16_t* errors[kLevels] = {};
  uint32_t error_count[kLevels] = {};
};

// Per TCP connection (conversation data).
struct Connection {
  address server_addr{};
  uint32_t server_port = 0;
  std::deque<Pending> pending;
  bool dead[2] = {false, false};      // [request side, response side]
  bool sasl_raw = false;              // raw SASL tokens follow a SaslHandshake v0
  const char* dead_note = nullptr;
};

// Objects that live as long as the capture file; freed by the cleanup routine.
std::deque<PduInfo> pdu_infos;
std::vector<std::unique_ptr<Connection>> connections;
// Endpoints seen answering Kafka requests, on plain TCP ([0]) and inside
// TLS ([1]) apart: a broker port learnt from decrypted TLS is a TLS port, and
// its next connections belong to Wireshark's TLS dissector first.
struct Endpoint { address addr; uint32_t port; };
std::vector<Endpoint> known_brokers[2];
// Which groups are consumer groups, learnt on the first pass in packet
// order, as `kwire decode` learns it.
GroupProtocols group_protocols;

Frame& scratch_frame() {
  static Frame f;
  return f;
}

void reset_capture_state() {
  pdu_infos.clear();
  connections.clear();
  for (auto& k : known_brokers) k.clear();   // addresses live in wmem_file_scope, which goes too
  group_protocols.clear();
}

// Whether this call of kwire is on data that Wireshark's TLS dissector
// decrypted.
bool inside_tls(packet_info* pinfo) { return proto_is_frame_protocol(pinfo->layers, "tls"); }

bool is_known_broker(packet_info* pinfo, const address* a, uint32_t port) {
  for (const auto& e : known_brokers[inside_tls(pinfo) ? 1 : 0])
    if (e.port == port && addresses_equal(&e.addr, a)) return true;
  return false;
}

// ---- Field lookup ---------------------------------------------------------

// The generated field of node `desc` under the field `parent` (-1 for a root).
// The version and trailing bytes of a data struct inside a bytes field are
// named below that field, like the struct's own fields.
int32_t field_of(int32_t parent, uint32_t desc) {
  if (desc < kBuiltinDescCount && desc != kDescNestedVersion && desc != kDescNestedTrailing)
    return builtin_field[desc];
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(parent + 1)) << 32) | desc;
  auto it = path_cache.find(key);
  if (it != path_cache.end()) return it->second;
  const FieldDesc& d = ps().field(desc);
  std::string abbrev = parent < 0 ? root_abbrev(d.name) : child_abbrev(kGenFields[parent].abbrev, d.name);
  auto g = gen_by_abbrev.find(abbrev);
  int32_t r = g == gen_by_abbrev.end() ? -1 : static_cast<int32_t>(g->second);
  path_cache.emplace(key, r);
  return r;
}

// ---- Values ---------------------------------------------------------------

// Invalid UTF-8 becomes U+FFFD, byte by byte, as in kwire's JSON output, and
// NUL becomes U+2400;
// overlong forms, surrogates and code points past U+10FFFF are invalid too
// (Wireshark's string fields must hold valid UTF-8).
const char* utf8_string(wmem_allocator_t* pool, std::string_view s) {
  char* out = static_cast<char*>(wmem_alloc(pool, s.size() * 3 + 1));
  char* o = out;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    uint8_t c = *p;
    if (c == 0) {
      // Wireshark's strings end at a NUL: show it as U+2400 SYMBOL FOR NULL.
      std::memcpy(o, "\xe2\x90\x80", 3);
      o += 3;
      ++p;
      continue;
    }
    if (c < 0x80) { *o++ = static_cast<char>(c); ++p; continue; }
    int len = c >= 0xc2 && c <= 0xdf ? 2 : (c & 0xf0) == 0xe0 ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && end - p >= len;
    for (int k = 1; ok && k < len; ++k) ok = (p[k] & 0xc0) == 0x80;
    if (ok && c == 0xe0) ok = p[1] >= 0xa0;   // overlong
    if (ok && c == 0xed) ok = p[1] <= 0x9f;   // surrogates
    if (ok && c == 0xf0) ok = p[1] >= 0x90;   // overlong
    if (ok && c == 0xf4) ok = p[1] <= 0x8f;   // past U+10FFFF
    if (ok) { std::memcpy(o, p, static_cast<size_t>(len)); o += len; p += len; }
    else { std::memcpy(o, "\xef\xbf\xbd", 3); o += 3; ++p; }
  }
  *o = 0;
  return out;
}

struct Range { int offset, length; };

struct TreeBuilder {
  packet_info* pinfo;
  tvbuff_t* tvb;
  const Frame& f;
  const ProgramSet& ps;
  std::string_view api;
  int error_fields = 0;   // error code fields in the message
  int errors = 0;         // ... that are not 0
  int inner = 0;          // depth in payloads nested in bytes fields

  Range range_of(const Node& n, Range outer) const {
    if (n.flags & kInner) return outer;   // inside decompressed records: point at the records field
    auto len = static_cast<int>(tvb_reported_length(tvb));
    if (n.offset > static_cast<uint32_t>(len)) return outer;
    return {static_cast<int>(n.offset), static_cast<int>(std::min<uint32_t>(n.length, static_cast<uint32_t>(len) - n.offset))};
  }

  void mark_null(proto_item* it) {
    proto_tree* t = proto_item_add_subtree(it, ett_generic);
    proto_item_set_generated(proto_tree_add_item(t, hf_null, tvb, 0, 0, ENC_NA));
  }

  proto_item* add_value(proto_tree* tree, int32_t g, const Node& n, Range r) {
    const GenField& gf = kGenFields[g];
    int hf = gen_hf[static_cast<size_t>(g)];
    const FieldDesc& d = ps.field(n.desc);
    bool null = n.is_null();
    if (!null && (d.flags & kSensitive)) {
      proto_item* it = nullptr;
      if (gf.type == GenType::String) it = proto_tree_add_string(tree, hf, tvb, r.offset, r.length, "");
      else it = proto_tree_add_bytes_with_length(tree, hf, tvb, r.offset, r.length, nullptr, 0);
      proto_item_set_text(it, "%s: <redacted %u bytes>", gf.name, n.aux);
      proto_tree* t = proto_item_add_subtree(it, ett_generic);
      proto_item_set_generated(proto_tree_add_item(t, hf_redacted, tvb, 0, 0, ENC_NA));
      return it;
    }
    proto_item* it = nullptr;
    switch (gf.type) {
      case GenType::Int8: case GenType::Int16: case GenType::Int32:
        it = proto_tree_add_int(tree, hf, tvb, r.offset, r.length, static_cast<gint32>(n.v.i));
        break;
      case GenType::Int64:
        it = proto_tree_add_int64(tree, hf, tvb, r.offset, r.length, n.v.i);
        break;
      case GenType::Uint16: case GenType::Uint32: case GenType::Uint32Hex:
        it = proto_tree_add_uint(tree, hf, tvb, r.offset, r.length, static_cast<guint32>(n.v.u));
        break;
      case GenType::Double:
        it = proto_tree_add_double(tree, hf, tvb, r.offset, r.length, n.v.f);
        break;
      case GenType::Bool:
        it = proto_tree_add_boolean(tree, hf, tvb, r.offset, r.length, n.v.i ? 1 : 0);
        break;
      case GenType::String:
        if (null) {
          it = proto_tree_add_string(tree, hf, tvb, r.offset, r.length, "");
        } else if (n.type == WireType::Uuid) {
          char b[wire::kUuidTextSize + 1];
          *wire::uuid_to(b, n.v.p) = 0;
          it = proto_tree_add_string(tree, hf, tvb, r.offset, r.length, b);
        } else {
          it = proto_tree_add_string(tree, hf, tvb, r.offset, r.length, utf8_string(pinfo->pool, n.str()));
        }
        break;
      case GenType::Bytes:
        if (null) it = proto_tree_add_bytes_with_length(tree, hf, tvb, r.offset, r.length, nullptr, 0);
        else it = proto_tree_add_bytes_with_length(tree, hf, tvb, r.offset, r.length, n.v.p, static_cast<gint>(n.aux));
        break;
      case GenType::None:
        it = proto_tree_add_item(tree, hf, tvb, r.offset, r.length, ENC_NA);
        break;
    }
    if (null) {
      proto_item_set_text(it, "%s: null", gf.name);
      mark_null(it);
    }
    // A nested payload's error codes are another message's (as in `kwire
    // decode --errors` and the summary line).
    if (gf.error_code && !null && inner == 0) {
      ++error_fields;
      if (n.v.i != 0) {
        ++errors;
        proto_item* e = proto_tree_add_int(tree, hf_error_code, tvb, r.offset, r.length, static_cast<gint32>(n.v.i));
        proto_item_set_generated(e);
        proto_item_set_hidden(e);
        auto name = error_name(n.v.i);
        if (name.empty()) name = "unknown error";
        expert_add_info_format(pinfo, it, &ei_error_code, "%s: %.*s (%d)", gf.name, static_cast<int>(name.size()),
                               name.data(), static_cast<int>(n.v.i));
      }
    }
    return it;
  }

  // A field of a message version that no generated field names (an overlay
  // loaded at run time): shown with its spec name, filterable as text.
  proto_item* add_unregistered(proto_tree* tree, const Node& n, Range r) {
    const FieldDesc& d = ps.field(n.desc);
    const char* text;
    {
      TextBuffer b;   // gone before the Wireshark calls below, which may throw
      if (n.is_null()) b += "null";
      else if (n.type == WireType::String) b += n.str();
      else if (is_integer(n.type)) append_int(b, n.v.i);
      else if (n.type == WireType::Bool) b += n.v.i ? "true" : "false";
      else if (n.type == WireType::Uuid) b.commit(wire::uuid_to(b.room(wire::kUuidTextSize), n.v.p));
      else { append_int(b, n.aux); b += " bytes"; }
      text = utf8_string(pinfo->pool, b.view());
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", static_cast<int>(d.name.size()), d.name.data());
    proto_item* it = proto_tree_add_string_format(tree, hf_overlay_field, tvb, r.offset, r.length, text, "%s: %s",
                                                  name, text);
    return it;
  }

  void node(proto_tree* tree, uint32_t i, int32_t parent, Range outer, uint32_t element_index) {
    const Node& n = f.nodes[i];
    Range r = range_of(n, outer);
    const FieldDesc& d = ps.field(n.desc);
    if (n.desc == kDescUnknownTag) {
      proto_item* it = proto_tree_add_bytes_with_length(tree, hf_unknown_tag, tvb, r.offset, r.length, n.v.p,
                                                        static_cast<gint>(n.aux));
      proto_item_set_text(it, "UnknownTaggedField[tag %u]: %u bytes", n.tag, n.aux);
      proto_tree* sub = proto_item_add_subtree(it, ett_generic);
      proto_item_set_generated(proto_tree_add_uint(sub, hf_unknown_tag_number, tvb, r.offset, 0, n.tag));
      return;
    }
    if (n.type == WireType::Array && !(n.flags & kElement)) {
      // The array itself is a subtree; its elements are the field's values.
      proto_tree* sub = nullptr;
      char label[160];
      if (n.is_null())
        snprintf(label, sizeof label, "%.*s: null", static_cast<int>(d.name.size()), d.name.data());
      else
        snprintf(label, sizeof label, "%.*s (%u)", static_cast<int>(d.name.size()), d.name.data(), n.aux);
      sub = proto_tree_add_subtree(tree, tvb, r.offset, r.length, ett_array, nullptr, label);
      uint32_t k = 0;
      for (uint32_t c : Children(f, i)) node(sub, c, parent, r, k++);
      return;
    }
    int32_t g = field_of(parent, n.desc);
    if (g < 0) {
      proto_item* it = add_unregistered(tree, n, r);
      if (n.type == WireType::Struct || n.type == WireType::Records) {
        proto_tree* sub = proto_item_add_subtree(it, ett_generic);
        for (uint32_t c : Children(f, i)) node(sub, c, -1, r, 0);
      }
      return;
    }
    proto_item* it = add_value(tree, g, n, r);
    if (n.flags & kElement && (n.type == WireType::Struct)) proto_item_set_text(it, "[%u]", element_index);
    if (n.type == WireType::Records && !n.is_null()) proto_item_append_text(it, ": %u bytes", n.aux);
    if ((n.type == WireType::Struct || n.type == WireType::Records) && !n.is_null() && n.end > i + 1) {
      proto_tree* sub = proto_item_add_subtree(it, gen_ett[static_cast<size_t>(g)]);
      uint32_t k = 0;
      for (uint32_t c : Children(f, i)) node(sub, c, g, r, k++);
    }
    if ((n.flags & (kNested | kNestedFailed)) == kNested) payload(it, i, g, r);
  }

  // A payload decoded inside bytes field `i` (field `g`), below its item: a
  // data struct's version, fields and trailing bytes named below the bytes
  // field; an enveloped message's header and body as a top-level message's.
  void payload(proto_item* it, uint32_t i, int32_t g, Range r) {
    proto_tree* sub = proto_item_add_subtree(it, gen_ett[static_cast<size_t>(g)]);
    const bool message = f.nodes[i].flags & kNestedMessage;
    ++inner;
    for (uint32_t c : Children(f, i)) {
      if (message) {
        node(sub, c, -1, r, 0);
      } else {
        uint32_t k = 0;
        for (uint32_t x : Children(f, c)) node(sub, x, g, r, k++);
      }
    }
    --inner;
  }
};

// ---- Dissection -------------------------------------------------------------

Connection* connection_of(packet_info* pinfo) {
  conversation_t* conv = find_or_create_conversation(pinfo);
  return static_cast<Connection*>(conversation_get_proto_data(conv, proto_kwire));
}

Connection* new_connection(packet_info* pinfo, bool dst_is_server) {
  conversation_t* conv = find_or_create_conversation(pinfo);
  connections.push_back(std::make_unique<Connection>());
  Connection* c = connections.back().get();
  copy_address_wmem(wmem_file_scope(), &c->server_addr, dst_is_server ? &pinfo->dst : &pinfo->src);
  c->server_port = dst_is_server ? pinfo->destport : pinfo->srcport;
  conversation_add_proto_data(conv, proto_kwire, c);
  // Inside TLS the TCP conversation stays TLS's: its dissector decrypts and
  // hands kwire the application data.
  if (!inside_tls(pinfo)) conversation_set_dissector(conv, kwire_handle);
  return c;
}

bool from_client(const Connection& c, packet_info* pinfo) {
  return pinfo->destport == c.server_port && addresses_equal(&pinfo->dst, &c.server_addr);
}

guint pdu_length(packet_info*, tvbuff_t* tvb, int offset, void*) {
  auto size = static_cast<int32_t>(tvb_get_ntohl(tvb, offset));
  if (size < 0 || static_cast<uint32_t>(size) > kMaxMessage) {
    // Not a Kafka size prefix: the rest of the segment is one malformed PDU.
    return static_cast<guint>(tvb_reported_length_remaining(tvb, offset));
  }
  return static_cast<guint>(size) + 4;
}

// The PDU info of this PDU: made on the first pass, looked up on later ones.
PduInfo* pdu_info(packet_info* pinfo, bool first_pass) {
  auto idx = GPOINTER_TO_UINT(p_get_proto_data(pinfo->pool, pinfo, proto_kwire, 1));
  p_add_proto_data(pinfo->pool, pinfo, proto_kwire, 1, GUINT_TO_POINTER(idx + 1));
  auto* head = static_cast<PduInfo*>(p_get_proto_data(wmem_file_scope(), pinfo, proto_kwire, 0));
  PduInfo* p = head;
  PduInfo* last = nullptr;
  for (guint k = 0; p && k < idx; ++k) { last = p; p = p->next; }
  if (p || !first_pass) return p;
  p = &pdu_infos.emplace_back();
  if (last) last->next = p;
  else p_add_proto_data(wmem_file_scope(), pinfo, proto_kwire, 0, p);
  return p;
}

// First pass: what this PDU is, from the connection's state.
void classify(Connection& c, packet_info* pinfo, tvbuff_t* tvb, PduInfo& info, bool request) {
  info.request = request;
  int side = request ? 0 : 1;
  auto len = tvb_reported_length(tvb);
  int32_t size = len >= 4 ? static_cast<int32_t>(tvb_get_ntohl(tvb, 0)) : 0;
  if (c.dead[side]) {
    info.not_kafka = true;
    info.note = c.dead_note ? c.dead_note : "the rest of this direction is not decoded";
    return;
  }
  if (size < 0 || static_cast<uint32_t>(size) > kMaxMessage) {
    c.dead[side] = true;   // reported as malformed by the caller, like kwire decode
    return;
  }
  if (c.sasl_raw) {
    info.not_kafka = true;
    info.note = "SASL token after SaslHandshake v0";
    return;
  }
  if (request) {
    if (len >= 12) {
      FrameDecoder::RequestId id{};
      auto data = static_cast<const uint8_t*>(tvb_get_ptr(tvb, 0, static_cast<gint>(std::min<guint>(len, 12))));
      if (FrameDecoder::peek_request({data, 12}, id)) {
        if (c.pending.size() >= 4096) c.pending.pop_front();   // acks=0 produce is never answered
        c.pending.push_back({id.correlation_id, id.api_key, id.api_version, &info, pinfo->num, pinfo->abs_ts});
      }
    }
    return;
  }
  int32_t corr = len >= 8 ? static_cast<int32_t>(tvb_get_ntohl(tvb, 4)) : 0;
  auto it = std::find_if(c.pending.begin(), c.pending.end(), [&](const Pending& p) { return p.corr == corr; });
  if (it == c.pending.end()) {
    info.unmatched = true;
    return;
  }
  info.api_key = it->api_key;
  info.api_version = it->api_version;
  info.peer_frame = it->frame;
  info.request_ts = it->ts;
  info.hint = it->info->hint;
  it->info->peer_frame = pinfo->num;
  // Responses come in request order: anything older was never answered.
  c.pending.erase(c.pending.begin(), it + 1);
}

// ---- Statistics ---------------------------------------------------------------

// Where an error code node sits (TapPdu::Level): a child of the body, inside
// a partition's entry, or inside another entry.
TapPdu::Level error_level(const Frame& f, const ProgramSet& programs_now, const Node& n) {
  if (n.parent == f.body) return TapPdu::kTop;
  for (uint32_t i = n.parent; i != f.body && i < f.nodes.size(); i = f.nodes[i].parent) {
    const Node& up = f.nodes[i];
    if (up.type == WireType::Array && !(up.flags & kElement) &&
        programs_now.field(up.desc).name.find("Partition") != std::string_view::npos)
      return TapPdu::kPartition;
    if (up.parent == i) break;
  }
  return TapPdu::kEntry;
}

// The message's error code nodes, in wire order; not those of payloads
// nested in bytes fields or of record batches (`kwire decode --errors`'s).
template <class Visit>
void for_each_error_code(const Frame& f, const ProgramSet& programs_now, Visit&& visit) {
  if (!f.program || !f.body || f.body >= f.nodes.size()) return;
  for (uint32_t i = f.body + 1; i < f.nodes[f.body].end && i < f.nodes.size();) {
    const Node& n = f.nodes[i];
    if (n.type == WireType::Records || (n.flags & kNested)) { i = std::max(n.end, i + 1); continue; }
    if (n.type == WireType::Int16 && !(n.flags & kElement) && !n.is_null() &&
        (programs_now.op(n.desc).flags & kErrorCode))
      visit(error_level(f, programs_now, n), static_cast<int16_t>(n.v.i));
    ++i;
  }
}

// The tap record of a decoded PDU, in pinfo->pool.
TapPdu* tap_record(packet_info* pinfo, const Frame& f, const ProgramSet& programs_now, const PduInfo& info) {
  auto* t = wmem_new0(pinfo->pool, TapPdu);
  t->request = info.request;
  t->not_kafka = info.not_kafka ? (info.note ? info.note : "not Kafka") : nullptr;
  t->unmatched = !info.request && info.unmatched;
  t->matched = !info.request && !info.unmatched && !info.not_kafka && info.peer_frame != 0;
  t->malformed = !info.not_kafka && !f.errors.empty();
  t->api_key = info.request ? f.api_key : info.api_key;
  t->api_version = info.request ? f.api_version : info.api_version;
  t->request_ts = info.request_ts;
  if (info.request && !info.not_kafka && !f.nodes.empty()) {
    const Node* id = find_field(f, programs_now, 0, "ClientId");
    if (id && !id->is_null()) t->client_id = utf8_string(pinfo->pool, id->str());
  }
  if (info.not_kafka) return t;
  uint32_t count[TapPdu::kLevels] = {};
  for_each_error_code(f, programs_now, [&](TapPdu::Level l, int16_t) { ++count[l]; });
  int16_t* out[TapPdu::kLevels];
  for (int l = 0; l < TapPdu::kLevels; ++l) {
    out[l] = count[l] ? static_cast<int16_t*>(wmem_alloc(pinfo->pool, count[l] * sizeof(int16_t))) : nullptr;
    t->errors[l] = out[l];
  }
  for_each_error_code(f, programs_now, [&](TapPdu::Level l, int16_t code) { out[l][t->error_count[l]++] = code; });
  return t;
}

// The name of an API key as the stats show it: Kafka's, or "api N" in `buf`.
const char* api_label(int16_t api_key, char (&buf)[24]) {
  for (const GenValue* v = kGenApiNames; v && v->name; ++v)
    if (v->value == api_key) return v->name;
  snprintf(buf, sizeof buf, "api %d", api_key);
  return buf;
}

// Statistics > Service Response Time > kwire (tshark -z kwire,srt): the time
// from a request to its response, per API (rows indexed by api key) and per
// API and version (a row for each version up to the newest the specs know,
// numbered in api key and version order). Rows without exchanges are not
// shown.
constexpr int kSrtVersions = 64;
std::vector<int> srt_version_row;   // api_key * kSrtVersions + version -> row, or -1

void srt_init(struct register_srt*, GArray* srt_array) {
  int apis = 0;
  for (const GenValue* v = kGenApiNames; v && v->name; ++v) apis = std::max(apis, static_cast<int>(v->value) + 1);
  srt_version_row.assign(static_cast<size_t>(apis) * kSrtVersions, -1);
  int rows = 0;
  for (int k = 0; k < apis; ++k) {
    auto versions = ps().versions(static_cast<int16_t>(k), Direction::Request);
    int newest = versions.empty() ? -1 : versions.back()->version;
    for (int v = 0; v <= newest && v < kSrtVersions; ++v) srt_version_row[static_cast<size_t>(k * kSrtVersions + v)] = rows++;
  }
  srt_stat_table* by_api =
      init_srt_table("Kafka requests by API", "By API", srt_array, apis, "API", "kwire.api_key", nullptr);
  srt_stat_table* by_version = init_srt_table("Kafka requests by API and version", "By API and version", srt_array,
                                              std::max(rows, 1), "API and version", nullptr, nullptr);
  char name[96];
  for (int k = 0; k < apis; ++k) {
    char buf[24];
    const char* api = api_label(static_cast<int16_t>(k), buf);
    init_srt_table_row(by_api, k, api);
    for (int v = 0; v < kSrtVersions; ++v) {
      int row = srt_version_row[static_cast<size_t>(k * kSrtVersions + v)];
      if (row < 0) continue;
      snprintf(name, sizeof name, "%s v%d", api, v);
      init_srt_table_row(by_version, row, name);
    }
  }
}

tap_packet_status srt_packet(void* pss, packet_info* pinfo, epan_dissect_t*, const void* prv, tap_flags_t) {
  const auto* t = static_cast<const TapPdu*>(prv);
  auto* data = static_cast<srt_data_t*>(pss);
  if (!t || !t->matched || t->api_key < 0) return TAP_PACKET_DONT_REDRAW;
  auto* by_api = g_array_index(data->srt_array, srt_stat_table*, 0);
  auto* by_version = g_array_index(data->srt_array, srt_stat_table*, 1);
  if (t->api_key >= by_api->num_procs) return TAP_PACKET_DONT_REDRAW;
  add_srt_table_data(by_api, t->api_key, &t->request_ts, pinfo);
  size_t at = static_cast<size_t>(t->api_key) * kSrtVersions + static_cast<size_t>(t->api_version);
  if (t->api_version >= 0 && t->api_version < kSrtVersions && srt_version_row[at] >= 0)
    add_srt_table_data(by_version, srt_version_row[at], &t->request_ts, pinfo);
  return TAP_PACKET_REDRAW;
}

// Statistics > Kafka (tshark -z kwire,tree): messages by API and version,
// error codes by level and name, client ids, and what was not decoded.
// The top nodes, in this order (StNode indexes kStNames and st_node).
enum StNode { kReq, kResp, kUnm, kErr0, kErr1, kErr2, kClients, kMalformed, kNotKafka, kStNodes };
const char* const kStNames[kStNodes] = {
    "Requests by API and version", "Responses by API and version", "Responses whose request is not in the capture",
    "Error codes (top level), by API", "Error codes (per partition), by API",
    "Error codes (per topic, group or other entry), by API", "Requests by client id and API",
    "Malformed messages by API", "Not Kafka segments, by reason"};
static_assert(kErr2 - kErr0 + 1 == TapPdu::kLevels, "an error code node per TapPdu level");
int st_node[kStNodes];

void stats_tree_init(stats_tree* st) {
  for (int i = 0; i < kStNodes; ++i) st_node[i] = stats_tree_create_node(st, kStNames[i], 0, STAT_DT_INT, TRUE);
}

tap_packet_status stats_tree_packet(stats_tree* st, packet_info*, epan_dissect_t*, const void* prv, tap_flags_t) {
  const auto* t = static_cast<const TapPdu*>(prv);
  if (!t) return TAP_PACKET_DONT_REDRAW;
  if (t->not_kafka) {
    tick_stat_node(st, kStNames[kNotKafka], 0, TRUE);
    tick_stat_node(st, t->not_kafka, st_node[kNotKafka], FALSE);
    return TAP_PACKET_REDRAW;
  }
  if (t->unmatched) {
    tick_stat_node(st, kStNames[kUnm], 0, FALSE);
    return TAP_PACKET_REDRAW;
  }
  if (t->api_key < 0) {   // a request too short or broken to name
    tick_stat_node(st, kStNames[kMalformed], 0, TRUE);
    tick_stat_node(st, "(no api key)", st_node[kMalformed], FALSE);
    return TAP_PACKET_REDRAW;
  }
  char buf[24];
  const char* api = api_label(t->api_key, buf);
  char version[16];
  snprintf(version, sizeof version, "v%d", t->api_version);
  int top = t->request ? kReq : kResp;
  tick_stat_node(st, kStNames[top], 0, TRUE);
  int api_node = tick_stat_node(st, api, st_node[top], TRUE);
  tick_stat_node(st, version, api_node, FALSE);
  if (t->request) {
    tick_stat_node(st, kStNames[kClients], 0, TRUE);
    int c = tick_stat_node(st, t->client_id ? (*t->client_id ? t->client_id : "(empty)") : "(null)", st_node[kClients], TRUE);
    tick_stat_node(st, api, c, FALSE);
  }
  for (int l = 0; l < TapPdu::kLevels; ++l) {
    for (uint32_t i = 0; i < t->error_count[l]; ++i) {
      std::string_view name = error_name(t->errors[l][i]);
      char code[64];
      if (name.empty()) snprintf(code, sizeof code, "unknown error %d", t->errors[l][i]);
      else snprintf(code, sizeof code, "%.*s", static_cast<int>(name.size()), name.data());
      tick_stat_node(st, kStNames[kErr0 + l], 0, TRUE);
      int e = tick_stat_node(st, code, st_node[kErr0 + l], TRUE);
      tick_stat_node(st, api, e, FALSE);
    }
  }
  if (t->malformed) {
    tick_stat_node(st, kStNames[kMalformed], 0, TRUE);
    tick_stat_node(st, api, st_node[kMalformed], FALSE);
  }
  return TAP_PACKET_REDRAW;
}

int dissect_pdu(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  auto* c = static_cast<Connection*>(data);
  bool first_pass = !PINFO_FD_VISITED(pinfo);
  bool request = from_client(*c, pinfo);
  PduInfo* info = pdu_info(pinfo, first_pass);
  if (!info) return static_cast<int>(tvb_captured_length(tvb));
  if (first_pass) classify(*c, pinfo, tvb, *info, request);

  const ProgramSet& programs_now = ps();
  Frame& f = scratch_frame();
  const FrameDecoder decoder(programs_now);
  guint len = tvb_reported_length(tvb);
  guint have = tvb_captured_length(tvb);
  const auto* bytes = static_cast<const uint8_t*>(tvb_get_ptr(tvb, 0, static_cast<gint>(have)));
  std::span<const uint8_t> msg(bytes, have);
  int32_t size = have >= 4 ? static_cast<int32_t>(tvb_get_ntohl(tvb, 0)) : 0;
  bool bad_size = size < 0 || static_cast<uint32_t>(size) > kMaxMessage;

  f.clear();
  if (info->not_kafka) {
    f.message = msg;
    f.direction = info->request ? Direction::Request : Direction::Response;
  } else if (bad_size) {
    // What kwire decode reports for a lost stream: the message as far as it
    // can be identified, with the reason.
    f.message = msg;
    f.direction = info->request ? Direction::Request : Direction::Response;
    FrameDecoder::RequestId id{};
    if (info->request && FrameDecoder::peek_request(msg, id)) {
      f.api_key = id.api_key;
      f.api_version = id.api_version;
      f.correlation_id = id.correlation_id;
      f.program = programs_now.find(id.api_key, id.api_version, Direction::Request);
    } else if (have >= 8) {
      f.correlation_id = static_cast<int32_t>(tvb_get_ntohl(tvb, 4));
    }
    f.fail(0, "size prefix " + std::to_string(size) +
                  " is not a plausible Kafka message size; the rest of this direction is not decoded");
  } else if (info->request) {
    decoder.decode_request(msg, f);
    if (first_pass) info->hint = group_protocols.learn(programs_now, f);
    if (GroupProtocols::redecode(f, info->hint)) decoder.decode_request(msg, f, false, &info->hint);
  } else if (!info->unmatched) {
    decoder.decode_response(msg, info->api_key, info->api_version, f, false, info->hint);
    if (first_pass && info->api_key == 17 && info->api_version == 0 && f.ok()) {
      const Node* err = find_field(f, programs_now, f.body, "ErrorCode");
      if (err && err->v.i == 0) c->sasl_raw = true;
    }
  } else {
    f.message = msg;
    f.direction = Direction::Response;
    f.correlation_id = have >= 8 ? static_cast<int32_t>(tvb_get_ntohl(tvb, 4)) : 0;
  }
  if (first_pass && !info->request && !info->not_kafka && !info->unmatched &&
      !is_known_broker(pinfo, &pinfo->src, pinfo->srcport)) {
    auto& brokers = known_brokers[inside_tls(pinfo) ? 1 : 0];
    brokers.push_back({});
    copy_address_wmem(wmem_file_scope(), &brokers.back().addr, &pinfo->src);
    brokers.back().port = pinfo->srcport;
  }

  // The summary line, as `kwire decode` prints it. The C++ objects are gone
  // before the Wireshark calls below, whose exceptions are longjmp()s.
  const char* summary_text;
  {
    FrameContext ctx;
    ctx.unmatched = info->unmatched;
    ctx.not_kafka = info->not_kafka;
    if (info->note) ctx.note = info->note;
    TextBuffer summary;
    append_summary(summary, programs_now, f, &ctx);
    summary_text = utf8_string(pinfo->pool, summary.view());
  }
  const char* reason = f.errors.empty() ? nullptr : wmem_strdup(pinfo->pool, f.errors.front().reason.c_str());
  guint reason_offset = f.errors.empty() ? 0 : f.errors.front().offset;
  const char* api_name = f.program ? wmem_strndup(pinfo->pool, f.program->api_name.data(), f.program->api_name.size())
                                   : nullptr;
  TapPdu* tap = have_tap_listener(kwire_tap) ? tap_record(pinfo, f, programs_now, *info) : nullptr;
  // From here on only Wireshark calls (which may throw) and plain values.
  if (tap) tap_queue_packet(kwire_tap, pinfo, tap);

  col_set_str(pinfo->cinfo, COL_PROTOCOL, "kwire");
  auto pdus_before = GPOINTER_TO_UINT(p_get_proto_data(pinfo->pool, pinfo, proto_kwire, 1)) - 1;
  if (pdus_before == 0) col_add_str(pinfo->cinfo, COL_INFO, summary_text);
  else col_append_sep_str(pinfo->cinfo, COL_INFO, " | ", summary_text);

  proto_item* top = proto_tree_add_item(tree, proto_kwire, tvb, 0, -1, ENC_NA);
  proto_item_append_text(top, ", %s", summary_text);
  proto_tree* t = proto_item_add_subtree(top, ett_kwire);
  proto_tree_add_int(t, hf_length, tvb, 0, std::min<guint>(4, have), size);
  proto_item* dir = proto_tree_add_uint(t, hf_direction, tvb, 0, 0, info->request ? 0 : 1);
  proto_item_set_generated(dir);
  if (info->not_kafka) {
    proto_item* it = proto_tree_add_string(t, hf_not_kafka, tvb, 0, static_cast<gint>(have), info->note);
    expert_add_info_format(pinfo, it, &ei_not_kafka, "Not Kafka: %s", info->note);
    return static_cast<int>(len);
  }
  if (f.api_key >= 0) {
    proto_item_set_generated(proto_tree_add_int(t, hf_api_key, tvb, 4, 2, f.api_key));
    proto_item_set_generated(proto_tree_add_int(t, hf_api_version, tvb, 6, 2, f.api_version));
    if (api_name) proto_item_set_generated(proto_tree_add_string(t, hf_api_name, tvb, 4, 2, api_name));
  }
  proto_item* corr = proto_tree_add_int(t, hf_correlation_id, tvb, info->request ? 8 : 4, have >= 8 ? 4 : 0,
                                        f.correlation_id);
  proto_item_set_generated(corr);
  if (info->request && info->peer_frame)
    proto_item_set_generated(proto_tree_add_uint(t, hf_response_in, tvb, 0, 0, info->peer_frame));
  if (!info->request && info->peer_frame) {
    proto_item_set_generated(proto_tree_add_uint(t, hf_request_in, tvb, 0, 0, info->peer_frame));
    nstime_t delta;
    nstime_delta(&delta, &pinfo->abs_ts, &info->request_ts);
    proto_item_set_generated(proto_tree_add_time(t, hf_time, tvb, 0, 0, &delta));
  }
  if (info->unmatched)
    expert_add_info(pinfo, corr, &ei_unmatched);
  if (f.program && f.program->overlay) {
    char origin[160];
    snprintf(origin, sizeof origin, "%.*s", static_cast<int>(f.program->origin.size()), f.program->origin.data());
    proto_item* o = proto_tree_add_string(t, hf_overlay, tvb, 0, 0, origin);
    proto_item_set_generated(o);
    expert_add_info_format(pinfo, o, &ei_overlay, "Decoded through a spec overlay: %s", origin);
  }

  TreeBuilder b{pinfo, tvb, f, programs_now, f.program ? f.program->api_name : std::string_view{}};
  Range whole{0, static_cast<int>(have)};
  if (!f.nodes.empty()) b.node(t, 0, -1, whole, 0);
  if (f.body && f.body < f.nodes.size()) b.node(t, f.body, -1, whole, 0);
  // kwire.error_code holds every non-zero error code of the message, or a
  // single 0 when all its error codes are 0: with Wireshark's "!=" (all not
  // equal), kwire.error_code != 0 then selects exactly the failed messages.
  if (b.error_fields > 0 && b.errors == 0) {
    proto_item* e = proto_tree_add_int(t, hf_error_code, tvb, 0, 0, 0);
    proto_item_set_generated(e);
    proto_item_set_hidden(e);
  }
  if (reason) {
    int at = static_cast<int>(std::min<guint>(reason_offset, have));
    expert_add_info_format(pinfo, top, &ei_malformed, "Malformed Kafka message at offset %d: %s", at, reason);
  }
  return static_cast<int>(len);
}

// A TLS record header (content type 20-23, version 3.0-3.4, a length TLS
// allows): read as a Kafka size prefix it is more than 335 MB, past
// kMaxMessage, so no Kafka stream starts like this.
bool looks_like_tls(tvbuff_t* tvb) {
  if (tvb_captured_length(tvb) < 5) return false;
  uint8_t type = ws::get_uint8(tvb, 0);
  return type >= 0x14 && type <= 0x17 && ws::get_uint8(tvb, 1) == 0x03 && ws::get_uint8(tvb, 2) <= 0x04 &&
         tvb_get_ntohs(tvb, 3) <= 16384 + 2048;
}

int dissect_connection(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, Connection* c) {
  bool request = from_client(*c, pinfo);
  if (!PINFO_FD_VISITED(pinfo) && request && !c->dead[0] && c->pending.empty() && looks_like_tls(tvb) &&
      tvb_get_ntohl(tvb, 0) > kMaxMessage) {
    c->dead[0] = c->dead[1] = true;
    c->dead_note = "stream is TLS-encrypted; not decoded";
  }
  tcp_dissect_pdus(tvb, pinfo, tree, pref_desegment, 4, pdu_length, dissect_pdu, c);
  return static_cast<int>(tvb_captured_length(tvb));
}

// On the Kafka ports of the preference.
int dissect_kwire(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void*) {
  Connection* c = connection_of(pinfo);
  if (!c && !inside_tls(pinfo) && looks_like_tls(tvb) && tls_handle) {
    // TLS on a port of tcp.port: the conversation is TLS's, which decrypts
    // (given a key log) and hands kwire the Kafka inside.
    conversation_set_dissector(find_or_create_conversation(pinfo), tls_handle);
    return call_dissector(tls_handle, tvb, pinfo, tree);
  }
  if (!c) {
    // Called for a port of tcp.port, or of tls.port with the decrypted
    // application data (Wireshark's TLS dissector, given a key log).
    auto ours = [&](const char* table) {
      return dissector_get_uint_handle(find_dissector_table(table), pinfo->destport) == kwire_handle;
    };
    bool dst_is_server = ours("tcp.port") || ours("tls.port") || is_known_broker(pinfo, &pinfo->dst, pinfo->destport);
    c = new_connection(pinfo, dst_is_server);
  }
  return dissect_connection(tvb, pinfo, tree, c);
}

// On any other port: a connection is Kafka when its first bytes are a
// request kwire knows (the recognition `kwire decode` uses), or when it talks
// to a broker endpoint already seen answering Kafka requests (on the same
// layer: plain TCP, or inside TLS). A TCP segment that starts with a TLS
// record is never taken: the TLS dissector's, whatever its port.
ws::heur_result dissect_kwire_heur(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void*) {
  Connection* c = connection_of(pinfo);
  if (!c) {
    if (!pref_heuristic) return false;
    if (!inside_tls(pinfo) && looks_like_tls(tvb)) return false;
    bool dst_broker = is_known_broker(pinfo, &pinfo->dst, pinfo->destport);
    bool src_broker = !dst_broker && is_known_broker(pinfo, &pinfo->src, pinfo->srcport);
    if (!dst_broker && !src_broker) {
      guint have = tvb_captured_length(tvb);
      const auto* p = static_cast<const uint8_t*>(tvb_get_ptr(tvb, 0, static_cast<gint>(have)));
      if (!plausible_request(ps(), std::span<const uint8_t>(p, have))) return false;
      dst_broker = true;
    }
    c = new_connection(pinfo, dst_broker);
  }
  dissect_connection(tvb, pinfo, tree, c);
  return true;
}

// ---- Registration -----------------------------------------------------------

void apply_preferences() {
  auto next = std::make_unique<ProgramSet>(ProgramSet::release());
  if (pref_overlay && *pref_overlay && !enable_builtin_overlay(*next, pref_overlay))
    report_failure("kwire: no shipped spec overlay is named \"%s\"", pref_overlay);
  if (pref_spec_dir && *pref_spec_dir) {
    std::string error;
    if (!load_overlay_dir(*next, pref_spec_dir, error)) {
      std::string msg = "kwire: spec overlay directory " + std::string(pref_spec_dir) + ":\n" + error;
      report_failure("%s", msg.c_str());
    }
  }
  programs = std::move(next);
  path_cache.clear();
}

std::vector<value_string> make_values(const GenValue* v) {
  std::vector<value_string> out;
  for (; v && v->name; ++v) out.push_back({static_cast<guint32>(v->value), v->name});
  out.push_back({0, nullptr});
  return out;
}

enum ftenum ftype_of(GenType t) {
  switch (t) {
    case GenType::None: return FT_NONE;
    case GenType::Int8: return FT_INT8;
    case GenType::Int16: return FT_INT16;
    case GenType::Int32: return FT_INT32;
    case GenType::Int64: return FT_INT64;
    case GenType::Uint16: return FT_UINT16;
    case GenType::Uint32: case GenType::Uint32Hex: return FT_UINT32;
    case GenType::Double: return FT_DOUBLE;
    case GenType::Bool: return FT_BOOLEAN;
    case GenType::String: return FT_STRING;
    case GenType::Bytes: return FT_BYTES;
  }
  return FT_NONE;
}

int display_of(GenType t) {
  switch (t) {
    case GenType::Int8: case GenType::Int16: case GenType::Int32: case GenType::Int64:
    case GenType::Uint16: case GenType::Uint32: return BASE_DEC;
    case GenType::Uint32Hex: return BASE_HEX;
    default: return BASE_NONE;
  }
}

void register_protocol() {
  proto_kwire = proto_register_protocol("Apache Kafka (kwire)", "kwire", "kwire");

  // Value names live as long as the process: Wireshark keeps pointers to them.
  static std::vector<std::vector<value_string>> value_tables;
  value_tables.reserve(kGenFieldCount + 4);
  value_tables.push_back(make_values(kGenApiNames));
  const value_string* api_vals = value_tables.back().data();
  value_tables.push_back(make_values(kGenErrorNames));
  const value_string* error_vals = value_tables.back().data();
  static const value_string direction_vals[] = {{0, "Request"}, {1, "Response"}, {0, nullptr}};

  static std::vector<hf_register_info> hf;
  auto field = [&](int* id, const char* name, const char* abbrev, enum ftenum type, int display,
                   const void* strings, const char* blurb) {
    hf.push_back({id, {name, abbrev, type, display, strings, 0, blurb, HFILL}});
  };
  field(&hf_length, "Length", "kwire.length", FT_INT32, BASE_DEC, nullptr, "Size prefix: bytes after it");
  field(&hf_api_key, "Api key", "kwire.api_key", FT_INT16, BASE_DEC, VALS(api_vals), nullptr);
  field(&hf_api_version, "Api version", "kwire.api_version", FT_INT16, BASE_DEC, nullptr, nullptr);
  field(&hf_correlation_id, "Correlation id", "kwire.correlation_id", FT_INT32, BASE_DEC, nullptr, nullptr);
  field(&hf_direction, "Direction", "kwire.direction", FT_UINT8, BASE_DEC, VALS(direction_vals), nullptr);
  field(&hf_api_name, "Api name", "kwire.api_name", FT_STRING, BASE_NONE, nullptr, nullptr);
  field(&hf_error_code, "Error code", "kwire.error_code", FT_INT16, BASE_DEC, VALS(error_vals),
        "Every non-zero error code anywhere in the message, or 0 when there is none");
  field(&hf_request_in, "Request in frame", "kwire.request_in", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), nullptr);
  field(&hf_response_in, "Response in frame", "kwire.response_in", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), nullptr);
  field(&hf_time, "Time since request", "kwire.time", FT_RELATIVE_TIME, BASE_NONE, nullptr, nullptr);
  field(&hf_null, "Null", "kwire.null", FT_NONE, BASE_NONE, nullptr, "The field is null on the wire");
  field(&hf_redacted, "Redacted", "kwire.redacted", FT_NONE, BASE_NONE, nullptr,
        "A secret (SASL token, password, HMAC): never shown");
  field(&hf_unknown_tag, "UnknownTaggedField", "kwire.unknown_tagged_field", FT_BYTES, BASE_NONE, nullptr,
        "A tagged field this version's spec does not define");
  field(&hf_unknown_tag_number, "Tag", "kwire.unknown_tagged_field.tag", FT_UINT32, BASE_DEC, nullptr, nullptr);
  field(&hf_overlay, "Spec overlay", "kwire.overlay", FT_STRING, BASE_NONE, nullptr, nullptr);
  field(&hf_overlay_field, "Overlay field", "kwire.overlay_field", FT_STRING, BASE_NONE, nullptr,
        "A field of a spec overlay loaded at run time");
  field(&hf_not_kafka, "Not Kafka", "kwire.not_kafka", FT_STRING, BASE_NONE, nullptr, nullptr);

  gen_hf.assign(kGenFieldCount, -1);
  gen_ett.assign(kGenFieldCount, -1);
  builtin_field.assign(kBuiltinDescCount, -1);
  for (size_t i = 0; i < kGenFieldCount; ++i) {
    const GenField& g = kGenFields[i];
    if (std::string_view(g.abbrev) == "kwire.unknown_tagged_field") continue;  // registered above
    const void* strings = nullptr;
    if (g.error_code) strings = VALS(error_vals);
    else if (g.values) {
      value_tables.push_back(make_values(g.values));
      strings = VALS(value_tables.back().data());
    }
    if (g.type == GenType::Bool) {
      hf.push_back({&gen_hf[i], {g.name, g.abbrev, FT_BOOLEAN, BASE_NONE, nullptr, 0, g.blurb, HFILL}});
    } else {
      field(&gen_hf[i], g.name, g.abbrev, ftype_of(g.type), display_of(g.type), strings, g.blurb);
    }
    gen_by_abbrev.emplace(g.abbrev, static_cast<uint32_t>(i));
  }
  for (uint32_t d = 0; d < kBuiltinDescCount; ++d) {
    std::string abbrev = builtin_abbrev(d, ProgramSet::release().field(d).name);
    auto it = gen_by_abbrev.find(abbrev);
    if (it != gen_by_abbrev.end()) builtin_field[d] = static_cast<int32_t>(it->second);
  }
  proto_register_field_array(proto_kwire, hf.data(), static_cast<int>(hf.size()));

  static std::vector<gint*> ett = {&ett_kwire, &ett_array, &ett_generic};
  for (auto& e : gen_ett) ett.push_back(&e);
  proto_register_subtree_array(ett.data(), static_cast<int>(ett.size()));

  static ei_register_info ei[] = {
    {&ei_malformed, {"kwire.malformed", PI_MALFORMED, PI_ERROR, "Malformed Kafka message", EXPFILL}},
    {&ei_error_code, {"kwire.error", PI_RESPONSE_CODE, PI_NOTE, "Kafka error code", EXPFILL}},
    {&ei_unmatched, {"kwire.unmatched", PI_SEQUENCE, PI_WARN,
                     "Response whose request is not in the capture: not decoded", EXPFILL}},
    {&ei_not_kafka, {"kwire.not_kafka.expert", PI_UNDECODED, PI_WARN, "Not Kafka", EXPFILL}},
    {&ei_overlay, {"kwire.overlay.expert", PI_PROTOCOL, PI_NOTE, "Decoded through a spec overlay", EXPFILL}},
  };
  expert_module_t* em = expert_register_protocol(proto_kwire);
  expert_register_field_array(em, ei, G_N_ELEMENTS(ei));

  module_t* prefs = prefs_register_protocol(proto_kwire, apply_preferences);
  prefs_register_bool_preference(prefs, "desegment", "Reassemble Kafka messages spanning TCP segments",
                                 "Needs TCP's \"Allow subdissector to reassemble TCP streams\" too",
                                 &pref_desegment);
  prefs_register_bool_preference(prefs, "heuristic", "Find Kafka on any port",
                                 "Recognise a connection as Kafka from its first request, on any port, "
                                 "as kwire decode does", &pref_heuristic);
  prefs_register_string_preference(prefs, "overlay", "Shipped spec overlay",
                                   "Name of a spec overlay shipped with kwire (kwire decode --overlay NAME), "
                                   "for example kip-1331-draft", &pref_overlay);
  prefs_register_directory_preference(prefs, "spec_dir", "Spec overlay directory",
                                      "A directory of Kafka message specs that replace messages of the same "
                                      "name or api key (kwire decode --spec-dir DIR)", &pref_spec_dir);

  kwire_handle = register_dissector("kwire", dissect_kwire, proto_kwire);
  register_cleanup_routine(reset_capture_state);

  // Statistics: one tap, a record per PDU (TapPdu), read by the service
  // response time tables and the stats tree.
  kwire_tap = register_tap("kwire");
  register_srt_table(proto_kwire, nullptr, 2, srt_packet, srt_init, nullptr);
  stats_tree_register_plugin("kwire", "kwire", "Kafka", 0, stats_tree_packet, stats_tree_init, nullptr);
}

void register_handoff() {
  dissector_add_uint_range_with_preference("tcp.port", "9092", kwire_handle);
  heur_dissector_add("tcp", dissect_kwire_heur, "Apache Kafka over TCP (kwire)", "kwire_tcp", proto_kwire,
                     HEURISTIC_ENABLE);
  // Kafka inside TLS: Wireshark's TLS dissector decrypts (tls.keylog_file, or
  // the capture's secrets blocks) and hands the application data to the
  // dissector of the TLS port (preference kwire.tls.port, or -d
  // tls.port==P,kwire), else to the heuristics, where kwire finds it as on TCP.
  dissector_add_uint_range_with_preference("tls.port", "", kwire_handle);
  heur_dissector_add("tls", dissect_kwire_heur, "Apache Kafka over TLS (kwire)", "kwire_tls", proto_kwire,
                     HEURISTIC_ENABLE);
  tls_handle = find_dissector("tls");
  apply_preferences();
}

}  // namespace
}  // namespace kwire::wireshark

void plugin_register(void) {
  static proto_plugin plugin;
  plugin.register_protoinfo = kwire::wireshark::register_protocol;
  plugin.register_handoff = kwire::wireshark::register_handoff;
  proto_register_plugin(&plugin);
}

#if KWIRE_WS_HAS_PLUGIN_DESCRIBE
// What `tshark -G plugins` and About > Plugins list the plugin as.
uint32_t plugin_describe(void) { return WS_PLUGIN_DESC_DISSECTOR; }
#endif
