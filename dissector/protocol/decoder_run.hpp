// The decoder's pass over one message: decoder.cpp runs it, and the struct
// decoders kwire-codegen writes from the same programs (decoders.gen.cpp)
// call into it. Each generated decoder is the interpreter's loop over one
// StructProgram unrolled: the same reads, nodes and errors, with the field
// types known at compile time instead of dispatched per field.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "dissector/protocol/records.hpp"
#include "wire/wire.hpp"

// The helpers the generated decoders call are forced inline in optimized
// builds, where that removes a call per field. Unoptimized and sanitized
// builds keep the calls: forced inlining there multiplies the generated
// code's compile time (minutes under ASan) and gains nothing that counts.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KWIRE_GEN_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KWIRE_GEN_SANITIZED 1
#endif
#if defined(__OPTIMIZE__) && !defined(KWIRE_GEN_SANITIZED)
#define KWIRE_GEN_INLINE [[gnu::always_inline]]
#else
#define KWIRE_GEN_INLINE
#endif

namespace kwire::detail {

using wire::load_be16;
using wire::load_be32;
using wire::load_be64;
using wire::VarintStatus;

constexpr uint64_t kMaxNodes = 1u << 23;  // 8M fields, 320 MiB of tape, per message

// One pass over a message. Each read checks the remaining length first; on
// failure the error is recorded once and every open container is closed at
// the point reached, so the tape stays well formed.
class Run {
 public:
  Run(const ProgramSet& ps, Frame& f, const uint8_t* begin, const uint8_t* end, size_t start, bool compiled = true)
      : ps_(ps), f_(f), base_(begin), p_(begin + start), end_(end) {
    if (compiled) compiled_ = ps.compiled();
  }

  uint32_t pos() const { return static_cast<uint32_t>(p_ - base_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool failed() const { return failed_; }

  bool fail(uint32_t at, std::string reason) {
    if (!failed_) f_.fail(at, prefix_ + std::move(reason));
    failed_ = true;
    return false;
  }

  [[gnu::always_inline]] bool need(size_t n, const FieldDesc& d) {
    if (left() >= n) [[likely]] return true;
    return short_of(n, d);
  }
  [[gnu::noinline, gnu::cold]] bool short_of(size_t n, const FieldDesc& d) {
    return fail(pos(), std::string(d.name) + ": needs " + std::to_string(n) + " bytes, " +
                           std::to_string(left()) + " left");
  }

  // The node of a fixed-size T whose bytes at `p` are known to be present,
  // written whole into `n`, the tape's node `idx`. For runs of them, which
  // take their nodes from the tape in one step: the tape's size and room
  // are then kept in registers, not reloaded after every node written.
  template <WireType T>
  KWIRE_GEN_INLINE static void fixed_node(Node& n, uint32_t idx, uint32_t di, uint32_t parent, uint32_t offset,
                                          const uint8_t* p, uint8_t flags) {
    uint64_t v = 0;
    uint32_t aux = 0;
    if constexpr (T == WireType::Int8) {
      v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(*p)));
      aux = *p;
    } else if constexpr (T == WireType::Bool) {
      v = *p != 0;
      aux = *p;  // the raw byte, for exact re-encoding
    } else if constexpr (T == WireType::Int16) {
      v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(load_be16(p))));
    } else if constexpr (T == WireType::Uint16) {
      v = load_be16(p);
    } else if constexpr (T == WireType::Int32) {
      v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(load_be32(p))));
    } else if constexpr (T == WireType::Uint32) {
      v = load_be32(p);
    } else if constexpr (T == WireType::Int64 || T == WireType::Float64) {
      v = load_be64(p);
    } else {
      static_assert(T == WireType::Uuid);
      aux = 16;
    }
    n.desc = di;
    n.offset = offset;
    n.length = fixed_size(T);
    n.end = idx + 1;
    n.parent = parent;
    n.aux = aux;
    n.v.u = v;
    if constexpr (T == WireType::Uuid) n.v.p = p;
    n.flags = flags;
    n.type = T;
    n.tag = 0;
  }

  // `count` elements of type T, all of whose bytes are known to be present.
  template <WireType T>
  KWIRE_GEN_INLINE void fixed_run(int64_t count, uint32_t di, uint32_t parent) {
    constexpr uint32_t size = fixed_size(T);
    if (count <= 0) return;
    const uint32_t idx = static_cast<uint32_t>(f_.nodes.size());
    Node* const n = f_.nodes.append_n(static_cast<size_t>(count));
    const uint8_t* p = p_;
    uint32_t at = pos();
    for (uint32_t i = 0; i < static_cast<uint32_t>(count); ++i, p += size, at += size)
      fixed_node<T>(n[i], idx + i, di, parent, at, p, kElement);
    p_ = p;
  }

  // A fixed-size primitive at p_ whose bytes are known to be present.
  KWIRE_GEN_INLINE void fixed(WireType t, uint32_t di, uint32_t parent, uint8_t flags) {
    switch (t) {
      case WireType::Int8: return fixed_one<WireType::Int8>(di, parent, flags);
      case WireType::Bool: return fixed_one<WireType::Bool>(di, parent, flags);
      case WireType::Int16: return fixed_one<WireType::Int16>(di, parent, flags);
      case WireType::Uint16: return fixed_one<WireType::Uint16>(di, parent, flags);
      case WireType::Int32: return fixed_one<WireType::Int32>(di, parent, flags);
      case WireType::Uint32: return fixed_one<WireType::Uint32>(di, parent, flags);
      case WireType::Int64: return fixed_one<WireType::Int64>(di, parent, flags);
      case WireType::Float64: return fixed_one<WireType::Float64>(di, parent, flags);
      case WireType::Uuid: return fixed_one<WireType::Uuid>(di, parent, flags);
      default: return;
    }
  }
  template <WireType T>
  KWIRE_GEN_INLINE void fixed_one(uint32_t di, uint32_t parent, uint8_t flags) {
    const uint32_t idx = static_cast<uint32_t>(f_.nodes.size());
    fixed_node<T>(*f_.nodes.append(), idx, di, parent, pos(), p_, flags);
    p_ += fixed_size(T);
  }

  // What the generated struct decoders call, field by field, in wire order:
  // each does what interpret() and field() do for a field of that kind.

  // A fixed-size field of type T.
  template <WireType T>
  KWIRE_GEN_INLINE bool fix(uint32_t di, uint32_t parent) {
    constexpr uint32_t size = fixed_size(T);
    if (left() < size) [[unlikely]] return short_of(size, ps_.field(di));
    fixed_one<T>(di, parent, 0);
    return true;
  }
  // Consecutive fixed-size fields of types Ts, the first `di`: one bounds
  // check for all of them; short of bytes, field by field for the error.
  template <WireType... Ts>
  KWIRE_GEN_INLINE bool fixed_fields(uint32_t di, uint32_t parent) {
    constexpr uint32_t total = (fixed_size(Ts) + ...);
    uint32_t k = 0;
    if (left() < total) [[unlikely]] return (fix<Ts>(di + k++, parent) && ...);
    const uint32_t idx = static_cast<uint32_t>(f_.nodes.size());
    Node* const n = f_.nodes.append_n(sizeof...(Ts));
    const uint8_t* p = p_;
    uint32_t at = pos();
    ((fixed_node<Ts>(n[k], idx + k, di + k, parent, at, p, 0), at += fixed_size(Ts), p += fixed_size(Ts), ++k), ...);
    p_ = p;
    return true;
  }
  // A string, bytes or records field.
  template <WireType T>
  KWIRE_GEN_INLINE bool blob(uint32_t di, uint32_t parent) { return blob(ps_.field(di), di, parent, 0, T); }
  // A string or bytes field: a present value that fits is read here, where
  // no payload may be nested in it, and so is null in a Nullable one; the
  // rest by blob().
  template <WireType T, bool Compact, bool Nullable>
  KWIRE_GEN_INLINE bool text(uint32_t di, uint32_t parent) {
    return text_value<T, Compact, Nullable>(di, parent, 0);
  }
  // An array of strings or bytes: its elements read as text() reads a
  // field (never null: a null element goes to blob(), which says whether
  // the array's spec allows it).
  template <WireType T, bool Compact, bool Nullable>
  KWIRE_GEN_INLINE bool text_array(uint32_t di, uint32_t parent) {
    constexpr uint32_t kPrefix = Compact ? 1 : T == WireType::String ? 2 : 4;
    uint32_t n;
    int64_t count;
    if (const int r = array_head<Compact, kPrefix, Nullable>(di, parent, n, count); r <= 0) return r == 0;
    bool ok = true;
    for (int64_t i = 0; i < count && ok; ++i) ok = text_value<T, Compact, false>(di, n, kElement);
    f_.close(n, pos());
    return ok;
  }
  template <WireType T, bool Compact, bool Nullable>
  KWIRE_GEN_INLINE bool text_value(uint32_t di, uint32_t parent, uint8_t flags) {
    static_assert(T == WireType::String || T == WireType::Bytes);
    const size_t have = left();
    uint32_t prefix;
    int64_t len;
    if constexpr (Compact) {
      prefix = 1;
      len = have ? static_cast<int64_t>(*p_) - 1 : -2;
      if (len >= 0x7f) len = -2;  // a longer varint
    } else if constexpr (T == WireType::String) {
      prefix = 2;
      len = have >= 2 ? static_cast<int16_t>(load_be16(p_)) : -2;
    } else {
      prefix = 4;
      len = have >= 4 ? static_cast<int32_t>(load_be32(p_)) : -2;
    }
    if (len >= 0 && static_cast<uint64_t>(len) <= have - prefix && nest_api_ < 0) [[likely]] {
      Node& n = f_.put_leaf(di, T, parent, pos(), prefix + static_cast<uint32_t>(len), flags, 0,
                            static_cast<uint32_t>(len));
      n.v.p = p_ + prefix;
      p_ += prefix + len;
      return true;
    }
    if (Nullable && len == -1) {  // as blob() reads a null
      f_.put_leaf(di, T, parent, pos(), prefix, flags | kNull, 0);
      p_ += prefix;
      return true;
    }
    return blob(ps_.field(di), di, parent, flags, T);
  }
  // Any other field, by the interpreter's dispatch.
  bool field(uint32_t di, uint32_t parent) { return field(ps_.field(di), di, parent); }
  // The length of an array whose length encoding and smallest element
  // (MinElem > 0 bytes) are known: 2 when a present length passes its checks
  // (`count` elements after a `prefix`-byte length, nothing read yet).
  // Anything else (null, a long varint, too long) goes to array_open(), and
  // its result is returned: 1 the array is open, its elements to read; 0
  // done (null); -1 failed.
  template <bool Compact, uint32_t MinElem, bool Nullable>
  KWIRE_GEN_INLINE int array_length(uint32_t di, uint32_t parent, uint32_t& n, int64_t& count, uint32_t& prefix) {
    static_assert(MinElem > 0);
    const size_t have = left();
    if constexpr (Compact) {
      if (have == 0 || *p_ == 0 || *p_ >= 0x80) [[unlikely]] {
        if (Nullable && have && *p_ == 0) return null_array(di, parent, 1, n, count);
        return array_open(ps_.field(di), di, parent, 0, n, count);
      }
      count = *p_ - 1;
      prefix = 1;
    } else {
      if (have < 4) [[unlikely]] return array_open(ps_.field(di), di, parent, 0, n, count);
      count = static_cast<int32_t>(load_be32(p_));
      prefix = 4;
      if (count < 0) [[unlikely]] {
        if (Nullable && count == -1) return null_array(di, parent, 4, n, count);
        return array_open(ps_.field(di), di, parent, 0, n, count);
      }
    }
    if (static_cast<uint64_t>(count) * MinElem > have - prefix ||
        f_.nodes.size() + static_cast<uint64_t>(count) > kMaxNodes) [[unlikely]]
      return array_open(ps_.field(di), di, parent, 0, n, count);
    return 2;
  }
  // A null array of a nullable field, as array_open() reads it; returns 0 (done).
  KWIRE_GEN_INLINE int null_array(uint32_t di, uint32_t parent, uint32_t prefix, uint32_t& n, int64_t& count) {
    n = static_cast<uint32_t>(f_.nodes.size());
    f_.put_leaf(di, WireType::Array, parent, pos(), prefix, kNull, 0);
    p_ += prefix;
    count = -1;
    return 0;
  }
  // array_open() by array_length(): the array node open, or the general result.
  template <bool Compact, uint32_t MinElem, bool Nullable>
  KWIRE_GEN_INLINE int array_head(uint32_t di, uint32_t parent, uint32_t& n, int64_t& count) {
    uint32_t prefix;
    if (const int r = array_length<Compact, MinElem, Nullable>(di, parent, n, count, prefix); r != 2) return r;
    const uint32_t start = pos();
    p_ += prefix;
    n = f_.open(di, WireType::Array, parent, start, 0);
    f_.nodes[n].aux = static_cast<uint32_t>(count);
    return 1;
  }
  // An array of fixed-size T elements. Its size is known once its length
  // is: the array's node and its elements' are written as one block, the
  // array's complete (no close() after).
  template <WireType T, bool Compact, bool Nullable>
  KWIRE_GEN_INLINE bool fixed_array(uint32_t di, uint32_t parent) {
    constexpr uint32_t size = fixed_size(T);
    uint32_t n, prefix;
    int64_t count;
    if (const int r = array_length<Compact, size, Nullable>(di, parent, n, count, prefix); r != 2) {
      if (r <= 0) return r == 0;
      fixed_run<T>(count, di, n);  // opened by array_open(), its elements in bounds
      f_.close(n, pos());
      return true;
    }
    const uint32_t c = static_cast<uint32_t>(count);
    const uint32_t idx = static_cast<uint32_t>(f_.nodes.size());
    Node* const a = f_.nodes.append_n(1 + static_cast<size_t>(c));
    uint32_t at = pos();
    a->desc = di;
    a->offset = at;
    a->length = prefix + c * size;
    a->end = idx + 1 + c;
    a->parent = parent;
    a->aux = c;
    a->v.u = 0;
    a->flags = 0;
    a->type = WireType::Array;
    a->tag = 0;
    const uint8_t* p = p_ + prefix;
    at += prefix;
    for (uint32_t i = 0; i < c; ++i, p += size, at += size)
      fixed_node<T>(a[1 + i], idx + 1 + i, di, idx, at, p, kElement);
    p_ = p;
    return true;
  }
  // An array of S structs, each at least MinElem bytes.
  template <CompiledStruct S, bool Compact, uint32_t MinElem, bool Nullable>
  KWIRE_GEN_INLINE bool struct_array(uint32_t di, uint32_t parent) {
    uint32_t n;
    int64_t count;
    int r;
    if constexpr (MinElem > 0) r = array_head<Compact, MinElem, Nullable>(di, parent, n, count);
    else r = array_open(ps_.field(di), di, parent, 0, n, count);
    if (r <= 0) return r == 0;
    bool ok = true;
    for (int64_t i = 0; i < count && ok; ++i) {
      const uint32_t e = f_.open(di, WireType::Struct, n, pos(), kElement);
      ok = S(*this, e);
      f_.close(e, pos());
    }
    f_.close(n, pos());
    return ok;
  }
  // A struct field decoded by S, as field() reads one: a Nullable one has
  // a marker byte first (negative: null).
  template <CompiledStruct S, bool Nullable>
  KWIRE_GEN_INLINE bool struct_field(uint32_t di, uint32_t parent) {
    const uint32_t start = pos();
    uint32_t aux = 0;
    if constexpr (Nullable) {
      if (left() < 1) [[unlikely]] return short_of(1, ps_.field(di));
      const int8_t marker = static_cast<int8_t>(*p_++);
      aux = kMarkerRecorded | static_cast<uint8_t>(marker);
      if (marker < 0) {  // Kafka reads any negative as null
        f_.put_leaf(di, WireType::Struct, parent, start, 1, kNull, 0, aux);
        return true;
      }
    }
    const uint32_t n = f_.open(di, WireType::Struct, parent, start, 0);
    f_.nodes[n].aux = aux;
    const bool ok = S(*this, n);
    f_.close(n, pos());
    return ok;
  }

  // The tagged-field section of a flexible struct; most often none (one 0 byte).
  KWIRE_GEN_INLINE bool tags(uint32_t sp_idx, uint32_t parent) {
    if (p_ < end_ && *p_ == 0) [[likely]] {
      ++p_;
      return true;
    }
    return tagged(ps_.structure(sp_idx), parent);
  }

  // Decodes a struct's fields into children of `node`: by its generated
  // decoder when it has one, else by the interpreter below.
  bool structure(uint32_t sp_idx, uint32_t node) {
    if (sp_idx < compiled_.size()) [[likely]] return compiled_[sp_idx](*this, node);
    return interpret(sp_idx, node);
  }

  bool interpret(uint32_t sp_idx, uint32_t node) {
    const StructProgram& sp = ps_.structure(sp_idx);
    const uint32_t last = sp.first_field + sp.field_count;
    for (uint32_t di = sp.first_field; di < last; ++di) {
      // Fixed-size fields here, the rest in field().
      const WireType t = ps_.op(di).type;
      if (const uint32_t size = fixed_size(t)) {
        if (!need(size, ps_.field(di))) return false;
        fixed(t, di, node, 0);
        continue;
      }
      if (!field(ps_.field(di), di, node)) return false;
    }
    return !sp.flexible || tagged(sp, node);
  }

  bool field(const FieldDesc& d, uint32_t di, uint32_t parent, uint8_t flags = 0) {
    const FieldOp& o = ps_.op(di);
    WireType t = (flags & kElement) ? o.elem : o.type;
    uint32_t start = pos();
    switch (t) {
      case WireType::Int8: case WireType::Bool: case WireType::Int16: case WireType::Uint16:
      case WireType::Int32: case WireType::Uint32: case WireType::Int64: case WireType::Float64:
      case WireType::Uuid:
        if (!need(fixed_size(t), d)) return false;
        fixed(t, di, parent, flags);
        return true;
      case WireType::String: case WireType::Bytes: case WireType::Records:
        return blob(d, di, parent, flags, t);
      case WireType::Struct: {
        uint8_t nflags = flags;
        if ((o.flags & kNullable) && !(flags & kElement)) {
          if (!need(1, d)) return false;
          int8_t marker = static_cast<int8_t>(*p_++);
          if (marker < 0) {
            uint32_t n = f_.leaf(di, t, parent, start, 1, flags | kNull);
            f_.nodes[n].aux = kMarkerRecorded | static_cast<uint8_t>(marker);  // Kafka reads any negative as null
            return true;
          }
          uint32_t n = f_.open(di, t, parent, start, nflags);
          f_.nodes[n].aux = kMarkerRecorded | static_cast<uint8_t>(marker);  // and anything else as present
          bool ok = structure(static_cast<uint32_t>(o.sub), n);
          f_.close(n, pos());
          return ok;
        }
        uint32_t n = f_.open(di, t, parent, start, nflags);
        bool ok = structure(static_cast<uint32_t>(o.sub), n);
        f_.close(n, pos());
        return ok;
      }
      case WireType::Array:
        return array(d, di, parent, flags);
      default:
        return fail(start, std::string(d.name) + ": type " + std::string(wire_type_name(t)) + " cannot appear in a message");
    }
  }

  // Reads a length: compact (unsigned varint of length+1) or classic int16/int32.
  // Returns false on failure; `len` is -1 for null.
  // Inlined: every array and string reads one.
  [[gnu::always_inline]] bool length(const FieldDesc& d, bool compact, bool wide, int64_t& len) {
    if (compact) {
      uint32_t u;
      uint32_t at = pos();
      auto s = wire::read_uvarint32(p_, end_, u);
      if (s != VarintStatus::Ok) [[unlikely]] return bad_length_varint(d, at, s);
      note_varint(at, u);
      len = static_cast<int64_t>(u) - 1;
      return true;
    }
    if (wide) {
      if (!need(4, d)) return false;
      len = static_cast<int32_t>(load_be32(p_));
      p_ += 4;
    } else {
      if (!need(2, d)) return false;
      len = static_cast<int16_t>(load_be16(p_));
      p_ += 2;
    }
    return true;
  }

  [[gnu::noinline, gnu::cold]] bool bad_length_varint(const FieldDesc& d, uint32_t at, VarintStatus s) {
    if (s == VarintStatus::Truncated) return fail(at, std::string(d.name) + ": length varint runs past the end");
    return fail(at, std::string(d.name) + ": overlong length varint");
  }

  bool blob(const FieldDesc& d, uint32_t di, uint32_t parent, uint8_t flags, WireType t) {
    uint32_t start = pos();
    int64_t len = 0;
    const FieldOp& o = ps_.op(di);
    if (!length(d, o.flags & kCompact, t != WireType::String, len)) return false;
    if (len < 0) {
      uint32_t n = f_.leaf(di, t, parent, start, pos() - start);
      f_.nodes[n].flags = flags | kNull;
      if (len < -1) return fail(start, std::string(d.name) + ": negative length " + std::to_string(len));
      if (!(o.flags & kNullable)) return fail(start, std::string(d.name) + ": null in a non-nullable " + std::string(wire_type_name(t)));
      return true;
    }
    if (static_cast<uint64_t>(len) > left())
      return fail(start, std::string(d.name) + ": length " + std::to_string(len) + " exceeds the " +
                             std::to_string(left()) + " bytes left");
    uint32_t n = f_.open(di, t, parent, start, flags);
    f_.nodes[n].v.p = p_;
    f_.nodes[n].aux = static_cast<uint32_t>(len);
    const uint8_t* data = p_;
    p_ += len;
    if (t == WireType::Records && len > 0)
      decode_records(f_, n, {data, static_cast<size_t>(len)}, static_cast<uint32_t>(data - base_), 0);
    else if (nest_api_ >= 0)
      nested(d, n, t, data, static_cast<size_t>(len));
    f_.close(n, pos());
    return true;
  }

  // Payloads inside payloads (see decoder.hpp): which bytes fields of the
  // message being decoded carry what.
  void nest(int16_t api, Direction dir, const ResponseHint* hint, int depth) {
    constexpr int kMaxDepth = 2;  // an enveloped JoinGroup's metadata, no deeper
    nest_api_ = -1;
    if (depth < kMaxDepth)
      for (const NestedPayload& p : nested_payloads())
        if (p.api_key == api) nest_api_ = api;
    nest_dir_ = dir;
    hint_ = hint;
    depth_ = depth;
  }

  void nested(const FieldDesc& d, uint32_t n, WireType t, const uint8_t* data, size_t len) {
    if (t == WireType::String) {
      // JoinGroup and SyncGroup name their protocol type before the payloads.
      if (d.name == "ProtocolType") {
        protocol_type_ = std::string_view(reinterpret_cast<const char*>(data), len);
        has_protocol_type_ = true;
      }
      return;
    }
    if (t != WireType::Bytes) return;
    // Which bytes fields carry what: the program set's index of nested_payloads().
    const NestedPayload* p = ps_.nested_payload(f_.nodes[n].desc);
    if (!p || p->api_key != nest_api_ || p->direction != nest_dir_) return;
    if (p->consumer_protocol && !consumer_protocol()) return;
    if (len == 0 && p->empty_is_none) return;
    if (p->payload == "request") {
      message_payload(d, n, data, len, Direction::Request, -1, -1);
    } else if (p->payload == "response") {
      if (hint_ && hint_->inner_api_key >= 0)
        message_payload(d, n, data, len, Direction::Response, hint_->inner_api_key, hint_->inner_api_version);
    } else {
      data_payload(d, n, data, len, p->payload, p->consumer_protocol);
    }
  }

  // The message's own ProtocolType when it has one (not null), else its request's.
  bool consumer_protocol() const {
    if (has_protocol_type_) return protocol_type_ == "consumer";
    return hint_ && hint_->consumer_protocol;
  }

  // A sub-run over the payload's bytes, offsets still from the start of the
  // message. Its failure is the payload's: the outer run goes on.
  Run sub_run(const uint8_t* data, size_t len, std::string prefix) {
    Run sub(ps_, f_, base_, data + len, static_cast<size_t>(data - base_), !compiled_.empty());
    sub.prefix_ = prefix_ + std::move(prefix);
    sub.depth_ = depth_ + 1;
    return sub;
  }

  // A version-prefixed data struct (Kafka's MessageUtil.toVersionPrefixedBytes).
  // `newest_for_unknown`: a newer version than the specs know is read as the
  // newest known one (ConsumerProtocol does so), else it is an error.
  void data_payload(const FieldDesc& d, uint32_t n, const uint8_t* data, size_t len, std::string_view spec,
                    bool newest_for_unknown) {
    f_.nodes[n].flags |= kNested;
    const bool canonical = f_.canonical;  // the payload is re-encoded as it came
    Run sub = sub_run(data, len, std::string(d.name) + " (" + std::string(spec) + "): ");
    if (!sub.data_struct(n, spec, newest_for_unknown)) f_.nodes[n].flags |= kNestedFailed;
    f_.canonical = canonical;
  }

  bool data_struct(uint32_t parent, std::string_view spec, bool newest_for_unknown) {
    const uint32_t start = pos();
    if (left() < 2) return fail(start, "needs a 2-byte version, " + std::to_string(left()) + " present");
    const auto version = static_cast<int16_t>(load_be16(p_));
    const DataProgram* dp = version >= 0 ? ps_.find_data(spec, version) : nullptr;
    if (!dp && version >= 0 && newest_for_unknown)
      for (const auto& x : ps_.data())
        if (x.name == spec && x.version < version && (!dp || x.version > dp->version)) dp = &x;
    if (!dp) return fail(start, "unknown version " + std::to_string(version));
    const uint32_t s = f_.open(dp->root, WireType::Struct, parent, start);
    const uint32_t v = f_.leaf(kDescNestedVersion, WireType::Int16, s, start, 2);
    f_.nodes[v].v.i = version;
    p_ += 2;
    const bool ok = structure(static_cast<uint32_t>(ps_.field(dp->root).sub), s);
    if (ok && left() > 0) {
      // Kafka reads the fields it knows and ignores the rest.
      const uint32_t t = f_.leaf(kDescNestedTrailing, WireType::Bytes, s, pos(), static_cast<uint32_t>(left()));
      f_.nodes[t].v.p = p_;
      f_.nodes[t].aux = static_cast<uint32_t>(left());
      p_ = end_;
    }
    f_.close(s, pos());
    return ok;
  }

  // A whole message without size prefix: header, then body. A request names
  // its api and version in its header; a response takes them from `api`, `version`.
  void message_payload(const FieldDesc& d, uint32_t n, const uint8_t* data, size_t len, Direction dir, int16_t api,
                       int16_t version) {
    f_.nodes[n].flags |= kNested | kNestedMessage;
    const bool canonical = f_.canonical;
    Run sub = sub_run(data, len, std::string(d.name) + ": ");
    if (!sub.inner_message(n, dir, api, version)) f_.nodes[n].flags |= kNestedFailed;
    f_.canonical = canonical;
  }

  bool inner_message(uint32_t parent, Direction dir, int16_t api, int16_t version) {
    const uint32_t start = pos();
    const bool request = dir == Direction::Request;
    if (request) {
      if (left() < 4) return fail(start, "request header needs 4 bytes, " + std::to_string(left()) + " present");
      api = static_cast<int16_t>(load_be16(p_));
      version = static_cast<int16_t>(load_be16(p_ + 2));
    }
    const MessageProgram* m = ps_.find(api, version, dir);
    const bool flexible = m && m->flexible;
    const uint32_t hd = request ? ps_.request_header(request_header_version(api, version, flexible))
                                : ps_.response_header(response_header_version(api, flexible));
    const uint32_t h = f_.open(hd, WireType::Struct, parent, start);
    bool ok = structure(static_cast<uint32_t>(ps_.field(hd).sub), h);
    f_.close(h, pos());
    if (!ok) return false;
    if (!m)
      return fail(start, "no spec for api key " + std::to_string(api) + " v" + std::to_string(version) +
                             (request ? " request" : " response"));
    nest(api, dir, nullptr, depth_);  // the enveloped message's own payloads
    const uint32_t b = f_.open(m->root, WireType::Struct, parent, pos());
    ok = structure(static_cast<uint32_t>(ps_.field(m->root).sub), b);
    f_.close(b, pos());
    if (ok && left() > 0)
      return fail(pos(), std::to_string(left()) + " bytes left after the end of " + std::string(m->spec_name) + " v" +
                             std::to_string(version));
    return ok;
  }

  // An array's length and its node: 1 with the array open (node `n`,
  // `count` elements to read), 0 when it is null and done, -1 on failure.
  int array_open(const FieldDesc& d, uint32_t di, uint32_t parent, uint8_t flags, uint32_t& n, int64_t& count) {
    uint32_t start = pos();
    count = 0;
    const FieldOp& o = ps_.op(di);
    if (!length(d, o.flags & kCompact, true, count)) return -1;
    if (count < 0) {
      n = f_.leaf(di, WireType::Array, parent, start, pos() - start);
      f_.nodes[n].flags = flags | kNull;
      if (count < -1) return fail(start, std::string(d.name) + ": negative array length " + std::to_string(count)), -1;
      if (!(o.flags & kNullable)) return fail(start, std::string(d.name) + ": null in a non-nullable array"), -1;
      return 0;
    }
    // Never trust a count before the bytes for it are present.
    uint64_t min_elem = element_min_size(o);
    if (static_cast<uint64_t>(count) * (min_elem ? min_elem : 1) > left() + (min_elem ? 0 : 1u << 16))
      return fail(start, std::string(d.name) + ": array length " + std::to_string(count) + " cannot fit in the " +
                             std::to_string(left()) + " bytes left"), -1;
    // Bound the tape: a message of tiny elements would otherwise cost 40
    // bytes of memory per byte on the wire.
    if (f_.nodes.size() + static_cast<uint64_t>(count) > kMaxNodes)
      return fail(start, std::string(d.name) + ": array of " + std::to_string(count) + " elements takes the message past " +
                             std::to_string(kMaxNodes) + " fields"), -1;
    n = f_.open(di, WireType::Array, parent, start, flags);
    f_.nodes[n].aux = static_cast<uint32_t>(count);
    if (fixed_size(o.elem))  // the check above put all the elements' bytes in bounds
      f_.nodes.reserve(f_.nodes.size() + static_cast<size_t>(count));
    return 1;
  }

  bool array(const FieldDesc& d, uint32_t di, uint32_t parent, uint8_t flags) {
    uint32_t n;
    int64_t count;
    if (const int r = array_open(d, di, parent, flags, n, count); r <= 0) return r == 0;
    const FieldOp& o = ps_.op(di);
    bool ok = true;
    if (fixed_size(o.elem)) {
      // Fixed-size elements: array_open() put all of them in bounds.
      switch (o.elem) {  // one loop per type, not a dispatch per element
        case WireType::Int8: fixed_run<WireType::Int8>(count, di, n); break;
        case WireType::Bool: fixed_run<WireType::Bool>(count, di, n); break;
        case WireType::Int16: fixed_run<WireType::Int16>(count, di, n); break;
        case WireType::Uint16: fixed_run<WireType::Uint16>(count, di, n); break;
        case WireType::Int32: fixed_run<WireType::Int32>(count, di, n); break;
        case WireType::Uint32: fixed_run<WireType::Uint32>(count, di, n); break;
        case WireType::Int64: fixed_run<WireType::Int64>(count, di, n); break;
        case WireType::Float64: fixed_run<WireType::Float64>(count, di, n); break;
        default: fixed_run<WireType::Uuid>(count, di, n); break;
      }
    } else {
      for (int64_t i = 0; i < count && ok; ++i) ok = field(d, di, n, kElement);
    }
    f_.close(n, pos());
    return ok;
  }

  // Kafka accepts varints in longer than minimal form; they decode, but
  // re-encoding writes the minimal form, so the frame says it is not canonical.
  void note_varint(uint32_t start, uint64_t value) {
    if (pos() - start != wire::uvarint_size(value)) f_.canonical = false;
  }

  uint64_t element_min_size(const FieldOp& o) const {
    if (uint32_t n = fixed_size(o.elem)) return n;
    switch (o.elem) {
      case WireType::String: return (o.flags & kCompact) ? 1 : 2;
      case WireType::Bytes: return (o.flags & kCompact) ? 1 : 4;
      case WireType::Struct: return ps_.structure(static_cast<uint32_t>(o.sub)).min_size;
      default: return 1;
    }
  }

  bool tagged(const StructProgram& sp, uint32_t parent) {
    uint32_t at = pos();
    uint32_t count;
    auto s = wire::read_uvarint32(p_, end_, count);
    if (s != VarintStatus::Ok)
      return fail(at, s == VarintStatus::Overlong ? "overlong tagged field count" : "tagged field count runs past the end");
    if (count > left()) return fail(at, "tagged field count " + std::to_string(count) + " exceeds the bytes left");
    note_varint(at, count);
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t field_start = pos();
      uint32_t tag, size;
      if (wire::read_uvarint32(p_, end_, tag) != VarintStatus::Ok)
        return fail(field_start, "bad tag varint in tagged field " + std::to_string(i));
      note_varint(field_start, tag);
      uint32_t size_at = pos();
      if (wire::read_uvarint32(p_, end_, size) != VarintStatus::Ok)
        return fail(size_at, "bad size varint in tagged field " + std::to_string(i));
      note_varint(size_at, size);
      if (size > left())
        return fail(field_start, "tagged field " + std::to_string(tag) + ": size " + std::to_string(size) +
                                     " exceeds the " + std::to_string(left()) + " bytes left");
      const uint8_t* field_end = p_ + size;
      int32_t known = -1;
      for (uint32_t k = 0; k < sp.tagged_count; ++k)
        if (ps_.field(sp.first_tagged + k).tag == static_cast<int32_t>(tag)) known = static_cast<int32_t>(sp.first_tagged + k);
      if (known < 0) {
        uint32_t n = f_.leaf(kDescUnknownTag, WireType::Bytes, parent, field_start, pos() + size - field_start);
        f_.nodes[n].v.p = p_;
        f_.nodes[n].aux = size;
        f_.nodes[n].tag = tag;
        p_ = field_end;
        continue;
      }
      // A known tagged field: decode it inside its declared size.
      const uint8_t* saved_end = end_;
      end_ = field_end;
      uint32_t n = static_cast<uint32_t>(f_.nodes.size());
      bool ok = field(ps_.field(static_cast<uint32_t>(known)), static_cast<uint32_t>(known), parent);
      end_ = saved_end;
      if (!ok) return false;
      // The node's extent starts at the tag so re-encoding sees the whole field.
      f_.nodes[n].tag = tag;
      if (p_ != field_end)
        return fail(pos(), "tagged field " + std::to_string(tag) + " (" + std::string(ps_.field(known).name) +
                               "): " + std::to_string(field_end - p_) + " bytes left unread of " + std::to_string(size));
    }
    return true;
  }

 private:
  const ProgramSet& ps_;
  std::span<const CompiledStruct> compiled_;  // generated struct decoders, by StructProgram index
  Frame& f_;
  const uint8_t* base_;
  const uint8_t* p_;
  const uint8_t* end_;
  bool failed_ = false;
  std::string prefix_;           // names the payload a nested run reads, for its errors
  // Nested payloads: the api whose bytes fields may carry them (-1: none).
  int16_t nest_api_ = -1;
  Direction nest_dir_ = Direction::Request;
  const ResponseHint* hint_ = nullptr;
  int depth_ = 0;
  std::string_view protocol_type_;
  bool has_protocol_type_ = false;
};

}  // namespace kwire::detail
