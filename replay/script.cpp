#include "replay/script.hpp"

#include <lua.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "wire/wire.hpp"

// Lua reports errors with longjmp. No C++ object with a destructor may be
// alive in a frame that a Lua error unwinds: every lua_CFunction below only
// calls Impl members that return a status (and leave the reason in Impl::err)
// and raises the error itself once they have returned.

namespace kwire::replay {

namespace {

constexpr const char* kNodeMeta = "kwire.node";
constexpr const char* kNullMeta = "kwire.null";
constexpr const char* kUnknownTagged = "_unknownTaggedFields";
constexpr uint32_t kNone = UINT32_MAX;

const char kStd64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char kUrl64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Base64 text (no padding) in `alphabet` to bytes; false on a character
// outside it, a length no encoding has, or set bits past the last byte (so
// that each byte string has exactly one text).
bool decode64(std::string_view s, const char* alphabet, std::string& out) {
  int8_t value[256];
  std::memset(value, -1, sizeof value);
  for (int i = 0; i < 64; ++i) value[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  if (s.size() % 4 == 1) return false;
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int8_t v = value[static_cast<uint8_t>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return (acc & ((1u << bits) - 1)) == 0;
}

// Standard base64 as `kwire decode -T json` writes bytes; the padding may be left out.
bool decode_base64(std::string_view s, std::string& out) {
  if (s.size() % 4 == 0) {
    for (int k = 0; k < 2 && !s.empty() && s.back() == '='; ++k) s.remove_suffix(1);
  }
  return decode64(s, kStd64, out);
}

bool decode_uuid(std::string_view s, std::string& out) {
  return s.size() == wire::kUuidTextSize && decode64(s, kUrl64, out) && out.size() == 16;
}

// A float64 as `kwire decode -T json` writes it (without the quotes of the
// non-finite ones).
std::string float_text(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, x);
  std::string out(b, r.ptr);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

bool int_range(WireType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case WireType::Int8: lo = INT8_MIN; hi = INT8_MAX; return true;
    case WireType::Int16: lo = INT16_MIN; hi = INT16_MAX; return true;
    case WireType::Int32: lo = INT32_MIN; hi = INT32_MAX; return true;
    case WireType::Int64: lo = INT64_MIN; hi = INT64_MAX; return true;
    case WireType::Uint16: lo = 0; hi = UINT16_MAX; return true;
    case WireType::Uint32: lo = 0; hi = UINT32_MAX; return true;
    default: return false;
  }
}

bool is_container(WireType t) { return t == WireType::Struct || t == WireType::Array || t == WireType::Records; }

}  // namespace

struct Script::Impl {
  // What a struct or array of a message is to Lua: a full userdata with the
  // metatable kNodeMeta.
  enum Mode : uint8_t { kEdit, kReadOnly, kInRecords };
  struct Proxy {
    Frame* frame;
    uint64_t gen;        // the hook call that made it
    uint32_t node;
    uint32_t count;      // elements of an array or records; kNone until counted
    uint32_t last_pos;   // the element (1-based) last looked up, 0 for none
    uint32_t last_node;  // and its node
    Mode mode;
    uint8_t slot;        // 0: the request or live response, 1: the recorded response
  };
  struct Undo {
    uint32_t node;
    Node old;
  };

  const ProgramSet& ps;
  std::string file;
  std::string shown;     // how Lua names the file in its messages (long names shortened)
  lua_State* L = nullptr;
  int on_request_ref = LUA_NOREF;
  int on_response_ref = LUA_NOREF;
  void* null_ptr = nullptr;   // kwire.null's userdata
  int null_ref = LUA_NOREF;   // and its registry slot
  int meta_ref = LUA_NOREF;   // the metatable of proxies
  uint64_t gen = 1;           // advances after every hook call: older proxies are stale
  int cache_ref[2] = {LUA_NOREF, LUA_NOREF};   // node index -> proxy, per frame, during a call
  std::vector<Undo> undo;
  std::vector<Expectation>* expect = nullptr;  // during on_response
  std::string err;            // why the last failing callback failed

  Impl(const ProgramSet& p, std::string f) : ps(p), file(std::move(f)) {}
  ~Impl() {
    if (L) lua_close(L);
  }

  static Impl* self(lua_State* L) { return static_cast<Impl*>(lua_touserdata(L, lua_upvalueindex(1))); }

  // Raises `err` as a Lua error at the script's current line: that of the
  // innermost Lua function, also when a library function (table.insert, ...)
  // made the assignment.
  int raise(lua_State* L) {
    lua_Debug ar;
    bool placed = false;
    for (int level = 1; !placed && lua_getstack(L, level, &ar); ++level) {
      lua_getinfo(L, "Sl", &ar);
      if (ar.currentline > 0) {
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
        placed = true;
      }
    }
    if (!placed) lua_pushliteral(L, "");
    lua_pushlstring(L, err.data(), err.size());
    lua_concat(L, 2);
    return lua_error(L);
  }

  // ---- paths -------------------------------------------------------------

  // The JSON path of a node: "header.clientId", "body.topics[0].name".
  std::string path(const Frame& f, uint32_t node) const {
    if (node == 0) return "header";
    if (node == f.body) return "body";
    const Node& n = f.nodes[node];
    uint32_t parent = n.parent;
    if (parent == node) return "?";
    std::string out = path(f, parent);
    if (f.nodes[parent].type == WireType::Struct) {
      if (n.desc != kDescUnknownTag) return out + "." + std::string(ps.field(n.desc).json_name);
      out += ".";
      out += kUnknownTagged;
      uint32_t k = 0;
      for (uint32_t c : Children(f, parent)) {
        if (c == node) break;
        if (f.nodes[c].desc == kDescUnknownTag) ++k;
      }
      return out + "[" + std::to_string(k) + "]";
    }
    uint32_t k = 0;
    for (uint32_t c : Children(f, parent)) {
      if (c == node) break;
      ++k;
    }
    return out + "[" + std::to_string(k) + "]";
  }

  bool fail(std::string why) {
    err = std::move(why);
    return false;
  }
  bool fail_at(const Frame& f, uint32_t node, const std::string& why) { return fail(path(f, node) + ": " + why); }

  // ---- proxies -----------------------------------------------------------

  Proxy* proxy_at(lua_State* L, int idx) { return static_cast<Proxy*>(luaL_testudata(L, idx, kNodeMeta)); }
  // The proxy a metamethod was called on; only debug.getmetatable can call
  // one on anything else.
  Proxy* subject(lua_State* L, int idx) {
    Proxy* p = proxy_at(L, idx);
    if (!p) {
      fail("not a kwire message");
      return nullptr;
    }
    if (p->gen != gen) {
      fail("a message can only be used during the hook call that received it");
      return nullptr;
    }
    return p;
  }
  bool is_null(lua_State* L, int idx) const {
    return lua_type(L, idx) == LUA_TUSERDATA && lua_touserdata(L, idx) == null_ptr;
  }
  void push_null(lua_State* L) { lua_rawgeti(L, LUA_REGISTRYINDEX, null_ref); }

  void new_proxy(lua_State* L, Frame* f, uint32_t node, Mode mode, uint8_t slot) {
    auto* p = static_cast<Proxy*>(lua_newuserdatauv(L, sizeof(Proxy), 0));
    *p = Proxy{f, gen, node, kNone, 0, 0, mode, slot};
    lua_rawgeti(L, LUA_REGISTRYINDEX, meta_ref);
    lua_setmetatable(L, -2);
  }

  // Pushes the proxy of a struct, array or records node inside header or
  // body; one per node and frame during a call, so that lookups by position
  // stay cheap in loops.
  void push_proxy(lua_State* L, Frame* f, uint32_t node, Mode mode, uint8_t slot) {
    if (cache_ref[slot] == LUA_NOREF) {
      lua_createtable(L, 0, 0);
      cache_ref[slot] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, cache_ref[slot]);
    if (lua_rawgeti(L, -1, node) == LUA_TUSERDATA) {
      lua_remove(L, -2);
      return;
    }
    lua_pop(L, 1);
    new_proxy(L, f, node, mode, slot);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, node);
    lua_remove(L, -2);
  }

  // Pushes a node's value as Lua sees it (see script.hpp).
  void push_value(lua_State* L, const Proxy& parent, uint32_t i) {
    const Frame& f = *parent.frame;
    const Node& n = f.nodes[i];
    if (n.is_null()) return push_null(L);
    if (ps.field(n.desc).flags & kSensitive) {
      lua_pushliteral(L, "<redacted>");
      return;
    }
    switch (n.type) {
      case WireType::Bool: lua_pushboolean(L, n.v.i != 0); return;
      case WireType::Float64: lua_pushnumber(L, n.v.f); return;
      case WireType::Uuid: {
        char b[wire::kUuidTextSize];
        lua_pushlstring(L, b, static_cast<size_t>(wire::uuid_to(b, n.v.p) - b));
        return;
      }
      case WireType::String: case WireType::VarString:
        lua_pushlstring(L, reinterpret_cast<const char*>(n.v.p), n.aux);
        return;
      case WireType::Bytes: case WireType::VarBytes: {
        luaL_Buffer buf;
        char* out = luaL_buffinitsize(L, &buf, wire::base64_size(n.aux));
        luaL_pushresultsize(&buf, static_cast<size_t>(wire::base64_to(out, n.bytes()) - out));
        return;
      }
      case WireType::Struct: case WireType::Array: case WireType::Records: {
        Mode mode = parent.mode == kReadOnly ? kReadOnly
                    : (parent.mode == kInRecords || n.type == WireType::Records) ? kInRecords : kEdit;
        return push_proxy(L, parent.frame, i, mode, parent.slot);
      }
      default: lua_pushinteger(L, n.v.i); return;
    }
  }

  // The unknown tagged fields of a struct, as a fresh {{tag=, data=}, ...}.
  void push_unknown_tagged(lua_State* L, const Frame& f, uint32_t node) {
    lua_createtable(L, 0, 0);
    lua_Integer k = 0;
    for (uint32_t c : Children(f, node)) {
      const Node& n = f.nodes[c];
      if (n.desc != kDescUnknownTag) continue;
      lua_createtable(L, 0, 2);
      lua_pushinteger(L, n.tag);
      lua_setfield(L, -2, "tag");
      luaL_Buffer buf;
      char* out = luaL_buffinitsize(L, &buf, wire::base64_size(n.aux));
      luaL_pushresultsize(&buf, static_cast<size_t>(wire::base64_to(out, n.bytes()) - out));
      lua_setfield(L, -2, "data");
      lua_rawseti(L, -2, ++k);
    }
  }

  bool has_unknown_tagged(const Frame& f, uint32_t node) const {
    for (uint32_t c : Children(f, node))
      if (f.nodes[c].desc == kDescUnknownTag) return true;
    return false;
  }

  // The child of a struct node with JSON name `key`, or kNone.
  uint32_t member(const Frame& f, uint32_t node, std::string_view key) const {
    for (uint32_t c : Children(f, node)) {
      const Node& n = f.nodes[c];
      if (n.desc != kDescUnknownTag && ps.field(n.desc).json_name == key) return c;
    }
    return kNone;
  }

  uint32_t count(Proxy& p) const {
    if (p.count == kNone) {
      const Node& n = p.frame->nodes[p.node];
      if (n.type == WireType::Array) {
        p.count = n.aux;
      } else {
        p.count = 0;
        for (uint32_t c : Children(*p.frame, p.node)) { (void)c; ++p.count; }
      }
    }
    return p.count;
  }

  // Element `pos` (1-based, within count) of an array or records node.
  uint32_t element(Proxy& p, uint32_t pos) const {
    const Frame& f = *p.frame;
    uint32_t at = 1, c = p.node + 1;
    if (p.last_pos && pos >= p.last_pos) { at = p.last_pos; c = p.last_node; }
    for (; at < pos; ++at) c = f.nodes[c].end;
    p.last_pos = pos;
    p.last_node = c;
    return c;
  }

  static bool array_like(const Node& n) { return n.type != WireType::Struct; }

  // An array index from a Lua value: an integer (or an integral float).
  static bool position(lua_State* L, int idx, lua_Integer& pos) {
    if (lua_type(L, idx) != LUA_TNUMBER) return false;
    int ok = 0;
    pos = lua_tointegerx(L, idx, &ok);
    return ok;
  }

  // __index(proxy, key)
  bool index(lua_State* L) {
    Proxy* p = subject(L, 1);
    if (!p) return false;
    const Frame& f = *p->frame;
    const Node& n = f.nodes[p->node];
    if (array_like(n)) {
      lua_Integer pos;
      if (position(L, 2, pos) && pos >= 1 && pos <= count(*p)) push_value(L, *p, element(*p, static_cast<uint32_t>(pos)));
      else lua_pushnil(L);
      return true;
    }
    if (lua_type(L, 2) != LUA_TSTRING) {
      lua_pushnil(L);
      return true;
    }
    size_t len;
    const char* s = lua_tolstring(L, 2, &len);
    std::string_view key(s, len);
    uint32_t c = member(f, p->node, key);
    if (c != kNone) push_value(L, *p, c);
    else if (key == kUnknownTagged && has_unknown_tagged(f, p->node)) push_unknown_tagged(L, f, p->node);
    else lua_pushnil(L);
    return true;
  }

  // __newindex(proxy, key, value)
  bool newindex(lua_State* L) {
    Proxy* p = subject(L, 1);
    if (!p) return false;
    if (p->mode == kReadOnly) return true;  // responses: ignored
    Frame& f = *p->frame;
    const Node& n = f.nodes[p->node];
    if (array_like(n)) {
      lua_Integer pos;
      if (p->mode == kInRecords) return fail_at(f, p->node, "inside records, which are sent as recorded");
      if (!position(L, 2, pos)) return fail_at(f, p->node, "an array is indexed by integers");
      uint32_t size = count(*p);
      if (pos < 1 || pos > size)
        return fail_at(f, p->node, "no element at Lua index " + std::to_string(pos) + " (it has " + std::to_string(size) +
                                       "); elements cannot be added or removed");
      return assign(L, *p, element(*p, static_cast<uint32_t>(pos)), 3);
    }
    if (lua_type(L, 2) != LUA_TSTRING) return fail_at(f, p->node, "field names are strings");
    size_t len;
    const char* s = lua_tolstring(L, 2, &len);
    std::string_view key(s, len);
    uint32_t c = member(f, p->node, key);
    if (c == kNone) {
      std::string where = path(f, p->node) + "." + std::string(key);
      if (p->mode == kInRecords) return fail(where + ": inside records, which are sent as recorded");
      if (key == kUnknownTagged) return fail(where + ": unknown tagged fields cannot be edited");
      const FieldDesc& d = ps.field(n.desc);
      if (d.sub >= 0) {
        const StructProgram& sp = ps.structure(static_cast<uint32_t>(d.sub));
        for (uint32_t k = 0; k < sp.tagged_count; ++k)
          if (ps.field(sp.first_tagged + k).json_name == key)
            return fail(where + ": a tagged field this message does not carry; fields cannot be added");
        return fail(where + ": no such field in " + std::string(sp.name));
      }
      return fail(where + ": no such field");
    }
    if (p->mode == kInRecords) return fail_at(f, c, "inside records, which are sent as recorded");
    return assign(L, *p, c, 3);
  }

  void save(Frame& f, uint32_t node) { undo.push_back({node, f.nodes[node]}); }

  // Writes the Lua value at `v` into node `c` of the frame being edited.
  bool assign(lua_State* L, const Proxy& parent, uint32_t c, int v) {
    Frame& f = *parent.frame;
    Node& n = f.nodes[c];
    const FieldDesc& d = ps.field(n.desc);
    const bool element = n.flags & kElement;
    if (n.desc == kDescUnknownTag) return fail_at(f, c, "unknown tagged fields cannot be edited");
    if (n.type == WireType::Records) return fail_at(f, c, "records cannot be edited; they are sent as recorded");
    if (d.flags & kSensitive) return fail_at(f, c, "a sensitive field cannot be edited");
    if (c != 0 && n.parent == 0 && !element && f.direction == Direction::Request &&
        (d.json_name == "requestApiKey" || d.json_name == "requestApiVersion"))
      return fail_at(f, c, "the api key and version decide the body's layout and cannot be edited");
    for (uint32_t a = parent.node;; a = f.nodes[a].parent) {
      if (f.nodes[a].is_null()) return fail_at(f, c, "in " + path(f, a) + ", which was set to null");
      if (f.nodes[a].parent == a) break;
    }

    if (lua_isnil(L, v))
      return fail_at(f, c, "cannot be nil: fields and elements cannot be removed (kwire.null is null)");
    if (is_null(L, v)) {
      if (element || !d.nullable() || !(is_container(n.type) || n.type == WireType::String || n.type == WireType::Bytes))
        return fail_at(f, c, "not nullable");
      if (n.is_null()) return true;
      save(f, c);
      n.flags |= kNull;
      n.aux = 0;  // no recorded marker byte or length any more
      return true;
    }
    if (is_container(n.type)) {
      Proxy* q = proxy_at(L, v);
      if (q && q->frame == parent.frame && q->node == c) return true;
      return fail_at(f, c, std::string("a ") + (n.type == WireType::Struct ? "struct" : "array") +
                               " cannot be replaced; assign to its fields" +
                               (d.nullable() && !element ? " (or kwire.null)" : ""));
    }

    const int lt = lua_type(L, v);
    auto wrong = [&](const char* want) {
      return fail_at(f, c, std::string("expected ") + want + " (" + std::string(wire_type_name(n.type)) + "), got " +
                               lua_typename(L, lt));
    };
    switch (n.type) {
      case WireType::Bool: {
        if (lt != LUA_TBOOLEAN) return wrong("a boolean");
        int64_t b = lua_toboolean(L, v) ? 1 : 0;
        if (b == n.v.i) return true;
        save(f, c);
        n.v.i = b;
        n.aux = 0;  // the canonical byte
        return true;
      }
      case WireType::Float64: {
        if (lt != LUA_TNUMBER) return wrong("a number");
        double x = static_cast<double>(lua_tonumber(L, v));
        if (std::memcmp(&x, &n.v.f, sizeof x) == 0) return true;
        save(f, c);
        n.v.f = x;
        return true;
      }
      case WireType::String: case WireType::Bytes: case WireType::Uuid: {
        if (lt != LUA_TSTRING) return wrong(n.type == WireType::Uuid ? "a uuid string" :
                                             n.type == WireType::Bytes ? "a base64 string" : "a string");
        size_t len;
        const char* s = lua_tolstring(L, v, &len);
        std::string_view text(s, len);
        std::string data;
        if (n.type == WireType::String) {
          if (len > INT16_MAX) return fail_at(f, c, std::to_string(len) + " bytes is longer than a string can be (32767)");
          data.assign(text);
        } else if (n.type == WireType::Bytes) {
          if (!decode_base64(text, data)) return fail_at(f, c, "not base64: \"" + std::string(text.substr(0, 40)) + "\"");
          if (data.size() > INT32_MAX) return fail_at(f, c, "too many bytes");
        } else if (!decode_uuid(text, data)) {
          return fail_at(f, c, "not a uuid (22 characters of URL-safe base64): \"" + std::string(text.substr(0, 40)) + "\"");
        }
        if (!n.is_null() && n.str() == data) return true;
        save(f, c);
        std::string_view kept = f.own(std::move(data));
        n.v.p = reinterpret_cast<const uint8_t*>(kept.data());
        n.aux = static_cast<uint32_t>(kept.size());
        n.flags &= static_cast<uint8_t>(~kNull);
        return true;
      }
      default: break;
    }
    int64_t lo, hi;
    if (!int_range(n.type, lo, hi)) return fail_at(f, c, "a " + std::string(wire_type_name(n.type)) + " cannot be edited");
    if (lt != LUA_TNUMBER) return wrong("an integer");
    int ok = 0;
    lua_Integer x = lua_tointegerx(L, v, &ok);
    if (!ok) return fail_at(f, c, float_text(lua_tonumber(L, v)) + " is not an integer");
    if (x < lo || x > hi)
      return fail_at(f, c, std::to_string(x) + " is out of range for " + std::string(wire_type_name(n.type)) + " (" +
                               std::to_string(lo) + ".." + std::to_string(hi) + ")");
    if (x == n.v.i) return true;
    save(f, c);
    n.v.i = x;
    if (c != 0 && n.parent == 0 && !element && d.json_name == "correlationId") f.correlation_id = static_cast<int32_t>(x);
    return true;
  }

  // __len(proxy)
  bool length(lua_State* L) {
    Proxy* p = subject(L, 1);
    if (!p) return false;
    lua_pushinteger(L, array_like(p->frame->nodes[p->node]) ? count(*p) : 0);
    return true;
  }

  // __tostring(proxy): "struct body.topology", "array body.topics (2 elements)"
  bool describe(lua_State* L) {
    Proxy* p = proxy_at(L, 1);
    if (!p) return fail("not a kwire message");
    if (p->gen != gen) {
      lua_pushliteral(L, "kwire message (expired)");
      return true;
    }
    const Node& n = p->frame->nodes[p->node];
    std::string s = n.type == WireType::Struct ? "struct " : n.type == WireType::Array ? "array " : "records ";
    s += path(*p->frame, p->node);
    if (array_like(n)) s += " (" + std::to_string(count(*p)) + " elements)";
    lua_pushlstring(L, s.data(), s.size());
    return true;
  }

  // __pairs(proxy): the iterator below, the proxy, nil.
  bool pairs(lua_State* L) {
    Proxy* p = subject(L, 1);
    if (!p) return false;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushinteger(L, p->node + 1);
    lua_pushinteger(L, array_like(p->frame->nodes[p->node]) ? 1 : 0);
    lua_pushcclosure(L, &entry<&Impl::next, 2>, 4);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return true;
  }

  // The iterator of pairs(proxy). Upvalues: Impl, the proxy, the next child
  // node, the next position (arrays) or whether _unknownTaggedFields came (structs).
  bool next(lua_State* L) {
    Proxy* p = subject(L, lua_upvalueindex(2));
    if (!p) return false;
    const Frame& f = *p->frame;
    const Node& n = f.nodes[p->node];
    auto c = static_cast<uint32_t>(lua_tointeger(L, lua_upvalueindex(3)));
    lua_Integer extra = lua_tointeger(L, lua_upvalueindex(4));
    if (array_like(n)) {
      if (extra > count(*p)) {
        lua_pushnil(L);
        lua_pushnil(L);
        return true;
      }
      lua_pushinteger(L, static_cast<lua_Integer>(f.nodes[c].end));
      lua_replace(L, lua_upvalueindex(3));
      lua_pushinteger(L, extra + 1);
      lua_replace(L, lua_upvalueindex(4));
      lua_pushinteger(L, extra);
      push_value(L, *p, c);
      return true;
    }
    // Unknown tagged fields come once, where the first of them is.
    while (c < n.end && f.nodes[c].desc == kDescUnknownTag && extra) c = f.nodes[c].end;
    if (c >= n.end) {
      lua_pushnil(L);
      lua_pushnil(L);
      return true;
    }
    lua_pushinteger(L, static_cast<lua_Integer>(f.nodes[c].end));
    lua_replace(L, lua_upvalueindex(3));
    if (f.nodes[c].desc == kDescUnknownTag) {
      lua_pushinteger(L, 1);
      lua_replace(L, lua_upvalueindex(4));
      lua_pushstring(L, kUnknownTagged);
      push_unknown_tagged(L, f, p->node);
      return true;
    }
    const std::string_view name = ps.field(f.nodes[c].desc).json_name;
    lua_pushlstring(L, name.data(), name.size());
    push_value(L, *p, c);
    return true;
  }

  // ---- Lua entry points (no C++ objects with destructors in them) --------

  template <bool (Impl::*Method)(lua_State*), int Results>
  static int entry(lua_State* L) {
    Impl* s = self(L);
    bool ok;
    try {
      ok = (s->*Method)(L);
    } catch (const std::exception& e) {
      s->err = e.what();
      ok = false;
    }
    if (!ok) return s->raise(L);
    return Results;
  }

  static int l_null_text(lua_State* L) {
    lua_pushliteral(L, "null");
    return 1;
  }

  // kwire.log(...) and print(...): one line on stderr.
  static int l_log(lua_State* L) {
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "script: ");
    for (int i = 1; i <= n; ++i) {
      if (i > 1) luaL_addchar(&b, '\t');
      luaL_tolstring(L, i, nullptr);
      luaL_addvalue(&b);
    }
    luaL_addchar(&b, '\n');
    luaL_pushresult(&b);
    size_t len;
    const char* s = lua_tolstring(L, -1, &len);
    fwrite(s, 1, len, stderr);
    fflush(stderr);
    return 0;
  }

  // kwire.expect(path, value)
  bool add_expectation(lua_State* L) {
    if (!expect) return fail("kwire.expect: only on_response can add expectations");
    if (lua_type(L, 1) != LUA_TSTRING) return fail(std::string("kwire.expect: the path must be a string, got ") + luaL_typename(L, 1));
    size_t plen;
    const char* ps_ = lua_tolstring(L, 1, &plen);
    if (plen == 0) return fail("kwire.expect: empty path");
    Expectation e;
    e.path.assign(ps_, plen);
    switch (lua_type(L, 2)) {
      case LUA_TNUMBER:
        if (lua_isinteger(L, 2)) e.value = std::to_string(lua_tointeger(L, 2));
        else e.value = float_text(lua_tonumber(L, 2));
        break;
      case LUA_TBOOLEAN: e.value = lua_toboolean(L, 2) ? "true" : "false"; break;
      case LUA_TSTRING: {
        size_t len;
        const char* s = lua_tolstring(L, 2, &len);
        e.value.assign(s, len);
        break;
      }
      default:
        if (is_null(L, 2)) { e.value = "null"; break; }
        return fail(std::string("kwire.expect: ") + e.path + ": the value must be a number, boolean, string or kwire.null, got " +
                    luaL_typename(L, 2));
    }
    expect->push_back(std::move(e));
    return true;
  }

  // ---- loading and calls -------------------------------------------------

  bool open(std::string& error) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      error = file + ": cannot open: " + std::strerror(errno);
      return false;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      error = file + ": cannot read";
      return false;
    }
    L = luaL_newstate();
    if (!L) {
      error = file + ": cannot create a Lua state";
      return false;
    }
    luaL_openlibs(L);
    // Nothing that starts programs or ends this one.
    lua_getglobal(L, "os");
    lua_pushnil(L);
    lua_setfield(L, -2, "execute");
    lua_pushnil(L);
    lua_setfield(L, -2, "exit");
    lua_pop(L, 1);
    lua_getglobal(L, "io");
    lua_pushnil(L);
    lua_setfield(L, -2, "popen");
    lua_pop(L, 1);
    lua_pushcfunction(L, &Impl::l_log);
    lua_setglobal(L, "print");

    // kwire.null: a userdata of its own that prints as "null".
    lua_newuserdatauv(L, 1, 0);
    null_ptr = lua_touserdata(L, -1);
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, &Impl::l_null_text);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, kNullMeta);
    lua_setfield(L, -2, "__name");
    lua_pushstring(L, kNullMeta);
    lua_setfield(L, -2, "__metatable");  // getmetatable(kwire.null) says what it is
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    null_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    lua_createtable(L, 0, 3);
    lua_insert(L, -2);
    lua_setfield(L, -2, "null");
    lua_pushcfunction(L, &Impl::l_log);
    lua_setfield(L, -2, "log");
    lua_pushlightuserdata(L, this);
    lua_pushcclosure(L, &entry<&Impl::add_expectation, 0>, 1);
    lua_setfield(L, -2, "expect");
    lua_setglobal(L, "kwire");

    luaL_newmetatable(L, kNodeMeta);
    const luaL_Reg meta[] = {
        {"__index", &entry<&Impl::index, 1>},
        {"__newindex", &entry<&Impl::newindex, 0>},
        {"__len", &entry<&Impl::length, 1>},
        {"__tostring", &entry<&Impl::describe, 1>},
        {"__pairs", &entry<&Impl::pairs, 3>},
        {nullptr, nullptr},
    };
    lua_pushlightuserdata(L, this);
    luaL_setfuncs(L, meta, 1);
    lua_pushliteral(L, "kwire message");
    lua_setfield(L, -2, "__metatable");
    meta_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    // How Lua will name the file in messages: asked of an empty chunk of the
    // same name, since a syntax error leaves no function to ask.
    const std::string chunk = "@" + file;
    lua_Debug ar;
    if (luaL_loadbufferx(L, "", 0, chunk.c_str(), "t") == LUA_OK && lua_getinfo(L, ">S", &ar)) shown = ar.short_src;
    else shown = file;
    if (luaL_loadbufferx(L, text.data(), text.size(), chunk.c_str(), "t") != LUA_OK) {
      error = message();
      return false;
    }
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
      error = message();
      return false;
    }
    if (!hook("on_request", on_request_ref, error) || !hook("on_response", on_response_ref, error)) return false;
    if (on_request_ref == LUA_NOREF && on_response_ref == LUA_NOREF) {
      error = file + ": defines neither on_request nor on_response";
      return false;
    }
    return true;
  }

  bool hook(const char* name, int& ref, std::string& error) {
    int t = lua_getglobal(L, name);
    if (t == LUA_TFUNCTION) {
      ref = luaL_ref(L, LUA_REGISTRYINDEX);
      return true;
    }
    lua_pop(L, 1);
    if (t == LUA_TNIL) return true;
    error = file + ": " + name + " is a " + lua_typename(L, t) + ", not a function";
    return false;
  }

  // The error on top of the stack, popped, with the file named in full.
  std::string message() {
    std::string m;
    if (const char* s = lua_tostring(L, -1)) {
      m = s;
      if (shown != file && m.compare(0, shown.size(), shown) == 0 && m.size() > shown.size() && m[shown.size()] == ':')
        m = file + m.substr(shown.size());
    } else {
      m = file + ": a hook raised a " + luaL_typename(L, -1) + " as its error";
    }
    lua_pop(L, 1);
    return m;
  }

  // msg = {apiKey, apiName, apiVersion, correlationId, direction, header, body}
  void push_message(const Frame& f, Mode mode, uint8_t slot) {
    Frame* fp = const_cast<Frame*>(&f);  // written only through kEdit proxies
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, f.api_key);
    lua_setfield(L, -2, "apiKey");
    if (f.program) lua_pushlstring(L, f.program->api_name.data(), f.program->api_name.size());
    else push_null(L);
    lua_setfield(L, -2, "apiName");
    lua_pushinteger(L, f.api_version);
    lua_setfield(L, -2, "apiVersion");
    lua_pushinteger(L, f.correlation_id);
    lua_setfield(L, -2, "correlationId");
    if (f.direction == Direction::Request) lua_pushliteral(L, "request");
    else lua_pushliteral(L, "response");
    lua_setfield(L, -2, "direction");
    // header and body are reached only through msg: no need to cache them.
    if (!f.nodes.empty()) new_proxy(L, fp, 0, mode, slot);
    else push_null(L);
    lua_setfield(L, -2, "header");
    if (f.body) new_proxy(L, fp, f.body, mode, slot);
    else push_null(L);
    lua_setfield(L, -2, "body");
  }

  void push_context(const HookContext& ctx) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, static_cast<lua_Integer>(ctx.frame));
    lua_setfield(L, -2, "frame");
    lua_pushlstring(L, ctx.connection.data(), ctx.connection.size());
    lua_setfield(L, -2, "connection");
  }

  // Runs the function under `nargs` arguments; proxies die with the call.
  int call(int nargs, int nresults) {
    int rc = lua_pcall(L, nargs, nresults, 0);
    ++gen;
    for (int& ref : cache_ref) {
      luaL_unref(L, LUA_REGISTRYINDEX, ref);
      ref = LUA_NOREF;
    }
    return rc;
  }
};

Script::Script(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Script::~Script() = default;

std::unique_ptr<Script> Script::load(const std::string& file, const ProgramSet& ps, std::string& error) {
  auto impl = std::make_unique<Impl>(ps, file);
  if (!impl->open(error)) return nullptr;
  return std::unique_ptr<Script>(new Script(std::move(impl)));
}

bool Script::has_on_request() const { return impl_->on_request_ref != LUA_NOREF; }
bool Script::has_on_response() const { return impl_->on_response_ref != LUA_NOREF; }

bool Script::on_request(Frame& frame, const HookContext& ctx, bool& skip, std::string& error) {
  skip = false;
  Impl& s = *impl_;
  if (s.on_request_ref == LUA_NOREF) return true;
  lua_State* L = s.L;
  const int top = lua_gettop(L);
  s.undo.clear();
  const int32_t correlation_id = frame.correlation_id;
  lua_rawgeti(L, LUA_REGISTRYINDEX, s.on_request_ref);
  s.push_message(frame, Impl::kEdit, 0);
  s.push_context(ctx);
  if (s.call(2, 1) != LUA_OK) {
    error = s.message();
    for (auto it = s.undo.rbegin(); it != s.undo.rend(); ++it) frame.nodes[it->node] = it->old;
    frame.correlation_id = correlation_id;
    s.undo.clear();
    lua_settop(L, top);
    return false;
  }
  skip = lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
  s.undo.clear();
  lua_settop(L, top);
  return true;
}

bool Script::on_response(const Frame& live, const Frame& recorded, const HookContext& ctx,
                         std::vector<Expectation>& add, std::string& error) {
  Impl& s = *impl_;
  if (s.on_response_ref == LUA_NOREF) return true;
  lua_State* L = s.L;
  const int top = lua_gettop(L);
  std::vector<Expectation> added;
  s.expect = &added;
  lua_rawgeti(L, LUA_REGISTRYINDEX, s.on_response_ref);
  s.push_message(live, Impl::kReadOnly, 0);
  s.push_message(recorded, Impl::kReadOnly, 1);
  s.push_context(ctx);
  int rc = s.call(3, 0);
  s.expect = nullptr;
  if (rc != LUA_OK) {
    error = s.message();
    lua_settop(L, top);
    return false;
  }
  lua_settop(L, top);
  add.insert(add.end(), std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
  return true;
}

}  // namespace kwire::replay
