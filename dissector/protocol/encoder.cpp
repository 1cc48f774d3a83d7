#include "dissector/protocol/encoder.hpp"

#include "wire/wire.hpp"

namespace kwire {

namespace {

class Emit {
 public:
  Emit(const ProgramSet& ps, const Frame& f, std::vector<uint8_t>& out, std::string& error)
      : ps_(ps), f_(f), w_(out), error_(error) {}

  bool bad(uint32_t node, const std::string& what) {
    error_ = "node " + std::to_string(node) + ": " + what;
    return false;
  }

  // Encodes the struct whose node is `n` (its children follow it in the tape).
  bool structure(uint32_t sp_idx, uint32_t n) {
    const StructProgram& sp = ps_.structure(sp_idx);
    const uint32_t end = f_.nodes[n].end;
    uint32_t c = n + 1;
    for (uint32_t i = 0; i < sp.field_count; ++i) {
      uint32_t di = sp.first_field + i;
      if (c >= end || f_.nodes[c].desc != di)
        return bad(c, "expected field " + std::string(ps_.field(di).name) + " of " + std::string(sp.name));
      if (!field(ps_.field(di), c, false)) return false;
      c = f_.nodes[c].end;
    }
    if (!sp.flexible) return c == end || bad(c, "unexpected node after the fields of " + std::string(sp.name));
    uint32_t count = 0;
    for (uint32_t k = c; k < end; k = f_.nodes[k].end) ++count;
    w_.uvarint(count);
    std::vector<uint8_t> tmp;
    for (uint32_t k = c; k < end; k = f_.nodes[k].end) {
      const Node& t = f_.nodes[k];
      const FieldDesc& d = ps_.field(t.desc);
      w_.uvarint(t.desc == kDescUnknownTag ? t.tag : static_cast<uint32_t>(d.tag));
      if (t.desc == kDescUnknownTag) {
        w_.uvarint(t.aux);
        w_.raw(t.v.p, t.aux);
        continue;
      }
      if (!d.tagged()) return bad(k, std::string(d.name) + " is not a tagged field of " + std::string(sp.name));
      tmp.clear();
      wire::Writer inner(tmp);
      Emit sub(ps_, f_, tmp, error_);
      if (!sub.field(d, k, false)) return false;
      w_.uvarint(tmp.size());
      w_.raw(tmp.data(), tmp.size());
    }
    return true;
  }

  void length(const FieldDesc& d, bool wide, int64_t len) {
    if (d.compact()) w_.uvarint(static_cast<uint64_t>(len + 1));
    else if (wide) w_.be32(static_cast<uint32_t>(len));
    else w_.be16(static_cast<uint16_t>(len));
  }

  bool field(const FieldDesc& d, uint32_t n, bool element) {
    const Node& node = f_.nodes[n];
    WireType t = element ? d.elem : d.type;
    switch (t) {
      case WireType::Int8: w_.u8(static_cast<uint8_t>(node.v.i)); return true;
      case WireType::Bool: w_.u8(node.v.i ? (node.aux ? static_cast<uint8_t>(node.aux) : 1) : 0); return true;
      case WireType::Int16: case WireType::Uint16: w_.be16(static_cast<uint16_t>(node.v.i)); return true;
      case WireType::Int32: case WireType::Uint32: w_.be32(static_cast<uint32_t>(node.v.i)); return true;
      case WireType::Int64: case WireType::Float64: w_.be64(node.v.u); return true;
      case WireType::Uuid: w_.raw(node.v.p, 16); return true;
      case WireType::String: case WireType::Bytes: case WireType::Records:
        if (node.is_null()) { length(d, t != WireType::String, -1); return true; }
        length(d, t != WireType::String, node.aux);
        w_.raw(node.v.p, node.aux);
        return true;
      case WireType::Struct:
        if (d.nullable() && !element) {
          // The marker byte as decoded (any negative is null), else -1 / 1.
          bool recorded = node.aux & kMarkerRecorded;
          if (node.is_null()) { w_.u8(recorded ? static_cast<uint8_t>(node.aux) : 0xff); return true; }
          w_.u8(recorded ? static_cast<uint8_t>(node.aux) : 1);
        }
        return structure(static_cast<uint32_t>(d.sub), n);
      case WireType::Array: {
        if (node.is_null()) { length(d, true, -1); return true; }
        length(d, true, node.aux);
        uint32_t count = 0;
        for (uint32_t c = n + 1; c < node.end; c = f_.nodes[c].end, ++count)
          if (!field(d, c, true)) return false;
        return count == node.aux || bad(n, std::string(d.name) + ": " + std::to_string(count) +
                                               " elements, count says " + std::to_string(node.aux));
      }
      default:
        return bad(n, std::string(d.name) + ": cannot encode type " + std::string(wire_type_name(t)));
    }
  }

 private:
  const ProgramSet& ps_;
  const Frame& f_;
  wire::Writer w_;
  std::string& error_;
};

}  // namespace

bool FrameEncoder::encode(const Frame& f, std::vector<uint8_t>& out, std::string& error) const {
  if (!f.program) { error = "frame has no program (unknown api or version)"; return false; }
  if (!f.ok()) { error = "frame did not decode cleanly: " + f.errors.front().reason; return false; }
  if (f.nodes.empty() || f.body == 0) { error = "frame has no header and body"; return false; }
  size_t start = out.size();
  wire::Writer w(out);
  w.be32(0);
  Emit e(ps_, f, out, error);
  if (!e.structure(static_cast<uint32_t>(ps_.field(f.nodes[0].desc).sub), 0)) return false;
  if (!e.structure(static_cast<uint32_t>(ps_.field(f.program->root).sub), f.body)) return false;
  uint32_t size = static_cast<uint32_t>(out.size() - start - 4);
  out[start] = uint8_t(size >> 24); out[start + 1] = uint8_t(size >> 16);
  out[start + 2] = uint8_t(size >> 8); out[start + 3] = uint8_t(size);
  return true;
}

}  // namespace kwire
