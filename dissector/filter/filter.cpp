#include "dissector/filter/filter.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"
#include "wire/wire.hpp"

namespace kwire::filter {

namespace {

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// ---------------------------------------------------------------- lexer

enum class Tok {
  Ident, Number, String, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not, Contains, Matches, In,
  LBrace, RBrace, LParen, RParen, DotDot, Comma, End, Bad,
};

struct Token {
  Tok kind = Tok::End;
  size_t pos = 0;
  std::string text;   // identifier, number text, or the unescaped string
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits the expression; on a bad character or unterminated string the
// last token is Bad with a message in text.
std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  auto push = [&](Tok k, size_t pos, std::string text = {}) { out.push_back({k, pos, std::move(text)}); };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    const size_t start = i;
    auto two = [&](const char* t) { return s.compare(i, 2, t) == 0; };
    if (two("==")) { push(Tok::Eq, start); i += 2; }
    else if (two("!=")) { push(Tok::Ne, start); i += 2; }
    else if (two("<=")) { push(Tok::Le, start); i += 2; }
    else if (two(">=")) { push(Tok::Ge, start); i += 2; }
    else if (two("&&")) { push(Tok::And, start); i += 2; }
    else if (two("||")) { push(Tok::Or, start); i += 2; }
    else if (two("..")) { push(Tok::DotDot, start); i += 2; }
    else if (c == '<') { push(Tok::Lt, start); ++i; }
    else if (c == '>') { push(Tok::Gt, start); ++i; }
    else if (c == '!') { push(Tok::Not, start); ++i; }
    else if (c == '~') { push(Tok::Matches, start); ++i; }
    else if (c == '{') { push(Tok::LBrace, start); ++i; }
    else if (c == '}') { push(Tok::RBrace, start); ++i; }
    else if (c == '(') { push(Tok::LParen, start); ++i; }
    else if (c == ')') { push(Tok::RParen, start); ++i; }
    else if (c == ',') { push(Tok::Comma, start); ++i; }
    else if (c == '"' || c == '\'') {
      std::string text;
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == c) { closed = true; ++i; break; }
        if (s[i] == '\\' && i + 1 < s.size()) {
          const char e = s[i + 1];
          text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
          i += 2;
          continue;
        }
        text += s[i++];
      }
      if (!closed) { push(Tok::Bad, start, "unterminated string"); return out; }
      push(Tok::String, start, std::move(text));
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      ++i;
      if (c == '0' && i < s.size() && (s[i] == 'x' || s[i] == 'X')) {
        ++i;
        while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i;
      } else {
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
          ++i;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
          size_t j = i + 1;
          if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
          if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
            i = j;
            while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
          }
        }
      }
      if (i < s.size() && ident_char(s[i])) { push(Tok::Bad, start, "bad number"); return out; }
      push(Tok::Number, start, std::string(s.substr(start, i - start)));
    } else if (ident_start(c)) {
      ++i;
      while (i < s.size() && (ident_char(s[i]) || (s[i] == '.' && i + 1 < s.size() && ident_start(s[i + 1])))) ++i;
      std::string word(s.substr(start, i - start));
      if (word == "and") push(Tok::And, start);
      else if (word == "or") push(Tok::Or, start);
      else if (word == "not") push(Tok::Not, start);
      else if (word == "eq") push(Tok::Eq, start);
      else if (word == "ne") push(Tok::Ne, start);
      else if (word == "lt") push(Tok::Lt, start);
      else if (word == "le") push(Tok::Le, start);
      else if (word == "gt") push(Tok::Gt, start);
      else if (word == "ge") push(Tok::Ge, start);
      else if (word == "contains") push(Tok::Contains, start);
      else if (word == "matches") push(Tok::Matches, start);
      else if (word == "in") push(Tok::In, start);
      else push(Tok::Ident, start, std::move(word));
    } else {
      push(Tok::Bad, start, std::string("unexpected character '") + c + "'");
      return out;
    }
  }
  push(Tok::End, s.size());
  return out;
}

// ---------------------------------------------------------------- paths

enum class Top : uint8_t {
  Frame, Message, Time, Src, Dst, Direction, ApiKey, ApiVersion, ApiName, CorrelationId, Unmatched, Guessed,
  Overlay, NotKafka, ErrorOffset, ErrorReason, Header, Body,
};

constexpr std::pair<std::string_view, Top> kTopNames[] = {
    {"frame", Top::Frame},           {"message", Top::Message},     {"time", Top::Time},
    {"src", Top::Src},               {"dst", Top::Dst},             {"direction", Top::Direction},
    {"apiKey", Top::ApiKey},         {"apiVersion", Top::ApiVersion}, {"apiName", Top::ApiName},
    {"correlationId", Top::CorrelationId}, {"unmatched", Top::Unmatched}, {"guessed", Top::Guessed},
    {"overlay", Top::Overlay},       {"notKafka", Top::NotKafka},   {"error.offset", Top::ErrorOffset},
    {"error.reason", Top::ErrorReason}, {"header", Top::Header},    {"body", Top::Body},
};

// Builtin levels of record batches (the records decoder's descriptors).
enum class Level : uint8_t { Struct, Batch, Record, RecordHeader, Leaf, NestedMessage };

constexpr uint32_t kBatchLevel[] = {
    kDescBaseOffset, kDescBatchLength, kDescPartitionLeaderEpoch, kDescMagic, kDescCrc, kDescAttributes,
    kDescLastOffsetDelta, kDescBaseTimestamp, kDescMaxTimestamp, kDescProducerId, kDescProducerEpoch,
    kDescBaseSequence, kDescRecordCount, kDescRecordsArray, kDescLegacyOffset, kDescLegacySize, kDescLegacyCrc,
    kDescLegacyMagic, kDescLegacyAttributes, kDescLegacyTimestamp, kDescLegacyKey, kDescLegacyValue,
    kDescLegacyInner};
constexpr uint32_t kRecordLevel[] = {kDescRecordLength, kDescRecordAttributes, kDescTimestampDelta, kDescOffsetDelta,
                                     kDescKey, kDescValue, kDescHeadersArray};
constexpr uint32_t kHeaderLevel[] = {kDescHeaderKey, kDescHeaderValue};

using Chain = std::vector<std::vector<uint32_t>>;  // per component: the descriptors it may be

// Where a path component looks for its fields: the structs below the
// previous component (several when it was a payload inside a bytes field,
// which has a layout per version), a level of record batches, or a whole
// message inside a bytes field ("header" and "body").
struct At {
  Level level = Level::Struct;
  std::vector<int32_t> subs;   // Struct
  bool version = false;        // Struct of a version-prefixed payload: "version" is a field too
  Direction direction = Direction::Request;  // NestedMessage
};

At next_level(const ProgramSet& ps, const std::vector<uint32_t>& found) {
  At at;
  const uint32_t d = found.front();
  const FieldDesc& fd = ps.field(d);
  if (d == kDescRecordsArray) { at.level = Level::Record; return at; }
  if (d == kDescHeadersArray) { at.level = Level::RecordHeader; return at; }
  if (d == kDescLegacyInner || fd.type == WireType::Records) { at.level = Level::Batch; return at; }
  if (fd.type == WireType::Bytes) {
    const NestedPayload* p = nullptr;
    for (uint32_t x : found)
      if (!p) p = ps.nested_payload(x);
    if (!p) { at.level = Level::Leaf; return at; }
    if (p->payload == "request" || p->payload == "response") {
      at.level = Level::NestedMessage;
      at.direction = p->payload == "request" ? Direction::Request : Direction::Response;
      return at;
    }
    for (const DataProgram& dp : ps.data())
      if (dp.name == p->payload) at.subs.push_back(ps.field(dp.root).sub);
    at.version = true;
    return at;
  }
  for (uint32_t x : found) {
    const FieldDesc& f = ps.field(x);
    if (f.sub >= 0 && (f.type == WireType::Struct || f.type == WireType::Array) &&
        std::find(at.subs.begin(), at.subs.end(), f.sub) == at.subs.end())
      at.subs.push_back(f.sub);
  }
  if (at.subs.empty()) at.level = Level::Leaf;
  return at;
}

// The roots of what a NestedMessage level calls `comp` ("header": the header
// versions, "body": every message of the direction).
std::vector<uint32_t> message_parts(const ProgramSet& ps, Direction dir, std::string_view comp) {
  std::vector<uint32_t> out;
  if (comp == "header") {
    if (dir == Direction::Request) for (int v = 0; v < 3; ++v) out.push_back(ps.request_header(v));
    else for (int v = 0; v < 2; ++v) out.push_back(ps.response_header(v));
  } else if (comp == "body") {
    for (const auto& m : ps.messages())
      if (m.direction == dir) out.push_back(m.root);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

template <class F>
void level_fields(const ProgramSet& ps, const At& at, F&& each) {
  auto list = [&](const auto& arr) { for (uint32_t d : arr) each(d); };
  switch (at.level) {
    case Level::Struct:
      if (at.version) each(kDescNestedVersion);
      for (int32_t sub : at.subs) {
        const StructProgram& s = ps.structure(static_cast<uint32_t>(sub));
        for (uint32_t i = 0; i < s.field_count; ++i) each(s.first_field + i);
        for (uint32_t i = 0; i < s.tagged_count; ++i) each(s.first_tagged + i);
      }
      return;
    case Level::Batch: list(kBatchLevel); return;
    case Level::Record: list(kRecordLevel); return;
    case Level::RecordHeader: list(kHeaderLevel); return;
    case Level::Leaf: case Level::NestedMessage: return;
  }
}

// The descriptors of comps below root (a Struct FieldDesc); nullopt when
// this layout has no such path.
std::optional<Chain> resolve(const ProgramSet& ps, uint32_t root, const std::vector<std::string>& comps) {
  Chain chain;
  At at;
  if (ps.field(root).sub < 0) return std::nullopt;
  at.subs.push_back(ps.field(root).sub);
  for (const auto& comp : comps) {
    std::vector<uint32_t> found;
    if (at.level == Level::NestedMessage) {
      found = message_parts(ps, at.direction, comp);
    } else {
      level_fields(ps, at, [&](uint32_t d) {
        if (ps.field(d).json_name == comp && std::find(found.begin(), found.end(), d) == found.end()) found.push_back(d);
      });
    }
    if (found.empty()) return std::nullopt;
    at = next_level(ps, found);
    chain.push_back(std::move(found));
  }
  return chain;
}

void all_paths(const ProgramSet& ps, const At& at, const std::string& prefix, int depth,
               std::vector<std::string>& out, std::set<std::string>& seen) {
  if (depth > 12) return;
  if (at.level == Level::NestedMessage) {
    // A whole message of any api: its header's paths, and the body itself.
    for (std::string_view part : {"header", "body"}) {
      std::string p = prefix + "." + std::string(part);
      if (seen.insert(p).second) out.push_back(p);
      if (part == "header") all_paths(ps, next_level(ps, message_parts(ps, at.direction, part)), p, depth + 1, out, seen);
    }
    return;
  }
  level_fields(ps, at, [&](uint32_t d) {
    std::string p = prefix + "." + std::string(ps.field(d).json_name);
    if (seen.insert(p).second) out.push_back(p);
    At next = next_level(ps, {d});
    if (next.level != Level::Leaf) all_paths(ps, next, p, depth + 1, out, seen);
  });
}

// The paths below one struct (a header or body root's sub).
void all_paths(const ProgramSet& ps, int32_t sub, const std::string& prefix, std::vector<std::string>& out,
               std::set<std::string>& seen) {
  At at;
  at.subs.push_back(sub);
  all_paths(ps, at, prefix, 0, out, seen);
}

struct PathSpec {
  std::string text;           // as written
  size_t column = 0;
  bool request = false;       // request.*
  Top top = Top::Body;
  std::vector<std::string> comps;  // below header/body
  // Per root descriptor (header or body layout): its chain, or none.
  mutable std::unordered_map<uint32_t, std::optional<Chain>> cache;
  mutable uint32_t last_root = UINT32_MAX;
  mutable const std::optional<Chain>* last = nullptr;

  const std::optional<Chain>& chain(const ProgramSet& ps, uint32_t root) const {
    if (root == last_root) return *last;
    auto it = cache.find(root);
    if (it == cache.end()) it = cache.emplace(root, resolve(ps, root, comps)).first;
    last_root = root;
    last = &it->second;
    return it->second;
  }
};

bool parse_path(const std::string& text, PathSpec& p) {
  std::string_view t = text;
  if (t.rfind("request.", 0) == 0) { p.request = true; t.remove_prefix(8); }
  for (const auto& [name, top] : kTopNames) {
    if (t == name) { p.top = top; return true; }
    if ((top == Top::Header || top == Top::Body) && t.size() > name.size() && t.rfind(name, 0) == 0 &&
        t[name.size()] == '.') {
      p.top = top;
      std::string_view rest = t.substr(name.size() + 1);
      size_t dot;
      while ((dot = rest.find('.')) != std::string_view::npos) {
        p.comps.emplace_back(rest.substr(0, dot));
        rest.remove_prefix(dot + 1);
      }
      p.comps.emplace_back(rest);
      return true;
    }
  }
  return false;
}

// Walks a frame's nodes along a chain below `container`; emit(node) returns
// true to stop. Returns true when stopped.
template <class F>
bool walk(const Frame& f, uint32_t container, const Chain& ch, size_t k, F& emit) {
  const std::vector<uint32_t>& want = ch[k];
  for (uint32_t c : Children(f, container)) {
    const Node& n = f.nodes[c];
    if (std::find(want.begin(), want.end(), n.desc) == want.end()) continue;
    if (k + 1 == ch.size()) {
      if (emit(c)) return true;
      continue;
    }
    if (n.is_null()) continue;
    if (n.type == WireType::Struct) {
      if (walk(f, c, ch, k + 1, emit)) return true;
    } else if (n.flags & kNested) {
      // A payload inside a bytes field, when it decoded (as -T json shows
      // it): a whole message's header and body nodes, or a data struct.
      if (n.flags & kNestedFailed) continue;
      if (walk(f, (n.flags & kNestedMessage) ? c : c + 1, ch, k + 1, emit)) return true;
    } else if (n.type == WireType::Array || n.type == WireType::Records) {
      for (uint32_t e : Children(f, c))
        if (f.nodes[e].type == WireType::Struct && walk(f, e, ch, k + 1, emit)) return true;
    }
  }
  return false;
}

// The nodes a header/body path names in a frame. emit(node) -> stop.
template <class F>
void path_nodes(const ProgramSet& ps, const PathSpec& p, const Frame& f, F&& emit) {
  uint32_t root;
  if (p.top == Top::Header) {
    if (f.nodes.empty()) return;
    root = 0;
  } else {
    if (!f.body) return;
    root = f.body;
  }
  if (p.comps.empty()) { emit(root); return; }
  const auto& ch = p.chain(ps, f.nodes[root].desc);
  if (!ch) return;
  walk(f, root, *ch, 0, emit);
}

// ---------------------------------------------------------------- values

enum class VK : uint8_t { Int, Float, Str, Bytes, Uuid, Null, Container };

struct Val {
  VK kind = VK::Null;
  bool boolean = false;
  int64_t i = 0;
  double f = 0;
  std::string_view s;          // Str, Bytes (raw)
  const uint8_t* p = nullptr;  // Uuid
  uint32_t desc = UINT32_MAX;  // field descriptor, or none for top-level
};

Val node_val(const ProgramSet& ps, const Node& n, uint32_t desc) {
  Val v;
  v.desc = desc;
  if (n.is_null()) { v.kind = VK::Null; return v; }
  if (ps.field(n.desc).flags & kSensitive) { v.kind = VK::Str; v.s = "<redacted>"; return v; }
  switch (n.type) {
    case WireType::Bool: v.kind = VK::Int; v.boolean = true; v.i = n.v.i ? 1 : 0; break;
    case WireType::Float64: v.kind = VK::Float; v.f = n.v.f; break;
    case WireType::Uuid: v.kind = VK::Uuid; v.p = n.v.p; break;
    case WireType::String: case WireType::VarString: v.kind = VK::Str; v.s = n.str(); break;
    case WireType::Bytes: case WireType::VarBytes: v.kind = VK::Bytes; v.s = n.str(); break;
    case WireType::Struct: case WireType::Array: case WireType::Records: v.kind = VK::Container; break;
    default: v.kind = VK::Int; v.i = n.v.i; break;
  }
  return v;
}

struct Literal {
  enum Kind : uint8_t { Int, Float, Str, Word, Null } kind = Str;
  int64_t i = 0;
  double f = 0;
  std::string s;         // the text (number as written, unescaped string, word)
  size_t column = 0;
  // Words and strings as numbers per integer field descriptor (error codes,
  // documented codes, true/false); nullopt when the field has no such name.
  mutable std::unordered_map<uint32_t, std::optional<int64_t>> as_int;
};

std::optional<int64_t> word_value(const ProgramSet& ps, std::string_view api_name, const FieldDesc& d,
                                  std::string_view word, bool boolean) {
  if (boolean) {
    if (iequal(word, "true")) return 1;
    if (iequal(word, "false")) return 0;
    return std::nullopt;
  }
  (void)ps;
  if (is_error_code_field(d)) {
    for (size_t k = 0; k < kErrorCodeCount; ++k)
      if (iequal(word, kErrorCodes[k].name)) return kErrorCodes[k].code;
    return std::nullopt;
  }
  for (int64_t v = 0; v < 8; ++v) {
    std::string_view name = code_name(api_name, d, v);
    if (!name.empty() && iequal(word, name)) return v;
  }
  return std::nullopt;
}

std::string uuid_text(const uint8_t* p) {
  char b[wire::kUuidTextSize];
  wire::uuid_to(b, p);
  return std::string(b, wire::kUuidTextSize);
}

enum class Op : uint8_t { Exists, Eq, Ne, Lt, Le, Gt, Ge, Contains, Matches, In, IsNull, NotNull, Error, Malformed };

struct Member { Literal lo, hi; bool range = false; };

struct Atom {
  PathSpec path;
  Op op = Op::Exists;
  Literal lit;
  std::vector<Member> set;
  std::regex re;
  int req_index = -1;   // index among request atoms
};

int cmp3(const Val& v, const Literal& lit, const ProgramSet& ps, std::string_view api_name, bool& ok) {
  ok = true;
  auto order = [](auto a, auto b) { return a < b ? -1 : a > b ? 1 : 0; };
  switch (v.kind) {
    case VK::Int:
      if (lit.kind == Literal::Int) return order(v.i, lit.i);
      if (lit.kind == Literal::Float) return order(static_cast<double>(v.i), lit.f);
      if (lit.kind == Literal::Word || lit.kind == Literal::Str) {
        if (v.desc == UINT32_MAX) {  // top-level booleans
          if (v.boolean && (iequal(lit.s, "true") || iequal(lit.s, "false"))) return order(v.i, iequal(lit.s, "true") ? 1 : 0);
          ok = false;
          return 0;
        }
        auto it = lit.as_int.find(v.desc);
        if (it == lit.as_int.end())
          it = lit.as_int.emplace(v.desc, word_value(ps, api_name, ps.field(v.desc), lit.s, v.boolean)).first;
        if (!it->second) { ok = false; return 0; }
        return order(v.i, *it->second);
      }
      ok = false;
      return 0;
    case VK::Float:
      if (lit.kind == Literal::Int) return order(v.f, static_cast<double>(lit.i));
      if (lit.kind == Literal::Float) return order(v.f, lit.f);
      ok = false;
      return 0;
    case VK::Str: case VK::Bytes:
      if (lit.kind == Literal::Null) { ok = false; return 0; }
      return order(v.s.compare(lit.s), 0);
    case VK::Uuid:
      if (lit.kind == Literal::Null) { ok = false; return 0; }
      return order(std::string_view(uuid_text(v.p)).compare(lit.s), 0);
    default:
      ok = false;
      return 0;
  }
}

bool test_value(const Atom& a, const Val& v, const ProgramSet& ps, std::string_view api) {
  bool ok = false;
  switch (a.op) {
    case Op::Eq: case Op::Ne: { int c = cmp3(v, a.lit, ps, api, ok); return ok && c == 0; }
    case Op::Lt: { int c = cmp3(v, a.lit, ps, api, ok); return ok && c < 0; }
    case Op::Le: { int c = cmp3(v, a.lit, ps, api, ok); return ok && c <= 0; }
    case Op::Gt: { int c = cmp3(v, a.lit, ps, api, ok); return ok && c > 0; }
    case Op::Ge: { int c = cmp3(v, a.lit, ps, api, ok); return ok && c >= 0; }
    case Op::In:
      for (const Member& m : a.set) {
        if (!m.range) {
          int c = cmp3(v, m.lo, ps, api, ok);
          if (ok && c == 0) return true;
        } else {
          int lo = cmp3(v, m.lo, ps, api, ok);
          if (!ok || lo < 0) continue;
          int hi = cmp3(v, m.hi, ps, api, ok);
          if (ok && hi <= 0) return true;
        }
      }
      return false;
    case Op::Contains: case Op::Matches: {
      std::string buf;
      std::string_view s;
      if (v.kind == VK::Str || v.kind == VK::Bytes) s = v.s;
      else if (v.kind == VK::Uuid) { buf = uuid_text(v.p); s = buf; }
      else return false;
      if (a.op == Op::Contains) return s.find(a.lit.s) != std::string_view::npos;
      return std::regex_search(s.begin(), s.end(), a.re);
    }
    default:
      return false;
  }
}

}  // namespace

// ---------------------------------------------------------------- program

struct Program {
  const ProgramSet* ps = nullptr;
  std::string expr;
  std::vector<std::unique_ptr<Atom>> atoms;
  int request_atoms = 0;
  // Expression tree in prefix form over atoms.
  struct ExprNode { enum Kind : uint8_t { Atom, And, Or, Not } kind; int a = -1, b = -1; int atom = -1; };
  std::vector<ExprNode> nodes;
  int root = -1;
  bool match_all = true;

  struct Env {
    const Frame* f;
    const FrameContext* ctx;
    const Frame* req;
    const FrameContext* req_ctx;
    const std::vector<bool>* bits;
  };

  bool eval(int n, const Env& env) const {
    const ExprNode& e = nodes[static_cast<size_t>(n)];
    switch (e.kind) {
      case ExprNode::And: return eval(e.a, env) && eval(e.b, env);
      case ExprNode::Or: return eval(e.a, env) || eval(e.b, env);
      case ExprNode::Not: return !eval(e.a, env);
      case ExprNode::Atom: break;
    }
    const Atom& a = *atoms[static_cast<size_t>(e.atom)];
    if (a.path.request) {
      if (env.bits) return (*env.bits)[static_cast<size_t>(a.req_index)];
      if (env.f->direction == Direction::Request) return atom(a, *env.f, env.ctx);
      if (!env.req) return false;
      return atom(a, *env.req, env.req_ctx);
    }
    return atom(a, *env.f, env.ctx);
  }

  // Evaluates one atom on frame f.
  bool atom(const Atom& a, const Frame& f, const FrameContext* ctx) const {
    if (a.op == Op::Error) return !f.ok() || has_error_code(*ps, f);
    if (a.op == Op::Malformed) return !f.ok();
    const std::string_view api = f.program ? f.program->api_name : std::string_view();
    if (a.path.top == Top::Header || a.path.top == Top::Body) {
      bool any = false, all_ne = true;
      path_nodes(*ps, a.path, f, [&](uint32_t idx) {
        const Node& n = f.nodes[idx];
        switch (a.op) {
          case Op::Exists: case Op::NotNull: any = !n.is_null(); return any;
          case Op::IsNull: any = n.is_null(); return any;
          default: break;
        }
        auto one = [&](const Val& v) {
          if (a.op == Op::Ne) {
            if (v.kind == VK::Null || v.kind == VK::Container) return false;
            any = true;
            if (test_value(a, v, *ps, api)) { all_ne = false; return true; }
            return false;
          }
          if (test_value(a, v, *ps, api)) { any = true; return true; }
          return false;
        };
        if (n.type == WireType::Array && !n.is_null() && ps->field(n.desc).elem != WireType::Struct) {
          for (uint32_t e : Children(f, idx))
            if (one(node_val(*ps, f.nodes[e], n.desc))) return true;
          return false;
        }
        return one(node_val(*ps, n, n.desc));
      });
      return a.op == Op::Ne ? any && all_ne : any;
    }
    // Top-level fields.
    Val v;
    std::string text;
    switch (a.path.top) {
      case Top::Frame:
        v.kind = VK::Int;
        v.i = static_cast<int64_t>(ctx ? (ctx->packet.number ? ctx->packet.number : ctx->number) : 0);
        if (!ctx) v.kind = VK::Null;
        break;
      case Top::Message: if (ctx) { v.kind = VK::Int; v.i = static_cast<int64_t>(ctx->number); } break;
      case Top::Time:
        if (ctx) { v.kind = VK::Float; v.f = static_cast<double>(ctx->packet.ts_sec) + ctx->packet.ts_usec / 1e6; }
        break;
      case Top::Src: case Top::Dst:
        if (ctx) { text = (a.path.top == Top::Src ? ctx->src : ctx->dst).str(); v.kind = VK::Str; v.s = text; }
        break;
      case Top::Direction: v.kind = VK::Str; v.s = f.direction == Direction::Request ? "request" : "response"; break;
      case Top::ApiKey: if (f.api_key >= 0) { v.kind = VK::Int; v.i = f.api_key; } break;
      case Top::ApiVersion: if (f.api_key >= 0) { v.kind = VK::Int; v.i = f.api_version; } break;
      case Top::ApiName: if (f.program) { v.kind = VK::Str; v.s = f.program->api_name; } break;
      case Top::CorrelationId: v.kind = VK::Int; v.i = f.correlation_id; break;
      case Top::Unmatched: v.kind = VK::Int; v.boolean = true; v.i = ctx && ctx->unmatched; break;
      case Top::Guessed: v.kind = VK::Int; v.boolean = true; v.i = f.guessed; break;
      case Top::Overlay: if (f.program && f.program->overlay) { v.kind = VK::Str; v.s = f.program->origin; } break;
      case Top::NotKafka: if (ctx && ctx->not_kafka) { v.kind = VK::Str; v.s = ctx->note; } break;
      case Top::ErrorOffset: if (!f.ok()) { v.kind = VK::Int; v.i = f.errors.front().offset; } break;
      case Top::ErrorReason: if (!f.ok()) { v.kind = VK::Str; v.s = f.errors.front().reason; } break;
      default: break;
    }
    const bool absent = v.kind == VK::Null;
    switch (a.op) {
      case Op::Exists: case Op::NotNull: return !absent && (!v.boolean || v.i);
      case Op::IsNull:
        // apiKey, apiVersion and apiName are null (not absent) in -T json when the api is unknown.
        return absent && (a.path.top == Top::ApiKey || a.path.top == Top::ApiVersion || a.path.top == Top::ApiName);
      case Op::Ne: return !absent && !test_value(a, v, *ps, api);
      default: return !absent && test_value(a, v, *ps, api);
    }
  }
};

namespace {

// ---------------------------------------------------------------- parser

class Parser {
 public:
  Parser(std::string_view expr, Program& p, CompileError& err) : toks_(lex(expr)), p_(p), err_(err) {
    err_.expression = std::string(expr);
  }

  bool parse() {
    if (!toks_.empty() && toks_.back().kind == Tok::Bad) {
      const Token& t = toks_.back();
      return fail(t.pos, t.text);
    }
    if (peek().kind == Tok::End) return fail(0, "empty filter");
    int n = or_expr();
    if (n < 0) return false;
    if (peek().kind != Tok::End) return fail(peek().pos, "expected && (and), || (or) or the end of the filter here");
    p_.root = n;
    return true;
  }

  bool fail(size_t pos, std::string msg) {
    if (failed_) return false;
    failed_ = true;
    err_.column = pos;
    err_.message = std::move(msg);
    return false;
  }

 private:
  const Token& peek() const { return toks_[i_]; }
  const Token& take() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }

  int node(Program::ExprNode::Kind k, int a, int b = -1, int atom = -1) {
    p_.nodes.push_back({k, a, b, atom});
    return static_cast<int>(p_.nodes.size() - 1);
  }

  int or_expr() {
    int l = and_expr();
    while (l >= 0 && peek().kind == Tok::Or) {
      take();
      int r = and_expr();
      if (r < 0) return -1;
      l = node(Program::ExprNode::Or, l, r);
    }
    return l;
  }
  int and_expr() {
    int l = not_expr();
    while (l >= 0 && peek().kind == Tok::And) {
      take();
      int r = not_expr();
      if (r < 0) return -1;
      l = node(Program::ExprNode::And, l, r);
    }
    return l;
  }
  int not_expr() {
    if (peek().kind == Tok::Not) {
      take();
      int a = not_expr();
      return a < 0 ? -1 : node(Program::ExprNode::Not, a);
    }
    return primary();
  }
  int primary() {
    const Token& t = peek();
    if (t.kind == Tok::LParen) {
      take();
      int n = or_expr();
      if (n < 0) return -1;
      if (peek().kind != Tok::RParen) { fail(peek().pos, "expected ) to close the ( at column " + std::to_string(t.pos + 1)); return -1; }
      take();
      return n;
    }
    if (t.kind != Tok::Ident) {
      fail(t.pos, t.kind == Tok::End ? "expected a field path, error, malformed or ( at the end of the filter"
                                     : "expected a field path, error, malformed or ( here");
      return -1;
    }
    return comparison();
  }

  bool value(Literal& lit, const char* after) {
    const Token& t = peek();
    lit.column = t.pos;
    switch (t.kind) {
      case Tok::Number: {
        lit.s = t.text;
        const char* b = t.text.data();
        const char* e = b + t.text.size();
        bool neg = *b == '-';
        const char* digits = neg ? b + 1 : b;
        int64_t iv = 0;
        std::from_chars_result r{};
        if (e - digits > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
          r = std::from_chars(digits + 2, e, iv, 16);
        else
          r = std::from_chars(digits, e, iv);
        if (r.ec == std::errc() && r.ptr == e) {
          lit.kind = Literal::Int;
          lit.i = neg ? -iv : iv;
        } else {
          double dv = 0;
          auto rf = std::from_chars(b, e, dv);
          if (rf.ec != std::errc() || rf.ptr != e) return fail(t.pos, "bad number " + t.text);
          lit.kind = Literal::Float;
          lit.f = dv;
        }
        break;
      }
      case Tok::String: lit.kind = Literal::Str; lit.s = t.text; break;
      case Tok::Ident:
        lit.s = t.text;
        lit.kind = t.text == "null" ? Literal::Null : Literal::Word;
        break;
      default:
        return fail(t.pos, std::string("expected a value after ") + after +
                               (t.kind == Tok::End ? " at the end of the filter" : " here"));
    }
    take();
    return true;
  }

  int comparison() {
    const Token& t = take();
    auto a = std::make_unique<Atom>();
    a->path.text = t.text;
    a->path.column = t.pos;
    const Tok next = peek().kind;
    const bool has_op = next == Tok::Eq || next == Tok::Ne || next == Tok::Lt || next == Tok::Le || next == Tok::Gt ||
                        next == Tok::Ge || next == Tok::Contains || next == Tok::Matches || next == Tok::In;
    if (t.text == "error" || t.text == "malformed") {
      if (has_op) {
        fail(t.pos, t.text + " is a shorthand that takes no operator (compare error.reason or error.offset, "
                             "the decode error's fields)");
        return -1;
      }
      a->op = t.text == "error" ? Op::Error : Op::Malformed;
      return add(std::move(a));
    }
    if (!parse_path(t.text, a->path)) {
      fail(t.pos, "unknown path '" + t.text + "'");
      unknown_top_ = true;
      return -1;
    }
    if (!has_op) { a->op = Op::Exists; return add(std::move(a)); }
    const Token& opt = take();
    const char* opname = "==";
    switch (opt.kind) {
      case Tok::Eq: a->op = Op::Eq; break;
      case Tok::Ne: a->op = Op::Ne; opname = "!="; break;
      case Tok::Lt: a->op = Op::Lt; opname = "<"; break;
      case Tok::Le: a->op = Op::Le; opname = "<="; break;
      case Tok::Gt: a->op = Op::Gt; opname = ">"; break;
      case Tok::Ge: a->op = Op::Ge; opname = ">="; break;
      case Tok::Contains: a->op = Op::Contains; opname = "contains"; break;
      case Tok::Matches: a->op = Op::Matches; opname = "matches"; break;
      default: a->op = Op::In; opname = "in"; break;
    }
    if (a->op == Op::In) {
      if (peek().kind != Tok::LBrace) { fail(peek().pos, "expected { after in"); return -1; }
      const size_t open = peek().pos;
      take();
      while (peek().kind != Tok::RBrace) {
        if (peek().kind == Tok::End) { fail(peek().pos, "expected } to close the { at column " + std::to_string(open + 1)); return -1; }
        if (peek().kind == Tok::Comma) { take(); continue; }
        Member m;
        if (!value(m.lo, "in {")) return -1;
        if (peek().kind == Tok::DotDot) {
          take();
          if (!value(m.hi, "..")) return -1;
          m.range = true;
        }
        if (m.lo.kind == Literal::Null) { fail(m.lo.column, "null cannot be a member of a set"); return -1; }
        a->set.push_back(std::move(m));
      }
      take();
      if (a->set.empty()) { fail(open, "empty set"); return -1; }
      return add(std::move(a));
    }
    if (!value(a->lit, opname)) return -1;
    if (a->lit.kind == Literal::Null) {
      if (a->op != Op::Eq && a->op != Op::Ne) { fail(a->lit.column, std::string("null compares only with == and !=, not ") + opname); return -1; }
      a->op = a->op == Op::Eq ? Op::IsNull : Op::NotNull;
    }
    if ((a->op == Op::Contains || a->op == Op::Matches) && a->lit.kind != Literal::Str && a->lit.kind != Literal::Word) {
      fail(a->lit.column, std::string(opname) + " needs a string");
      return -1;
    }
    if (a->op == Op::Matches) {
      std::string pattern = a->lit.s;
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (pattern.rfind("(?i)", 0) == 0) { pattern = pattern.substr(4); flags |= std::regex::icase; }
      try {
        a->re = std::regex(pattern, flags);
      } catch (const std::regex_error& e) {
        fail(a->lit.column, std::string("bad regular expression: ") + e.what());
        return -1;
      }
    }
    return add(std::move(a));
  }

  int add(std::unique_ptr<Atom> a) {
    p_.atoms.push_back(std::move(a));
    return node(Program::ExprNode::Atom, -1, -1, static_cast<int>(p_.atoms.size() - 1));
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  Program& p_;
  CompileError& err_;
  bool failed_ = false;

 public:
  bool unknown_top_ = false;
};

std::string known_top_names() {
  std::string s;
  for (const auto& [name, top] : kTopNames) {
    if (!s.empty()) s += ", ";
    s += name;
    if (top == Top::Header || top == Top::Body) s += ".PATH";
  }
  return s + ", error, malformed; request.PATH for a response's request";
}

// The apis an expression names with apiName == X / apiKey == N (or in {...}).
// With only_required, just the atoms every match must satisfy (the and-chain
// at the top of the expression), so that a path absent from those apis can
// never match.
std::set<int16_t> named_apis(const Program& p, const ProgramSet& ps, bool only_required = false) {
  std::set<int16_t> out;
  std::set<int> required;
  std::vector<int> todo{p.root};
  while (!todo.empty()) {
    const auto& e = p.nodes[static_cast<size_t>(todo.back())];
    todo.pop_back();
    if (e.kind == Program::ExprNode::And) { todo.push_back(e.a); todo.push_back(e.b); }
    if (e.kind == Program::ExprNode::Atom) required.insert(e.atom);
  }
  for (size_t i = 0; i < p.atoms.size(); ++i) {
    const auto& a = p.atoms[i];
    if (only_required && (!required.count(static_cast<int>(i)) || a->path.request)) continue;
    if (a->path.top != Top::ApiName && a->path.top != Top::ApiKey) continue;
    auto one = [&](const Literal& l) {
      const MessageProgram* m = nullptr;
      if (l.kind == Literal::Int) m = ps.find_api(std::to_string(l.i));
      else if (l.kind == Literal::Str || l.kind == Literal::Word) m = ps.find_api(l.s);
      if (m) out.insert(m->api_key);
    };
    if (a->op == Op::Eq) one(a->lit);
    if (a->op == Op::In) for (const auto& m : a->set) if (!m.range) one(m.lo);
  }
  return out;
}

std::string paths_hint(const ProgramSet& ps, const std::set<int16_t>& apis, Top top) {
  if (apis.empty())
    return "paths are the JSON names of 'kwire decode -T json' (header.clientId, body.groups.groupId); "
           "'kwire specs NAME' lists an api's fields, and naming the api in the filter (apiName == NAME) "
           "lists its paths here";
  std::string out;
  for (int16_t key : apis) {
    for (Direction d : {Direction::Request, Direction::Response}) {
      const MessageProgram* m = ps.find_api(std::to_string(key));
      std::vector<std::string> paths;
      if (top == Top::Header) {
        std::set<std::string> seen;
        if (d == Direction::Request)
          for (int v = 0; v < 3; ++v) all_paths(ps, ps.field(ps.request_header(v)).sub, "header", paths, seen);
        else
          for (int v = 0; v < 2; ++v) all_paths(ps, ps.field(ps.response_header(v)).sub, "header", paths, seen);
      } else {
        paths = api_paths(ps, key, d);
      }
      out += "paths of " + std::string(m ? m->api_name : "?") + (d == Direction::Request ? " requests" : " responses") +
             " (all versions):\n";
      for (const auto& p : paths) out += "  " + p + "\n";
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Checks each path against the program set, and that values fit the fields.
bool check(Program& p, const ProgramSet& ps, CompileError& err) {
  const std::set<int16_t> apis = named_apis(p, ps);
  const std::set<int16_t> required_apis = named_apis(p, ps, true);
  for (auto& ap : p.atoms) {
    Atom& a = *ap;
    if (a.op == Op::Error || a.op == Op::Malformed) continue;
    auto fail = [&](size_t col, std::string msg, std::string hint = {}) {
      err.column = col;
      err.message = std::move(msg);
      err.hint = std::move(hint);
      return false;
    };
    std::vector<Literal*> lits;
    if (a.op == Op::In) for (auto& m : a.set) { lits.push_back(&m.lo); if (m.range) lits.push_back(&m.hi); }
    else if (a.op != Op::Exists && a.op != Op::IsNull && a.op != Op::NotNull) lits.push_back(&a.lit);
    const bool pattern = a.op == Op::Contains || a.op == Op::Matches;

    if (a.path.top != Top::Header && a.path.top != Top::Body) {
      for (Literal* l : lits) {
        const bool word = l->kind == Literal::Word || l->kind == Literal::Str;
        if (pattern) break;
        switch (a.path.top) {
          case Top::ApiKey:
            if (word) {
              const MessageProgram* m = ps.find_api(l->s);
              if (!m) return fail(l->column, "no API named " + l->s + " (kwire specs lists them)");
              l->kind = Literal::Int;
              l->i = m->api_key;
            }
            break;
          case Top::ApiName:
            if (word && !ps.find_api(l->s)) return fail(l->column, "no API named " + l->s + " (kwire specs lists them)");
            if (word) {  // names in any case, as --api takes them
              l->s = std::string(ps.find_api(l->s)->api_name);
              l->kind = Literal::Str;
            }
            break;
          case Top::Direction:
            if (!word || (l->s != "request" && l->s != "response"))
              return fail(l->column, "direction is request or response, not " + l->s);
            break;
          case Top::Unmatched: case Top::Guessed:
            if (!(word && (l->s == "true" || l->s == "false")) && l->kind != Literal::Int)
              return fail(l->column, a.path.text + " is true or false, not " + l->s);
            break;
          case Top::Frame: case Top::Message: case Top::Time: case Top::CorrelationId: case Top::ApiVersion:
          case Top::ErrorOffset:
            if (word) return fail(l->column, a.path.text + " is a number, not " + l->s);
            break;
          default: break;
        }
      }
      if ((a.op == Op::Contains || a.op == Op::Matches) &&
          a.path.top != Top::Src && a.path.top != Top::Dst && a.path.top != Top::ApiName &&
          a.path.top != Top::Direction && a.path.top != Top::Overlay && a.path.top != Top::NotKafka &&
          a.path.top != Top::ErrorReason)
        return fail(a.path.column, a.path.text + " is not a string: contains and matches take strings");
      continue;
    }
    if (a.path.comps.empty()) {
      if (!lits.empty()) return fail(a.path.column, a.path.text + " is a struct: compare one of its fields");
      continue;
    }
    // Leaves this path names in any layout of the program set.
    std::map<uint32_t, std::string_view> leaves;  // desc -> an api name using it
    auto try_root = [&](uint32_t root, std::string_view api) {
      auto ch = resolve(ps, root, a.path.comps);
      if (!ch) return;
      for (uint32_t d : ch->back()) leaves.emplace(d, api);
    };
    if (a.path.top == Top::Header) {
      for (int v = 0; v < 3; ++v) try_root(ps.request_header(v), {});
      for (int v = 0; v < 2; ++v) try_root(ps.response_header(v), {});
    } else {
      for (const auto& m : ps.messages()) try_root(m.root, m.api_name);
    }
    if (leaves.empty()) {
      return fail(a.path.column, "unknown path '" + a.path.text + "': no message has it",
                  paths_hint(ps, apis, a.path.top));
    }
    if (a.path.top == Top::Body && !required_apis.empty()) {
      // Every match is a message of these apis: the path must be theirs.
      bool theirs = false;
      for (const auto& m : ps.messages())
        if (!theirs && required_apis.count(m.api_key)) theirs = resolve(ps, m.root, a.path.comps).has_value();
      if (!theirs) {
        std::string names;
        for (int16_t k : required_apis) {
          const MessageProgram* m = ps.find_api(std::to_string(k));
          names += (names.empty() ? "" : " or ") + std::string(m ? m->api_name : "?");
        }
        return fail(a.path.column, "unknown path '" + a.path.text + "': no " + names + " message has it",
                    paths_hint(ps, required_apis, a.path.top));
      }
    }
    bool containers = true;
    for (const auto& [d, api] : leaves) {
      const FieldDesc& fd = ps.field(d);
      const bool container = fd.type == WireType::Struct || fd.type == WireType::Records ||
                             (fd.type == WireType::Array && fd.elem == WireType::Struct);
      containers = containers && container;
    }
    if (containers && !lits.empty())
      return fail(a.path.column, a.path.text + " is a struct or array of structs: compare one of its fields");
    for (const Literal* l : lits) {
      if (pattern) break;
      if (l->kind != Literal::Word && l->kind != Literal::Str) continue;
      bool fits = false;
      bool numeric_only = true;
      for (const auto& [d, api] : leaves) {
        const FieldDesc& fd = ps.field(d);
        WireType t = fd.type == WireType::Array ? fd.elem : fd.type;
        if (!is_integer(t) && t != WireType::Bool && t != WireType::Float64 && t != WireType::Varint &&
            t != WireType::Varlong) {
          numeric_only = false;
          fits = true;
          break;
        }
        if (t == WireType::Float64) continue;
        if (word_value(ps, api, fd, l->s, t == WireType::Bool)) { fits = true; break; }
      }
      if (!fits && numeric_only) {
        const FieldDesc& fd = ps.field(leaves.begin()->first);
        std::string kinds = is_error_code_field(fd) ? "an error code name as Kafka spells it (NONE, UNKNOWN_TOPIC_OR_PARTITION, ...) or a number"
                                                    : "a number or a documented code name";
        return fail(l->column, "'" + l->s + "' is not a value of " + a.path.text + ": it takes " + kinds);
      }
    }
  }
  return true;
}

}  // namespace

std::string CompileError::format() const {
  std::string out = message + " (column " + std::to_string(column + 1) + ")\n  " + expression + "\n  " +
                    std::string(column, ' ') + "^";
  if (!hint.empty()) out += "\n" + hint;
  return out;
}

Filter::Filter() : p_(std::make_unique<Program>()) {}
Filter::~Filter() = default;
Filter::Filter(Filter&&) noexcept = default;
Filter& Filter::operator=(Filter&&) noexcept = default;

std::optional<Filter> Filter::compile(std::string_view expr, const ProgramSet& ps, CompileError& error) {
  Filter f;
  Program& p = *f.p_;
  p.ps = &ps;
  p.expr = std::string(expr);
  Parser parser(expr, p, error);
  if (!parser.parse()) {
    if (parser.unknown_top_)
      error.hint = "a path starts with one of: " + known_top_names();
    return std::nullopt;
  }
  if (!check(p, ps, error)) return std::nullopt;
  for (auto& a : p.atoms)
    if (a->path.request) a->req_index = p.request_atoms++;
  p.match_all = false;
  return f;
}

bool Filter::match(const Frame& f, const FrameContext& ctx, const Frame* request, const FrameContext* request_ctx) const {
  if (p_->match_all) return true;
  return p_->eval(p_->root, Program::Env{&f, &ctx, request, request_ctx, nullptr});
}

bool Filter::uses_request() const { return p_->request_atoms > 0; }
const std::string& Filter::expression() const { return p_->expr; }

FilterSelector::FilterSelector(const Filter& f, size_t max_pending) : f_(f), max_pending_(max_pending) {}

bool FilterSelector::select(const FrameContext& ctx, const Frame& f) {
  const Program& p = *f_.p_;
  if (p.match_all) return true;
  if (p.request_atoms == 0 || ctx.not_kafka) return f_.match(f, ctx);
  const uint32_t conn = ctx.conn ? ctx.conn->id : 0;
  if (f.direction == Direction::Request) {
    if (f.api_key >= 0) {
      Held h{f.correlation_id, std::vector<bool>(static_cast<size_t>(p.request_atoms))};
      for (const auto& a : p.atoms)
        if (a->path.request) h.bits[static_cast<size_t>(a->req_index)] = p.atom(*a, f, &ctx);
      auto& list = pending_[conn];
      if (list.size() >= max_pending_) list.pop_front();
      list.push_back(std::move(h));
      return p.eval(p.root, Program::Env{&f, &ctx, nullptr, nullptr, &list.back().bits});
    }
    return f_.match(f, ctx);
  }
  // A response: the facts of its request, which is then no longer in flight
  // (nor are older ones: responses come in request order).
  auto it = pending_.find(conn);
  if (it != pending_.end() && !ctx.unmatched) {
    auto& list = it->second;
    auto held = std::find_if(list.begin(), list.end(), [&](const Held& h) { return h.corr == f.correlation_id; });
    if (held != list.end()) {
      bits_ = std::move(held->bits);
      list.erase(list.begin(), held + 1);
      if (list.empty()) pending_.erase(it);
      return p.eval(p.root, Program::Env{&f, &ctx, nullptr, nullptr, &bits_});
    }
  }
  bits_.assign(static_cast<size_t>(p.request_atoms), false);
  return p.eval(p.root, Program::Env{&f, &ctx, nullptr, nullptr, &bits_});
}

void FilterSelector::connection_end(uint32_t conn_id) { pending_.erase(conn_id); }

size_t FilterSelector::remembered() const {
  size_t n = 0;
  for (const auto& [c, l] : pending_) n += l.size();
  return n;
}

std::vector<std::string> api_paths(const ProgramSet& ps, int16_t api_key, Direction d) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto versions = ps.versions(api_key, d);
  for (auto it = versions.rbegin(); it != versions.rend(); ++it)
    all_paths(ps, ps.field((*it)->root).sub, "body", out, seen);
  return out;
}

// ---------------------------------------------------------------- fields

bool parse_fields_option(std::string_view opt, FieldsFormat& fmt, std::string& error) {
  const auto eq = opt.find('=');
  if (eq == std::string_view::npos) { error = "-E takes NAME=VALUE, not " + std::string(opt); return false; }
  const std::string_view name = opt.substr(0, eq), v = opt.substr(eq + 1);
  auto chars = [](std::string_view s) {
    if (s == "/t") return std::string("\t");
    if (s == "/s") return std::string(" ");
    return std::string(s);
  };
  if (name == "separator") {
    if (v.empty()) { error = "-E separator= needs a character (or /t, /s)"; return false; }
    fmt.separator = chars(v);
  } else if (name == "aggregator") {
    if (v.empty()) { error = "-E aggregator= needs a character (or /s)"; return false; }
    fmt.aggregator = chars(v);
  } else if (name == "quote") {
    if (v == "d") fmt.quote = '"';
    else if (v == "s") fmt.quote = '\'';
    else if (v == "n") fmt.quote = 0;
    else { error = "-E quote= takes d, s or n, not " + std::string(v); return false; }
  } else if (name == "header") {
    if (v == "y") fmt.header = true;
    else if (v == "n") fmt.header = false;
    else { error = "-E header= takes y or n, not " + std::string(v); return false; }
  } else {
    error = "-E knows separator, aggregator, quote and header, not " + std::string(name);
    return false;
  }
  return true;
}

struct FieldExtractor::Impl {
  const ProgramSet* ps = nullptr;
  FieldsFormat fmt;
  std::vector<std::unique_ptr<PathSpec>> paths;

  void text(TextBuffer& out, std::string_view s) const {
    for (char c : s) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (fmt.quote && (c == fmt.quote || c == '\\')) { out += '\\'; out += c; }
      else out += c;
    }
  }

  void value(TextBuffer& out, const Frame& f, uint32_t idx) const {
    const Node& n = f.nodes[idx];
    if (n.is_null()) return;
    const FieldDesc& d = ps->field(n.desc);
    if (d.flags & kSensitive) { out += "<redacted>"; return; }
    switch (n.type) {
      case WireType::Bool: out += n.v.i ? "true" : "false"; return;
      case WireType::String: case WireType::VarString: text(out, n.str()); return;
      case WireType::Float64: case WireType::Uuid: case WireType::Bytes: case WireType::VarBytes:
      case WireType::Struct: case WireType::Array: case WireType::Records: {
        TextBuffer j;
        write_json_value(j, *ps, f, idx);
        std::string_view s(j.data(), j.size());
        if (s.size() >= 2 && s.front() == '"') s = s.substr(1, s.size() - 2);
        out += s;
        return;
      }
      default: append_int(out, n.v.i); return;
    }
  }
};

FieldExtractor::FieldExtractor() : p_(std::make_unique<Impl>()) {}
FieldExtractor::~FieldExtractor() = default;
FieldExtractor::FieldExtractor(FieldExtractor&&) noexcept = default;
FieldExtractor& FieldExtractor::operator=(FieldExtractor&&) noexcept = default;

std::optional<FieldExtractor> FieldExtractor::compile(const std::vector<std::string>& paths, const FieldsFormat& fmt,
                                                      const ProgramSet& ps, CompileError& error) {
  FieldExtractor fx;
  fx.p_->ps = &ps;
  fx.p_->fmt = fmt;
  for (const auto& text : paths) {
    // Compile "PATH" as a filter to check it the same way.
    error = {};
    error.expression = text;
    auto spec = std::make_unique<PathSpec>();
    spec->text = text;
    if (text == "error" || text == "malformed" || !parse_path(text, *spec)) {
      error.message = "unknown path '" + text + "' for -e";
      error.hint = "a path starts with one of: " + known_top_names();
      return std::nullopt;
    }
    if (spec->request) {
      error.message = "-e takes the message's own paths, not request.*";
      return std::nullopt;
    }
    auto f = Filter::compile(text, ps, error);
    if (!f) return std::nullopt;
    fx.p_->paths.push_back(std::move(spec));
  }
  return fx;
}

void FieldExtractor::append_header(TextBuffer& out) const {
  bool first = true;
  for (const auto& p : p_->paths) {
    if (!first) out += p_->fmt.separator;
    first = false;
    if (p_->fmt.quote) out += p_->fmt.quote;
    out += p->text;
    if (p_->fmt.quote) out += p_->fmt.quote;
  }
  out += '\n';
}

void FieldExtractor::append_line(TextBuffer& out, const Frame& f, const FrameContext& ctx) const {
  const Impl& im = *p_;
  bool first = true;
  for (const auto& pp : im.paths) {
    const PathSpec& p = *pp;
    if (!first) out += im.fmt.separator;
    first = false;
    if (im.fmt.quote) out += im.fmt.quote;
    if (p.top == Top::Header || p.top == Top::Body) {
      bool any = false;
      auto sep = [&]() {
        if (any) out += im.fmt.aggregator;
        any = true;
      };
      path_nodes(*im.ps, p, f, [&](uint32_t idx) {
        const Node& n = f.nodes[idx];
        if (n.type == WireType::Array && !n.is_null()) {
          for (uint32_t e : Children(f, idx)) { sep(); im.value(out, f, e); }
        } else {
          sep();
          im.value(out, f, idx);
        }
        return false;
      });
    } else {
      char t[48];
      switch (p.top) {
        case Top::Frame: append_int(out, static_cast<int64_t>(ctx.packet.number ? ctx.packet.number : ctx.number)); break;
        case Top::Message: append_int(out, static_cast<int64_t>(ctx.number)); break;
        case Top::Time:
          snprintf(t, sizeof t, "%lld.%06d", static_cast<long long>(ctx.packet.ts_sec), ctx.packet.ts_usec);
          out += t;
          break;
        case Top::Src: out += ctx.src.str(); break;
        case Top::Dst: out += ctx.dst.str(); break;
        case Top::Direction: out += f.direction == Direction::Request ? "request" : "response"; break;
        case Top::ApiKey: if (f.api_key >= 0) append_int(out, f.api_key); break;
        case Top::ApiVersion: if (f.api_key >= 0) append_int(out, f.api_version); break;
        case Top::ApiName: if (f.program) out += f.program->api_name; break;
        case Top::CorrelationId: append_int(out, f.correlation_id); break;
        case Top::Unmatched: if (ctx.unmatched) out += "true"; break;
        case Top::Guessed: if (f.guessed) out += "true"; break;
        case Top::Overlay: if (f.program && f.program->overlay) im.text(out, f.program->origin); break;
        case Top::NotKafka: if (ctx.not_kafka) im.text(out, ctx.note); break;
        case Top::ErrorOffset: if (!f.ok()) append_int(out, f.errors.front().offset); break;
        case Top::ErrorReason: if (!f.ok()) im.text(out, f.errors.front().reason); break;
        default: break;
      }
    }
    if (im.fmt.quote) out += im.fmt.quote;
  }
  out += '\n';
}

}  // namespace kwire::filter
