#include "corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

namespace loopgen {

namespace fs = std::filesystem;

size_t Kind::max_body() const {
  size_t m = 0;
  for (const auto& b : requests) m = std::max(m, b.size());
  for (const auto& b : responses) m = std::max(m, b.size());
  return m;
}

const Kind* Corpus::find(int16_t api, int16_t version) const {
  auto it = index.find({api, version});
  return it == index.end() ? nullptr : &kinds[it->second];
}

bool in_version_range(const std::string& range, int v) {
  if (range == "none" || range.empty()) return false;
  if (range.back() == '+') return v >= std::stoi(range.substr(0, range.size() - 1));
  auto dash = range.find('-');
  if (dash == std::string::npos) return v == std::stoi(range);
  return v >= std::stoi(range.substr(0, dash)) && v <= std::stoi(range.substr(dash + 1));
}

namespace {

Bytes base64_decode(const std::string& s) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  Bytes out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : s) {
    if (ch == '=') break;
    auto pos = alphabet.find(ch);
    if (pos == std::string::npos) throw Error("bad base64 character in corpus");
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw Error("cannot read " + p.string());
  return nlohmann::json::parse(in);
}

std::vector<Bytes> read_bodies(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw Error("cannot read " + p.string());
  std::vector<Bytes> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    out.push_back(base64_decode(nlohmann::json::parse(line).at("base64").get<std::string>()));
  }
  if (out.empty()) throw Error(p.string() + " holds no message");
  return out;
}

// flexibleVersions and apiKey of one spec file; the key must be the corpus file's.
bool spec_flexible(const fs::path& spec, int api_key, int version) {
  nlohmann::json j = read_json(spec);
  if (j.at("apiKey").get<int>() != api_key)
    throw Error(spec.string() + " has apiKey " + j.at("apiKey").dump() + ", the corpus file name says " +
                std::to_string(api_key));
  return in_version_range(j.at("flexibleVersions").get<std::string>(), version);
}

void put16(Bytes& b, int16_t v) {
  b.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void put32(Bytes& b, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(u >> s));
}

Bytes with_size_prefix(Bytes header, const Bytes& body) {
  Bytes out;
  out.reserve(4 + header.size() + body.size());
  put32(out, static_cast<int32_t>(header.size() + body.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace

Corpus load_corpus(const std::string& corpus_dir, const std::string& spec_dir) {
  static const std::regex name_re(R"(^(\d{3})-([A-Za-z]+)-v(\d+)-request\.jsonl$)");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus_dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Corpus c;
  for (const auto& p : files) {
    std::smatch m;
    std::string base = p.filename().string();
    if (!std::regex_match(base, m, name_re)) continue;
    Kind k;
    k.api_key = static_cast<int16_t>(std::stoi(m[1]));
    k.name = m[2];
    k.api_version = static_cast<int16_t>(std::stoi(m[3]));
    fs::path response = p.parent_path() / (base.substr(0, base.size() - std::string("request.jsonl").size()) +
                                           "response.jsonl");
    k.requests = read_bodies(p);
    k.responses = read_bodies(response);
    k.request_flexible = spec_flexible(fs::path(spec_dir) / (k.name + "Request.json"), k.api_key, k.api_version);
    // ApiVersions responses keep header v0 whatever the version, so that a
    // client can read the broker's answer before the versions are agreed.
    k.response_flexible = k.api_key != 18 &&
                          spec_flexible(fs::path(spec_dir) / (k.name + "Response.json"), k.api_key, k.api_version);
    for (const auto& body : k.requests) k.answered.push_back(expects_response(k, body));
    c.index[{k.api_key, k.api_version}] = c.kinds.size();
    c.kinds.push_back(std::move(k));
  }
  if (c.kinds.empty()) throw Error("no NNN-Name-vV-request.jsonl files in " + corpus_dir);
  return c;
}

Bytes frame_request(const Kind& k, int32_t correlation_id, const std::string& client_id, const Bytes& body) {
  Bytes h;
  put16(h, k.api_key);
  put16(h, k.api_version);
  put32(h, correlation_id);
  // The client id is a classic int16-length string in header v2 as well.
  put16(h, static_cast<int16_t>(client_id.size()));
  h.insert(h.end(), client_id.begin(), client_id.end());
  if (k.request_flexible) h.push_back(0);  // no tagged fields
  return with_size_prefix(std::move(h), body);
}

Bytes frame_response(const Kind& k, int32_t correlation_id, const Bytes& body) {
  Bytes h;
  put32(h, correlation_id);
  if (k.response_flexible) h.push_back(0);
  return with_size_prefix(std::move(h), body);
}

namespace {

uint64_t read_uvarint(const uint8_t* m, size_t size, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (pos >= size) throw Error("request header ends inside a varint");
    uint8_t b = m[pos++];
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw Error("request header varint longer than 5 bytes");
}

}  // namespace

// ProduceRequest (every version in the corpus is v3+): TransactionalId, a
// nullable string (int16 length, or from v9 a compact one: unsigned varint of
// length + 1), then Acks int16.
bool expects_response(const Kind& k, const Bytes& body) {
  if (k.api_key != 0) return true;
  size_t pos = 0;
  if (k.request_flexible) {
    uint64_t n = read_uvarint(body.data(), body.size(), pos);
    pos += n > 0 ? n - 1 : 0;
  } else {
    if (body.size() < 2) throw Error("Produce body shorter than its TransactionalId length");
    auto len = static_cast<int16_t>((body[0] << 8) | body[1]);
    pos = 2 + static_cast<size_t>(std::max<int16_t>(len, 0));
  }
  if (pos + 2 > body.size()) throw Error("Produce body ends before Acks");
  auto acks = static_cast<int16_t>((body[pos] << 8) | body[pos + 1]);
  return acks != 0;
}

ParsedRequest parse_request(const Corpus& c, const uint8_t* m, size_t size) {
  if (size < 10) throw Error("request of " + std::to_string(size) + " bytes is shorter than a request header");
  ParsedRequest r;
  r.api_key = static_cast<int16_t>((m[0] << 8) | m[1]);
  r.api_version = static_cast<int16_t>((m[2] << 8) | m[3]);
  r.correlation_id = static_cast<int32_t>((uint32_t{m[4]} << 24) | (uint32_t{m[5]} << 16) | (uint32_t{m[6]} << 8) | m[7]);
  const Kind* k = c.find(r.api_key, r.api_version);
  if (!k)
    throw Error("request for api " + std::to_string(r.api_key) + " v" + std::to_string(r.api_version) +
                " which is not in the corpus");
  auto client_len = static_cast<int16_t>((m[8] << 8) | m[9]);
  size_t pos = 10 + static_cast<size_t>(std::max<int16_t>(client_len, 0));
  if (pos > size) throw Error("client id runs past the end of the request");
  if (k->request_flexible) {
    uint64_t n = read_uvarint(m, size, pos);
    for (uint64_t i = 0; i < n; ++i) {
      read_uvarint(m, size, pos);  // tag
      pos += read_uvarint(m, size, pos);
      if (pos > size) throw Error("tagged field runs past the end of the request");
    }
  }
  r.body_offset = pos;
  return r;
}

}  // namespace loopgen
