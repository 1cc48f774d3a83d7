#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dissector/spec/spec_model.hpp"

namespace kwire::spec {

using nlohmann::json;

std::string Versions::str() const {
  if (empty()) return "none";
  if (hi == kOpen) return std::to_string(lo) + "+";
  if (lo == hi) return std::to_string(lo);
  return std::to_string(lo) + "-" + std::to_string(hi);
}

static std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v >= Versions::kOpen) return std::nullopt;
  return v;
}

std::optional<Versions> parse_versions(std::string_view s) {
  if (s == "none") return Versions{0, -1};
  if (!s.empty() && s.back() == '+') {
    auto lo = parse_int(s.substr(0, s.size() - 1));
    if (!lo) return std::nullopt;
    return Versions{*lo, Versions::kOpen};
  }
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    auto lo = parse_int(s.substr(0, dash));
    auto hi = parse_int(s.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    return Versions{*lo, *hi};
  }
  auto v = parse_int(s);
  if (!v) return std::nullopt;
  return Versions{*v, *v};
}

std::string SpecError::str() const {
  std::string s = file;
  if (!field.empty()) s += ": field " + field;
  return s + ": " + reason;
}

bool is_primitive(std::string_view t) {
  static const std::set<std::string_view> kTypes = {"int8", "int16", "int32", "int64", "uint16",
      "uint32", "float64", "bool", "uuid", "string", "bytes", "records"};
  return kTypes.count(t) > 0;
}

static bool nullable_type(const FieldSpec& f) {
  if (f.is_array()) return true;
  auto t = f.element_type();
  return t == "string" || t == "bytes" || t == "records" || !is_primitive(t);
}

const std::vector<FieldSpec>* MessageSpec::struct_fields(std::string_view name) const {
  for (const auto& s : common_structs)
    if (s.name == name) return &s.fields;
  // Inline structs: depth-first through the field tree.
  std::vector<const std::vector<FieldSpec>*> stack{&fields};
  while (!stack.empty()) {
    const auto* fs = stack.back();
    stack.pop_back();
    for (const auto& f : *fs) {
      if (!f.fields.empty() && f.element_type() == name) return &f.fields;
      if (!f.fields.empty()) stack.push_back(&f.fields);
    }
  }
  for (const auto& s : common_structs)
    for (const auto& f : s.fields)
      if (!f.fields.empty() && f.element_type() == name) return &f.fields;
  return nullptr;
}

namespace {

// An integer as Kafka's spec reader (Jackson) takes it: a JSON integer, or a
// string of decimal digits ("tag": "0" appears in released specs).
std::optional<long long> integer(const json& j) {
  if (j.is_number_integer()) return j.get<long long>();
  if (!j.is_string()) return std::nullopt;
  const std::string& t = j.get_ref<const std::string&>();
  long long v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}


class Parser {
 public:
  Parser(const std::string& file, std::vector<SpecError>& errors) : file_(file), errors_(errors) {}

  std::optional<MessageSpec> message(const json& j) {
    MessageSpec m;
    m.file = file_;
    if (!j.is_object()) return fail("", "the top level is not a JSON object");
    m.name = str(j, "name", "", true);
    m.type = str(j, "type", "", true);
    if (j.contains("apiKey")) {
      auto key = integer(j["apiKey"]);
      if (!key) return fail("", "apiKey is not an integer");
      if (*key < 0 || *key > 32767) return fail("", "apiKey " + std::to_string(*key) + " out of range");
      m.api_key = static_cast<int>(*key);
    }
    m.valid = versions(j, "validVersions", "", true);
    m.flexible = versions(j, "flexibleVersions", "", false);
    m.latest_unstable = flag(j, "latestVersionUnstable", "");
    if (j.contains("listeners") && j["listeners"].is_array())
      for (const auto& l : j["listeners"]) if (l.is_string()) m.listeners.push_back(l.get<std::string>());
    if ((m.type == "request" || m.type == "response") && m.api_key < 0)
      return fail("", m.type + " spec has no apiKey");
    if (!j.contains("fields") || !j["fields"].is_array()) return fail("", "no \"fields\" array");
    m.fields = fields(j["fields"], "");
    if (j.contains("commonStructs")) {
      if (!j["commonStructs"].is_array()) return fail("", "\"commonStructs\" is not an array");
      for (const auto& s : j["commonStructs"]) {
        StructSpec ss;
        ss.name = str(s, "name", "commonStructs", true);
        ss.versions = versions(s, "versions", ss.name, true);
        if (!s.contains("fields") || !s["fields"].is_array()) { fail(ss.name, "common struct has no \"fields\" array"); continue; }
        ss.fields = fields(s["fields"], ss.name);
        m.common_structs.push_back(std::move(ss));
      }
    }
    if (failed_) return std::nullopt;
    validate(m);
    if (failed_) return std::nullopt;
    return m;
  }

 private:
  std::nullopt_t fail(const std::string& field, const std::string& reason) {
    errors_.push_back({file_, field, reason});
    failed_ = true;
    return std::nullopt;
  }

  std::string str(const json& j, const char* key, const std::string& where, bool required) {
    if (!j.contains(key)) {
      if (required) fail(where, std::string("missing \"") + key + "\"");
      return {};
    }
    if (!j[key].is_string()) { fail(where, std::string("\"") + key + "\" is not a string"); return {}; }
    return j[key].get<std::string>();
  }

  bool flag(const json& j, const char* key, const std::string& where) {
    if (!j.contains(key)) return false;
    if (!j[key].is_boolean()) { fail(where, std::string("\"") + key + "\" is not true or false"); return false; }
    return j[key].get<bool>();
  }

  Versions versions(const json& j, const char* key, const std::string& where, bool required) {
    std::string s = str(j, key, where, required);
    if (s.empty()) return Versions{0, -1};
    auto v = parse_versions(s);
    if (!v) { fail(where, std::string("bad version range \"") + s + "\" in " + key); return Versions{0, -1}; }
    return *v;
  }

  std::vector<FieldSpec> fields(const json& arr, const std::string& prefix) {
    std::vector<FieldSpec> out;
    for (const auto& j : arr) {
      FieldSpec f;
      if (!j.is_object()) { fail(prefix, "a field is not a JSON object"); continue; }
      f.name = str(j, "name", prefix.empty() ? "?" : prefix + ".?", true);
      std::string where = prefix.empty() ? f.name : prefix + "." + f.name;
      f.type = str(j, "type", where, true);
      f.versions = versions(j, "versions", where, true);
      f.nullable = versions(j, "nullableVersions", where, false);
      if (j.contains("flexibleVersions")) f.flexible = versions(j, "flexibleVersions", where, true);
      f.tagged = versions(j, "taggedVersions", where, false);
      if (j.contains("tag")) {
        auto tag = integer(j["tag"]);
        if (!tag || *tag < 0 || *tag > INT32_MAX) fail(where, "\"tag\" is not a non-negative integer");
        else f.tag = static_cast<int>(*tag);
      }
      if (j.contains("default")) {
        const auto& d = j["default"];
        f.default_value = d.is_string() ? d.get<std::string>() : d.dump();
      }
      f.ignorable = flag(j, "ignorable", where);
      f.map_key = flag(j, "mapKey", where);
      f.entity = str(j, "entityType", where, false);
      if (j.contains("fields")) {
        if (!j["fields"].is_array()) fail(where, "\"fields\" is not an array");
        else f.fields = fields(j["fields"], where);
      }
      out.push_back(std::move(f));
    }
    return out;
  }

  void validate(const MessageSpec& m) {
    check_fields(m, m.fields, "", 0);
    for (const auto& s : m.common_structs) check_fields(m, s.fields, s.name, 0);
    if (failed_) return;
    std::vector<std::string_view> open;
    check_cycles(m, m.fields, "", open);
  }

  // A struct that contains itself, directly or through others, has no finite
  // layout (Kafka's generator rejects it too).
  void check_cycles(const MessageSpec& m, const std::vector<FieldSpec>& fs, const std::string& prefix,
                    std::vector<std::string_view>& open) {
    for (const auto& f : fs) {
      std::string where = prefix.empty() ? f.name : prefix + "." + f.name;
      auto et = f.element_type();
      if (is_primitive(et)) continue;
      if (std::find(open.begin(), open.end(), et) != open.end()) {
        fail(where, "struct type \"" + std::string(et) + "\" contains itself");
        return;
      }
      const auto* sub = f.fields.empty() ? m.struct_fields(et) : &f.fields;
      if (!sub) continue;
      open.push_back(et);
      check_cycles(m, *sub, where, open);
      open.pop_back();
      if (failed_) return;
    }
  }

  void check_fields(const MessageSpec& m, const std::vector<FieldSpec>& fs, const std::string& prefix, int depth) {
    if (depth > 32) { fail(prefix, "structs nested more than 32 deep"); return; }
    std::set<std::string> names;
    std::set<int> tags;
    for (const auto& f : fs) {
      std::string where = prefix.empty() ? f.name : prefix + "." + f.name;
      if (f.name.empty()) {
        // A missing name was reported when the field was read; "name": "" was not.
        fail(prefix.empty() ? "?" : prefix + ".?", "empty field name");
        continue;
      }
      if (!names.insert(f.name).second) fail(where, "duplicate field name");
      auto et = f.element_type();
      if (et.empty()) { fail(where, "empty type"); continue; }
      bool prim = is_primitive(et);
      if (f.is_array() && et == "records") fail(where, "arrays of records are not a Kafka type");
      if (!prim) {
        if (!f.fields.empty()) {
          check_fields(m, f.fields, where, depth + 1);
        } else if (!m.struct_fields(et)) {
          fail(where, "type \"" + f.type + "\" is neither a primitive nor a struct defined in this spec");
        }
      } else if (!f.fields.empty()) {
        fail(where, "primitive type \"" + f.type + "\" cannot have nested fields");
      }
      if (!f.nullable.empty() && !nullable_type(f))
        fail(where, "type \"" + f.type + "\" cannot be nullable");
      if (!f.nullable.empty() && !f.versions.empty() && f.nullable.lo < f.versions.lo && f.nullable.hi < f.versions.lo)
        fail(where, "nullableVersions " + f.nullable.str() + " outside versions " + f.versions.str());
      if (!f.tagged.empty()) {
        if (f.tag < 0) fail(where, "taggedVersions without a \"tag\"");
        else if (!tags.insert(f.tag).second) fail(where, "duplicate tag " + std::to_string(f.tag));
        if (!m.flexible.empty() && f.tagged.lo < m.flexible.lo)
          fail(where, "taggedVersions " + f.tagged.str() + " start before flexibleVersions " + m.flexible.str());
      } else if (f.tag >= 0) {
        fail(where, "\"tag\" without taggedVersions");
      }
    }
  }

  const std::string& file_;
  std::vector<SpecError>& errors_;
  bool failed_ = false;
};

std::string position(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(col);
}

}  // namespace

std::optional<MessageSpec> parse_spec(std::string_view text, const std::string& file,
                                      std::vector<SpecError>& errors) {
  json j;
  try {
    j = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    errors.push_back({file, "", "invalid JSON at " + position(text, e.byte ? e.byte - 1 : 0) + ": " + what});
    return std::nullopt;
  } catch (const json::exception& e) {  // e.g. a number too large for any type
    errors.push_back({file, "", std::string("invalid JSON: ") + e.what()});
    return std::nullopt;
  }
  try {
    return Parser(file, errors).message(j);
  } catch (const json::exception& e) {  // a value of an unexpected JSON type
    errors.push_back({file, "", std::string("unexpected JSON value: ") + e.what()});
    return std::nullopt;
  }
}

std::optional<MessageSpec> load_spec_file(const std::string& path, std::vector<SpecError>& errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({path, "", "cannot open file"});
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_spec(ss.str(), path, errors);
}

LoadResult load_spec_dir(const std::string& dir) {
  LoadResult r;
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  }
  if (ec) {
    r.errors.push_back({dir, "", "cannot read directory: " + ec.message()});
    return r;
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths)
    if (auto m = load_spec_file(p, r.errors)) r.messages.push_back(std::move(*m));
  return r;
}

}  // namespace kwire::spec
