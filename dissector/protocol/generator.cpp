#include "dissector/protocol/generator.hpp"

#include <string>

#include "dissector/protocol/records.hpp"

namespace kwire {

MessageGenerator::MessageGenerator(const ProgramSet& ps, uint64_t seed, GeneratorOptions opts)
    : ps_(ps), rng_(seed), opts_(opts) {}

bool MessageGenerator::chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }

std::string_view MessageGenerator::text(Frame& f) {
  static const char* const kPieces[] = {"a", "Z", "9", "-", "_", ".", " ", "é", "ß", "中", "🙂", "orders", "streams"};
  std::string s;
  uint32_t n = static_cast<uint32_t>(rng_() % (opts_.max_string + 1));
  for (uint32_t i = 0; i < n; ++i) s += kPieces[rng_() % std::size(kPieces)];
  return f.own(std::move(s));
}

void MessageGenerator::generate(const MessageProgram& m, int32_t correlation_id, Frame& f) {
  f.clear();
  f.program = &m;
  f.api_key = m.api_key;
  f.api_version = m.version;
  f.direction = m.direction;
  f.correlation_id = correlation_id;
  uint32_t hdesc;
  if (m.direction == Direction::Request) {
    f.header_version = request_header_version(m.api_key, m.version, m.flexible);
    hdesc = ps_.request_header(f.header_version);
  } else {
    f.header_version = response_header_version(m.api_key, m.flexible);
    hdesc = ps_.response_header(f.header_version);
  }
  uint32_t h = f.open(hdesc, WireType::Struct, Frame::kRoot, 0);
  structure(f, static_cast<uint32_t>(ps_.field(hdesc).sub), h, 0);
  f.close(h, 0);
  // The header names the message it heads.
  for (uint32_t c : Children(f, h)) {
    auto name = ps_.field(f.nodes[c].desc).name;
    if (name == "RequestApiKey") f.nodes[c].v.i = m.api_key;
    else if (name == "RequestApiVersion") f.nodes[c].v.i = m.version;
    else if (name == "CorrelationId") f.nodes[c].v.i = correlation_id;
  }
  f.body = f.open(m.root, WireType::Struct, Frame::kRoot, 0);
  structure(f, static_cast<uint32_t>(ps_.field(m.root).sub), f.body, 0);
  f.close(f.body, 0);
}

void MessageGenerator::structure(Frame& f, uint32_t spi, uint32_t node, int depth) {
  const StructProgram& sp = ps_.structure(spi);
  for (uint32_t i = 0; i < sp.field_count; ++i)
    field(f, ps_.field(sp.first_field + i), sp.first_field + i, node, false, depth);
  if (!sp.flexible) return;
  // Tagged fields in ascending tag order, each present or absent; sometimes
  // an unknown tag after them (decoders must keep it).
  uint32_t last_tag = 0;
  for (uint32_t i = 0; i < sp.tagged_count; ++i) {
    uint32_t di = sp.first_tagged + i;
    if (!chance(50)) continue;
    uint32_t n = static_cast<uint32_t>(f.nodes.size());
    field(f, ps_.field(di), di, node, false, depth);
    f.nodes[n].tag = static_cast<uint32_t>(ps_.field(di).tag);
    last_tag = f.nodes[n].tag;
  }
  if (opts_.unknown_tags && chance(10)) {
    uint32_t highest = last_tag;
    for (uint32_t i = 0; i < sp.tagged_count; ++i)
      highest = std::max(highest, static_cast<uint32_t>(ps_.field(sp.first_tagged + i).tag));
    uint32_t n = f.leaf(kDescUnknownTag, WireType::Bytes, node, 0, 0);
    auto data = text(f);
    f.nodes[n].tag = highest + 1 + static_cast<uint32_t>(rng_() % 300);
    f.nodes[n].v.p = reinterpret_cast<const uint8_t*>(data.data());
    f.nodes[n].aux = static_cast<uint32_t>(data.size());
  }
}

void MessageGenerator::field(Frame& f, const FieldDesc& d, uint32_t di, uint32_t parent, bool element, int depth) {
  WireType t = element ? d.elem : d.type;
  uint8_t flags = element ? kElement : 0;
  bool may_be_null = d.nullable() && !element;
  switch (t) {
    case WireType::Int8: case WireType::Int16: case WireType::Int32: case WireType::Int64:
    case WireType::Uint16: case WireType::Uint32: case WireType::Float64: case WireType::Bool: {
      uint32_t n = f.leaf(di, t, parent, 0, 0);
      f.nodes[n].flags = flags;
      uint64_t r = rng_();
      switch (t) {
        case WireType::Int8: f.nodes[n].v.i = static_cast<int8_t>(r); break;
        case WireType::Int16: f.nodes[n].v.i = static_cast<int16_t>(r); break;
        case WireType::Int32: f.nodes[n].v.i = static_cast<int32_t>(r); break;
        case WireType::Uint16: f.nodes[n].v.i = static_cast<uint16_t>(r); break;
        case WireType::Uint32: f.nodes[n].v.i = static_cast<uint32_t>(r); break;
        case WireType::Bool: f.nodes[n].v.i = r & 1; f.nodes[n].aux = r & 1; break;
        case WireType::Float64: {
          double x = static_cast<double>(static_cast<int32_t>(r)) / 7.0;
          f.nodes[n].v.f = x;
          break;
        }
        default: f.nodes[n].v.i = static_cast<int64_t>(r); break;
      }
      return;
    }
    case WireType::Uuid: {
      std::string u(16, '\0');
      for (auto& c : u) c = static_cast<char>(rng_());
      auto s = f.own(std::move(u));
      uint32_t n = f.leaf(di, t, parent, 0, 0);
      f.nodes[n].flags = flags;
      f.nodes[n].v.p = reinterpret_cast<const uint8_t*>(s.data());
      f.nodes[n].aux = 16;
      return;
    }
    case WireType::String: case WireType::Bytes: case WireType::Records: {
      uint32_t n = f.open(di, t, parent, 0, flags);
      if (may_be_null && chance(20)) {
        f.nodes[n].flags |= kNull;
        f.close(n, 0);
        return;
      }
      std::string_view data;
      if (t == WireType::Records && opts_.records && chance(70)) {
        BatchSpec b;
        b.base_offset = static_cast<int64_t>(rng_() % 100000);
        b.codec = static_cast<Codec>(rng_() % 5);
        uint32_t count = 1 + static_cast<uint32_t>(rng_() % 3);
        for (uint32_t i = 0; i < count; ++i) {
          RecordSpec r;
          r.timestamp_delta = static_cast<int64_t>(i);
          if (chance(70)) r.key = std::string(text(f));
          if (chance(90)) r.value = std::string(text(f));
          if (chance(30)) r.headers.push_back({"h", std::string(text(f))});
          b.records.push_back(std::move(r));
        }
        auto bytes = encode_record_batch(b);
        data = f.own(std::string(bytes.begin(), bytes.end()));
      } else if (t != WireType::Records) {
        data = text(f);
      }
      f.nodes[n].v.p = reinterpret_cast<const uint8_t*>(data.data());
      f.nodes[n].aux = static_cast<uint32_t>(data.size());
      if (t == WireType::Records && !data.empty())
        decode_records(f, n, {reinterpret_cast<const uint8_t*>(data.data()), data.size()}, 0, 0);
      f.close(n, 0);
      return;
    }
    case WireType::Struct: {
      uint32_t n = f.open(di, t, parent, 0, flags);
      if (may_be_null && chance(25)) {
        f.nodes[n].flags |= kNull;
      } else {
        structure(f, static_cast<uint32_t>(d.sub), n, depth + 1);
      }
      f.close(n, 0);
      return;
    }
    case WireType::Array: {
      uint32_t n = f.open(di, t, parent, 0, flags);
      if (may_be_null && chance(20)) {
        f.nodes[n].flags |= kNull;
        f.close(n, 0);
        return;
      }
      // Deeper levels get shorter arrays so messages stay small.
      uint32_t max = depth > 2 ? 1 : opts_.max_array;
      uint32_t count = static_cast<uint32_t>(rng_() % (max + 1));
      f.nodes[n].aux = count;
      for (uint32_t i = 0; i < count; ++i) field(f, d, di, n, true, depth + 1);
      f.close(n, 0);
      return;
    }
    default:
      return;
  }
}

}  // namespace kwire
