// Conformance with Apache Kafka's own serializers.
//
// Kafka -> kwire: the corpus (tests/conformance-corpus/, or the directory in
// $KWIRE_CONFORMANCE_CORPUS) holds random messages made and serialized by
// Kafka's generated message classes, with Kafka's JSON converter rendering of
// each (testbed/conformance, GenerateCorpus). kwire decodes every message,
// its JSON must agree with Kafka's field by field, and encoding the decoded
// message must give Kafka's bytes back exactly.
//
// kwire -> Kafka: random messages from kwire's MessageGenerator, encoded by
// kwire, are read and re-serialized by Kafka's classes (Reserialize), byte
// for byte. This needs the Java side built (`make conformance` does it);
// without it the test is skipped and says so.
//
// The suite is named in lower case so that `ctest -R conformance` selects it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "dissector/output/output.hpp"
#include "dissector/protocol/generator.hpp"
#include "tests/test_support.hpp"
#include "wire/wire.hpp"

using namespace kwire;
// The full corpus is ~230 MB of JSON, parsed twice per message, and this file
// is built optimized even in Debug builds (tests/CMakeLists.txt). A JSON type
// of its own (long long, not int64_t's long) keeps its parser's template
// instances apart from the other tests' unoptimized ones, which the linker
// would otherwise be free to pick.
using json = nlohmann::basic_json<std::map, std::vector, std::string, bool, long long, unsigned long long, double>;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Where kwire's JSON and Kafka's JSON converters represent a value
// differently. This is the one list; everything else must be equal.
//
//  records   Kafka's converters write a records field as "" (KIP-673: the
//            bytes are not rendered); kwire writes its decoded batches. The
//            batches are compared with the corpus line's "records": Kafka's
//            own record reader's view of the same bytes (RecordsView.java).
//  unknown   Kafka's converters drop unknown tagged fields; kwire lists them
//  tags      as "_unknownTaggedFields". Not compared as JSON: the byte-exact
//            re-encoding below covers them.
//  nested    A bytes field carrying a serialized structure (consumer
//            protocol metadata and assignments, the request, response and
//            principal an Envelope carries) is its decoded object in kwire's
//            JSON, base64 in Kafka's. The object is compared with the corpus
//            line's "nested": Kafka's JSON of the payload (for data structs
//            with "version" added, for enveloped messages {header, body}).
//  sensitive SaslAuthenticate AuthBytes, delegation token Hmac and SCRAM
//            Salt/SaltedPassword are "<redacted>" in kwire's JSON; Kafka's
//            value is compared with the field's bytes instead.
// (JSON text is compared as parsed values: key order, escapes and number
// spelling do not matter; a float64 must be the same double, sign of zero
// included, and NaN/Infinity the same string.)
// ---------------------------------------------------------------------------
constexpr const char* kUnknownTagsKey = "_unknownTaggedFields";
constexpr const char* kRedacted = "<redacted>";

// The corpus of the pinned release (KWIRE_CONFORMANCE_CORPUS), and the one of
// the older release whose specs give kwire the versions the pinned one dropped
// (KWIRE_CONFORMANCE_OLDER_CORPUS); the committed small ones by default.
std::string corpus_dir(bool older = false) {
  const char* d = std::getenv(older ? "KWIRE_CONFORMANCE_OLDER_CORPUS" : "KWIRE_CONFORMANCE_CORPUS");
  if (d && *d) return d;
  return std::string(KWIRE_SOURCE_DIR) + (older ? "/tests/conformance-corpus-older" : "/tests/conformance-corpus");
}

std::vector<uint8_t> base64_decode(std::string_view s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = val(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

// The size prefix, a header kwire's decoder expects for `m` (the versions
// Kafka's rules give), then `body`.
std::vector<uint8_t> with_header(const MessageProgram& m, int32_t corr, const std::vector<uint8_t>& body) {
  test::Bytes b;
  if (m.direction == Direction::Request) {
    int hv = request_header_version(m.api_key, m.version, m.flexible);
    b.i16(m.api_key).i16(m.version).i32(corr);
    if (hv >= 1) b.str("kwire-conformance");
    if (hv >= 2) b.tags0();
  } else {
    b.i32(corr);
    if (response_header_version(m.api_key, m.flexible) >= 1) b.tags0();
  }
  b.raw(body);
  return b.message();
}

// kwire's JSON of a decoded frame: {"header": {...}, "body": {...}, ...}.
json kwire_json(const ProgramSet& ps, const Frame& f) {
  TextBuffer s;
  FrameContext ctx;
  write_json(s, ps, f, ctx);
  return json::parse(s.view());
}

std::string first_difference(const std::vector<uint8_t>& kafka, const std::vector<uint8_t>& kwire) {
  size_t i = 0;
  while (i < kafka.size() && i < kwire.size() && kafka[i] == kwire[i]) ++i;
  char b[160];
  snprintf(b, sizeof b, "re-encoded bytes differ at offset %zu of %zu/%zu (kafka %s, kwire %s)", i, kafka.size(),
           kwire.size(), i < kafka.size() ? std::to_string(kafka[i]).c_str() : "end",
           i < kwire.size() ? std::to_string(kwire[i]).c_str() : "end");
  return b;
}

// Walks a decoded frame's tape, kwire's JSON of it and Kafka's JSON together
// and notes every difference (by JSON pointer) that the table above does not
// allow.
class Compare {
 public:
  Compare(const ProgramSet& ps, const Frame& f, const json* records, std::vector<std::string>& problems,
          const json* nested = nullptr)
      : ps_(ps), f_(f), problems_(problems) {
    if (records)
      for (const auto& r : *records) records_[r.at("path").get<std::string>()] = &r.at("batches");
    if (nested)
      for (const auto& r : *nested) nested_[r.at("path").get<std::string>()] = &r.at("json");
  }

  // Payloads the corpus line names that kwire did not decode.
  void unvisited_nested() {
    for (const auto& [path, j] : nested_)
      if (!visited_.count(path)) note(path, "the corpus has a nested payload here; kwire kept the bytes");
  }

  void structure(uint32_t node, const json& kw, const json& kf, const std::string& path) {
    if (!kw.is_object() || !kf.is_object()) return note(path, "not an object", kw, kf);
    std::set<std::string> seen;
    bool unknown = false;
    for (uint32_t c : Children(f_, node)) {
      const Node& n = f_.nodes[c];
      if (n.desc == kDescUnknownTag) { unknown = true; continue; }
      std::string key(ps_.field(n.desc).json_name);
      seen.insert(key);
      std::string p = path + "/" + key;
      auto w = kw.find(key);
      auto k = kf.find(key);
      if (w == kw.end()) { note(p, "missing in kwire's JSON"); continue; }
      if (k == kf.end()) { note(p, "kwire decoded a field Kafka's JSON does not have", *w, json()); continue; }
      value(c, *w, *k, p);
    }
    for (const auto& [key, v] : kf.items())
      if (!seen.count(key)) note(path + "/" + key, "in Kafka's JSON, not decoded by kwire", json(), v);
    size_t expected = seen.size() + (unknown ? 1 : 0);
    if (kw.size() != expected)
      note(path, "kwire's JSON object has " + std::to_string(kw.size()) + " keys, the tape " + std::to_string(expected) +
                     " (duplicate or stray keys)");
    if (unknown && !kw.contains(kUnknownTagsKey)) note(path, "unknown tagged fields missing from kwire's JSON");
  }

 private:
  void note(const std::string& path, const std::string& what, const json& kw = json(), const json& kf = json()) {
    std::string s = (path.empty() ? "/" : path) + ": " + what;
    if (!kw.is_null() || !kf.is_null()) s += " (kwire " + kw.dump() + ", kafka " + kf.dump() + ")";
    problems_.push_back(std::move(s));
  }

  void value(uint32_t c, const json& kw, const json& kf, const std::string& path) {
    const Node& n = f_.nodes[c];
    const FieldDesc& d = ps_.field(n.desc);
    if (n.is_null() || kf.is_null()) {
      if (!(n.is_null() && kw.is_null() && kf.is_null())) note(path, "null in one only", kw, kf);
      return;
    }
    if (d.flags & kSensitive) {
      if (kw != kRedacted) note(path, "sensitive field not redacted", kw, kf);
      std::string raw = n.type == WireType::String ? std::string(n.str()) : wire::base64(n.bytes());
      if (kf != raw) note(path, "Kafka's value differs from the field's bytes", json(raw), kf);
      return;
    }
    switch (n.type) {
      case WireType::Bool:
        if (!kw.is_boolean() || kw != kf) note(path, "bool differs", kw, kf);
        return;
      case WireType::Int8: case WireType::Int16: case WireType::Int32: case WireType::Int64:
      case WireType::Uint16: case WireType::Uint32:
        if (!kw.is_number_integer() || !kf.is_number_integer() || kw.get<int64_t>() != kf.get<int64_t>())
          note(path, "integer differs", kw, kf);
        return;
      case WireType::Float64: {
        if (kf.is_string() || kw.is_string()) {
          if (kw != kf) note(path, "non-finite float64 written differently", kw, kf);
          return;
        }
        double a = kw.get<double>(), b = kf.get<double>();
        if (!kw.is_number() || std::memcmp(&a, &b, sizeof a) != 0 || a != n.v.f) note(path, "float64 differs", kw, kf);
        return;
      }
      case WireType::Bytes:
        if (n.flags & kNested) {
          if (kf != wire::base64(n.bytes())) note(path, "Kafka's JSON of the payload's bytes differs", json(), kf);
          auto it = nested_.find(path);
          if (it == nested_.end()) return note(path, "kwire decoded a nested payload the corpus line does not have", kw);
          visited_.insert(path);
          same(kw, *it->second, path);
          return;
        }
        [[fallthrough]];
      case WireType::Uuid: case WireType::String:
        if (!kw.is_string() || kw != kf) note(path, std::string(wire_type_name(n.type)) + " differs", kw, kf);
        return;
      case WireType::Records: {
        if (kf != "") note(path, "Kafka's JSON of records is not \"\"", kw, kf);
        auto it = records_.find(path);
        if (it == records_.end()) return note(path, "no record reading for this records field in the corpus line");
        same(kw, *it->second, path);
        return;
      }
      case WireType::Array: {
        if (!kw.is_array() || !kf.is_array() || kw.size() != kf.size() || kw.size() != n.aux)
          return note(path, "array differs in length", json(kw.size()), json(kf.size()));
        size_t i = 0;
        for (uint32_t e : Children(f_, c)) {
          value(e, kw[i], kf[i], path + "/" + std::to_string(i));
          ++i;
        }
        return;
      }
      case WireType::Struct:
        structure(c, kw, kf, path);
        return;
      default:
        note(path, "unexpected node type " + std::string(wire_type_name(n.type)));
    }
  }

  // Plain JSON equality, with the path of the first difference.
  void same(const json& kw, const json& kf, const std::string& path) {
    if (kw.type() != kf.type() && !(kw.is_number_integer() && kf.is_number_integer()))
      return note(path, "data differs", kw, kf);
    if (kw.is_object()) {
      std::set<std::string> keys;
      for (const auto& [k, v] : kw.items()) keys.insert(k);
      for (const auto& [k, v] : kf.items()) keys.insert(k);
      for (const auto& k : keys) {
        if (!kw.contains(k) || !kf.contains(k)) {
          note(path + "/" + k, "field in one only", kw.value(k, json()), kf.value(k, json()));
          continue;
        }
        same(kw[k], kf[k], path + "/" + k);
      }
    } else if (kw.is_array()) {
      if (kw.size() != kf.size()) return note(path, "array differs in length", json(kw.size()), json(kf.size()));
      for (size_t i = 0; i < kw.size(); ++i) same(kw[i], kf[i], path + "/" + std::to_string(i));
    } else if (kw != kf) {
      note(path, "data differs", kw, kf);
    }
  }

  const ProgramSet& ps_;
  const Frame& f_;
  std::map<std::string, const json*> records_;
  std::map<std::string, const json*> nested_;
  std::set<std::string> visited_;
  std::vector<std::string>& problems_;
};

struct CorpusFile {
  fs::path path;
  int16_t api = -1, version = -1;
  Direction dir = Direction::Request;
  bool header = false;   // a request-header-vN / response-header-vN file
  int header_version = -1;
};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "088-StreamsGroupHeartbeat-v1-response.jsonl", "request-header-v2.jsonl".
bool parse_corpus_name(std::string name, CorpusFile& f) {
  const std::string ext = ".jsonl";
  if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) return false;
  name.resize(name.size() - ext.size());
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t dash = name.find('-', start);
    parts.push_back(name.substr(start, dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (parts.size() < 3) return false;
  const std::string& dir = parts.size() == 3 ? parts[0] : parts.back();
  if (dir != "request" && dir != "response") return false;
  f.dir = dir == "request" ? Direction::Request : Direction::Response;
  if (parts.size() == 3) {  // request-header-vN
    if (parts[1] != "header" || parts[2].size() < 2 || parts[2][0] != 'v' || !all_digits(parts[2].substr(1))) return false;
    f.header = true;
    f.header_version = std::stoi(parts[2].substr(1));
    return true;
  }
  const std::string& v = parts[parts.size() - 2];
  if (parts.size() != 4 || parts[0].size() != 3 || !all_digits(parts[0]) || v.size() < 2 || v[0] != 'v' ||
      !all_digits(v.substr(1)))
    return false;
  f.api = static_cast<int16_t>(std::stoi(parts[0]));
  f.version = static_cast<int16_t>(std::stoi(v.substr(1)));
  return true;
}

std::vector<CorpusFile> corpus_files(const std::string& dir) {
  std::vector<CorpusFile> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    CorpusFile f;
    f.path = e.path();
    if (parse_corpus_name(e.path().filename().string(), f)) out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  return out;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The triples kwire decodes with the pinned release's specs (older = false),
// or with the older release's specs (the versions the pinned one dropped).
size_t known_triples(const ProgramSet& ps, bool older) {
  size_t n = 0;
  for (const auto& m : ps.messages())
    if (ps.find(m.api_key, m.version, m.direction) == &m && m.older == older) ++n;
  return n;
}


// Kafka -> kwire over one corpus: every message decodes, its JSON agrees
// with Kafka's and it re-encodes to Kafka's bytes; the corpus covers every
// triple kwire takes from that release (`older`: the older release).
void check_corpus(bool older) {
  const ProgramSet& ps = ProgramSet::release();
  const std::string dir = corpus_dir(older);
  ASSERT_TRUE(fs::is_directory(dir)) << "no conformance corpus at " << dir;
  std::ifstream mf(dir + "/manifest.json");
  ASSERT_TRUE(mf) << dir << "/manifest.json is missing";
  const json manifest = json::parse(mf);
  const size_t offered = manifest.at("triples").get<size_t>();

  FrameDecoder decoder(ps);
  FrameEncoder encoder(ps);
  Frame frame;
  std::vector<uint8_t> encoded;
  std::string error;
  std::set<int> apis;
  std::set<std::tuple<int, int, int>> triples;
  // The first body of each triple, to carry the header corpus lines.
  std::map<std::tuple<int, int, int>, std::vector<uint8_t>> sample_body;
  size_t messages = 0, mismatches = 0, printed = 0, nested_payloads = 0;
  const size_t print_limit = static_cast<size_t>(env_int("KWIRE_CONFORMANCE_PRINT", 40));

  auto report = [&](const std::string& where, const std::vector<std::string>& problems) {
    ++mismatches;
    for (const auto& p : problems) {
      if (printed++ < print_limit) std::printf("MISMATCH %s: %s\n", where.c_str(), p.c_str());
    }
  };

  auto files = corpus_files(dir);
  // Bodies first: header lines borrow a body of the api version they name.
  std::stable_partition(files.begin(), files.end(), [](const CorpusFile& f) { return !f.header; });
  for (const auto& cf : files) {
    std::ifstream in(cf.path);
    std::string line;
    size_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      ++messages;
      const std::string where = cf.path.filename().string() + ":" + std::to_string(number);
      std::vector<std::string> problems;
      json l = json::parse(line);
      std::vector<uint8_t> kafka_bytes = base64_decode(l.at("base64").get<std::string>());
      int16_t api = cf.api, version = cf.version;
      if (cf.header) {
        api = l.at("apiKey").get<int16_t>();
        version = l.at("apiVersion").get<int16_t>();
      }
      const MessageProgram* m = ps.find(api, version, cf.dir);
      if (!m) {
        report(where, {"kwire has no program for api " + std::to_string(api) + " v" + std::to_string(version)});
        continue;
      }
      if (m->older != older) {
        report(where, {std::string("kwire reads api ") + std::to_string(api) + " v" + std::to_string(version) +
                       " with the " + (m->older ? "older" : "pinned") + " release's specs, not this corpus's"});
        continue;
      }
      auto key = std::make_tuple(int(api), int(version), int(cf.dir));
      if (!cf.header) {
        apis.insert(api);
        triples.insert(key);
      }
      std::vector<uint8_t> message;
      if (!cf.header) {
        message = with_header(*m, 1000 + static_cast<int32_t>(number), kafka_bytes);
        sample_body.emplace(key, kafka_bytes);
      } else {
        auto body = sample_body.find(key);
        if (body == sample_body.end()) {
          report(where, {"no corpus body for the api version this header names"});
          continue;
        }
        test::Bytes b;
        b.raw(kafka_bytes).raw(body->second);
        message = b.message();
      }
      ResponseHint hint;  // what a response's nested payloads need from its request
      if (const auto h = l.find("hint"); h != l.end()) {
        hint.consumer_protocol = h->value("consumerProtocol", false);
        hint.inner_api_key = h->value("innerApiKey", int16_t{-1});
        hint.inner_api_version = h->value("innerApiVersion", int16_t{-1});
      }
      // An Envelope's RequestData is a request by definition; the random bytes
      // of the corpus lines without "nested" are not one, and kwire says so
      // (tests/test_nested.cpp). Those lines are read without looking inside.
      decoder.set_nested(!(api == 58 && cf.dir == Direction::Request && !l.contains("nested")));
      if (cf.dir == Direction::Request) decoder.decode_request(message, frame);
      else decoder.decode_response(message, api, version, frame, false, hint);
      if (!frame.ok()) {
        report(where, {"kwire cannot decode it: " + frame.errors.front().reason + " at offset " +
                       std::to_string(frame.errors.front().offset)});
        continue;
      }
      if (cf.header && frame.header_version != cf.header_version)
        problems.push_back("kwire read header v" + std::to_string(frame.header_version));
      json kw;
      try {
        kw = kwire_json(ps, frame);
      } catch (const json::exception& e) {
        TextBuffer out;
        write_json(out, ps, frame, FrameContext{});
        std::string text = out.str();
        size_t at = 0;
        if (const char* c = std::strstr(e.what(), "column ")) at = std::strtoul(c + 7, nullptr, 10);
        report(where, {std::string("kwire's JSON does not parse: ") + e.what() + ": ..." +
                       text.substr(at > 120 ? at - 120 : 0, 160) + "..."});
        continue;
      }
      const json* records = l.contains("records") ? &l["records"] : nullptr;
      const json* nested = l.contains("nested") ? &l["nested"] : nullptr;
      Compare cmp(ps, frame, records, problems, nested);
      if (cf.header) cmp.structure(0, kw.at("header"), l.at("json"), "");
      else cmp.structure(frame.body, kw.at("body"), l.at("json"), "");
      cmp.unvisited_nested();
      if (nested) nested_payloads += nested->size();
      encoded.clear();
      if (!encoder.encode(frame, encoded, error)) problems.push_back("kwire cannot encode it again: " + error);
      else if (encoded != message) problems.push_back(first_difference(message, encoded));
      if (!problems.empty()) report(where, problems);
    }
  }
  std::printf("conformance: %s%zu apis, %zu api-versions, %zu messages (%zu nested payloads), %zu mismatches\n",
              older ? ("kafka " + manifest.at("kafka").get<std::string>() + ", ").c_str() : "", apis.size(),
              triples.size(), messages, nested_payloads, mismatches);
  std::fflush(stdout);
  EXPECT_EQ(mismatches, 0u);
  // JoinGroup, SyncGroup and Envelope lines with payloads made by Kafka's classes.
  if (!older) {
    EXPECT_GT(nested_payloads, 0u) << "the corpus has no nested payloads (GenerateCorpus, Nested.java)";
  }
  EXPECT_EQ(triples.size(), offered) << "api versions the corpus offers (" << manifest.at("kafka") << ")";
  EXPECT_EQ(triples.size(), known_triples(ps, older)) << "api versions kwire takes from that release";
  EXPECT_EQ(apis.size(), manifest.at("apis").get<size_t>());
}

}  // namespace

TEST(conformance, KwireAgreesWithKafkaOnEveryApiVersion) { check_corpus(false); }

// The versions from the older release's specs (Produce v0-2, Fetch v0-3, the
// ZooKeeper-era inter-broker APIs, ...) against that release's serializers.
TEST(conformance, KwireAgreesWithTheOlderReleaseOnTheVersionsItGives) { check_corpus(true); }

// Found by the full corpus: an ApiVersions response of version N > 0 whose
// ErrorCode is UNSUPPORTED_VERSION (35). Kafka's client reads it as version N
// and falls back to the v0 layout only when that fails (a broker that does
// not support N answers in v0); kwire switched to v0 on the error code alone
// and then found bytes left over.
TEST(conformance, ApiVersionsResponseFallsBackToV0OnlyWhenVersionNDoesNotFit) {
  const ProgramSet& ps = ProgramSet::release();
  FrameDecoder decoder(ps);
  Frame f;
  test::Bytes v3;  // response header v0 (always, for ApiVersions), then a whole v3 body
  v3.i32(5).i16(35)                    // CorrelationId, ErrorCode UNSUPPORTED_VERSION
      .carr(1).i16(0).i16(0).i16(11).tags0()  // ApiKeys: Produce 0-11
      .i32(0).tags0();                 // ThrottleTimeMs, no tagged fields
  decoder.decode_response(v3.message(), 18, 3, f);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.errors.front().reason);
  EXPECT_EQ(f.api_version, 3);

  test::Bytes v0;  // what a broker without v3 sends: the v0 layout
  v0.i32(6).i16(35).i32(0);            // CorrelationId, ErrorCode, ApiKeys [] (int32 count)
  decoder.decode_response(v0.message(), 18, 3, f);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.errors.front().reason);
  EXPECT_EQ(f.api_version, 0);
}

// ---------------------------------------------------------------------------
// kwire -> Kafka
// ---------------------------------------------------------------------------
namespace {

// Kafka writes a tagged field only when it differs from its default, and its
// reader rejects a tag that the struct uses in another version. kwire's
// generator does neither on purpose (decoders must cope), so before handing
// its messages to Kafka this copy leaves out what Kafka would never write.
class KafkaCanonical {
 public:
  explicit KafkaCanonical(const ProgramSet& ps) : ps_(ps) {
    for (const auto& m : ps.messages()) collect_tags(m, ps.field(m.root).sub);
  }

  void copy(const Frame& src, const MessageProgram& m, Frame& dst) const {
    dst.clear();
    dst.program = src.program;
    dst.api_key = src.api_key;
    dst.api_version = src.api_version;
    dst.direction = src.direction;
    dst.correlation_id = src.correlation_id;
    dst.header_version = src.header_version;
    node(src, m, 0, dst, Frame::kRoot);
    dst.body = node(src, m, src.body, dst, Frame::kRoot);
  }

 private:
  static uint64_t key(const MessageProgram& m, std::string_view s) {
    return (uint64_t(uint16_t(m.api_key)) << 48) ^ (uint64_t(m.direction) << 47) ^ std::hash<std::string_view>()(s);
  }

  void collect_tags(const MessageProgram& m, int32_t sp_idx) {
    if (sp_idx < 0) return;
    const StructProgram& sp = ps_.structure(static_cast<uint32_t>(sp_idx));
    auto& tags = tags_[key(m, sp.name)];
    for (uint32_t i = 0; i < sp.tagged_count; ++i) tags.insert(ps_.field(sp.first_tagged + i).tag);
    for (uint32_t i = 0; i < sp.field_count + sp.tagged_count; ++i) {
      uint32_t di = i < sp.field_count ? sp.first_field + i : sp.first_tagged + (i - sp.field_count);
      collect_tags(m, ps_.field(di).sub);
    }
  }

  bool keep(const Frame& f, const MessageProgram& m, uint32_t c, std::string_view struct_name) const {
    const Node& n = f.nodes[c];
    if (n.desc == kDescUnknownTag) {
      auto it = tags_.find(key(m, struct_name));
      return it == tags_.end() || !it->second.count(static_cast<int32_t>(n.tag));
    }
    const FieldDesc& d = ps_.field(n.desc);
    if (d.tagged() && !(n.flags & kElement)) return !is_default(f, m, c);
    return true;
  }

  static int64_t integer_default(std::string_view s) {
    if (s.empty()) return 0;
    return std::strtoll(std::string(s).c_str(), nullptr, 0);
  }

  bool is_default(const Frame& f, const MessageProgram& m, uint32_t c) const {
    const Node& n = f.nodes[c];
    const FieldDesc& d = ps_.field(n.desc);
    const std::string_view def = d.default_value;
    if (n.is_null()) return def == "null";
    switch (n.type) {
      case WireType::Bool: return (n.v.i != 0) == (def == "true");
      case WireType::Int8: case WireType::Int16: case WireType::Int32: case WireType::Int64:
      case WireType::Uint16: case WireType::Uint32:
        return n.v.i == integer_default(def);
      case WireType::Float64: return n.v.f == (def.empty() ? 0.0 : std::strtod(std::string(def).c_str(), nullptr));
      case WireType::Uuid: {
        static const uint8_t zero[16] = {};
        return def.empty() ? std::memcmp(n.v.p, zero, 16) == 0 : wire::uuid_to_string(n.v.p) == def;
      }
      case WireType::String: return def != "null" && n.str() == def;
      case WireType::Bytes: return def != "null" && n.aux == 0;
      case WireType::Records: return false;
      case WireType::Array: return def != "null" && n.aux == 0;
      case WireType::Struct: {
        if (def == "null") return false;
        const std::string_view name = ps_.structure(static_cast<uint32_t>(d.sub)).name;
        for (uint32_t k : Children(f, c)) {
          if (!keep(f, m, k, name)) continue;
          const Node& x = f.nodes[k];
          if (x.desc == kDescUnknownTag || ps_.field(x.desc).tagged() || !is_default(f, m, k)) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  uint32_t node(const Frame& src, const MessageProgram& m, uint32_t i, Frame& dst, uint32_t parent) const {
    const Node& n = src.nodes[i];
    uint32_t k = dst.open(n.desc, n.type, parent, 0, n.flags);
    dst.nodes[k].aux = n.aux;
    dst.nodes[k].v = n.v;
    dst.nodes[k].tag = n.tag;
    if (n.type == WireType::Struct && !n.is_null()) {
      const FieldDesc& d = ps_.field(n.desc);
      const std::string_view name = ps_.structure(static_cast<uint32_t>(d.sub)).name;
      for (uint32_t c : Children(src, i))
        if (keep(src, m, c, name)) node(src, m, c, dst, k);
    } else if (n.type == WireType::Array) {
      for (uint32_t c : Children(src, i)) node(src, m, c, dst, k);
    }
    // Records keep their bytes (v.p/aux); their decoded children are not needed to encode.
    dst.close(k, 0);
    return k;
  }

  const ProgramSet& ps_;
  std::unordered_map<uint64_t, std::set<int32_t>> tags_;
};

// kwire -> Kafka: random messages of every triple kwire takes from a release,
// encoded by kwire, read and written back by that release's classes
// (testbed/conformance built into target/, or target-3.9/ for the older one).
void reserialize(bool older) {
  const std::string java_dir =
      std::string(KWIRE_SOURCE_DIR) + (older ? "/testbed/conformance/target-3.9" : "/testbed/conformance/target");
  const bool required = std::getenv("KWIRE_CONFORMANCE_REQUIRE_JAVA") != nullptr;
  const bool have_java = std::system("java -version >/dev/null 2>&1") == 0;
  if (!have_java || !fs::exists(java_dir + "/classpath.txt") || !fs::is_directory(java_dir + "/classes")) {
    if (required) FAIL() << "the Java re-serializer is required but not built in " << java_dir;
    GTEST_SKIP() << "kwire -> Kafka part skipped: the Java re-serializer is not built (" << java_dir
                 << "); `make conformance` builds it (needs a JDK and Maven)";
    return;
  }
  std::ifstream cpf(java_dir + "/classpath.txt");
  std::string cp((std::istreambuf_iterator<char>(cpf)), {});
  while (!cp.empty() && (cp.back() == '\n' || cp.back() == '\r')) cp.pop_back();

  const ProgramSet& ps = ProgramSet::release();
  const int per_triple = env_int("KWIRE_CONFORMANCE_REVERSE_COUNT", 20);
  KafkaCanonical canonical(ps);
  FrameEncoder encoder(ps);
  Frame generated, copy;
  std::vector<uint8_t> bytes;
  std::string error;
  const fs::path file = fs::temp_directory_path() / ("kwire-reserialize-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(file);
    for (const auto& m : ps.messages()) {
      if (ps.find(m.api_key, m.version, m.direction) != &m || m.older != older) continue;
      MessageGenerator gen(ps, 0x4b61666b61ull ^ (uint64_t(m.api_key) << 20) ^ (uint64_t(m.version) << 4) ^
                                   uint64_t(m.direction));
      GeneratorOptions wide;
      wide.max_array = 12;
      wide.max_string = 200;
      MessageGenerator gen_wide(ps, 0x77696465ull ^ (uint64_t(m.api_key) << 20) ^ (uint64_t(m.version) << 4) ^
                                        uint64_t(m.direction), wide);
      for (int i = 0; i < per_triple; ++i) {
        (i % 10 == 9 ? gen_wide : gen).generate(m, i, generated);
        canonical.copy(generated, m, copy);
        bytes.clear();
        ASSERT_TRUE(encoder.encode(copy, bytes, error)) << m.spec_name << " v" << m.version << ": " << error;
        out << m.api_key << ' ' << m.version << ' ' << (m.direction == Direction::Request ? "request" : "response")
            << ' ' << wire::base64({bytes.data() + 4, bytes.size() - 4}) << '\n';
      }
    }
  }
  const fs::path log = file.string() + ".out";
  std::string cmd = "java -cp '" + java_dir + "/classes:" + cp + "' kwire.conformance.Reserialize '" + file.string() +
                    "' >'" + log.string() + "' 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream lf(log);
  std::string text((std::istreambuf_iterator<char>(lf)), {});
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  fs::remove(file);
  fs::remove(log);
  EXPECT_EQ(status, 0) << "Kafka did not re-serialize every kwire message byte for byte";
  const size_t triples = known_triples(ps, older);
  EXPECT_NE(text.find("kafka-reserialize: " + std::to_string(triples * per_triple) + " messages, " +
                      std::to_string(triples) + " api-versions, 0 mismatches"),
            std::string::npos);
}

}  // namespace

TEST(conformance, KafkaReadsAndRewritesKwireMessagesByteIdentical) { reserialize(false); }

TEST(conformance, TheOlderReleaseReadsAndRewritesKwireMessagesOfItsVersions) { reserialize(true); }
