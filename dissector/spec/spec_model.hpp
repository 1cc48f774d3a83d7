// The spec model: Kafka's message spec JSON (as in common/message/*.json of
// the kafka-clients jar, // comments allowed) loaded and validated. Every
// problem names the file, the field and the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kwire::spec {

// "0+", "1-3", "5", "none".
struct Versions {
  int lo = 0;
  int hi = -1;  // hi < lo: empty
  static constexpr int kOpen = 0x7fff;
  bool empty() const { return hi < lo; }
  bool contains(int v) const { return v >= lo && v <= hi; }
  std::string str() const;
};
std::optional<Versions> parse_versions(std::string_view s);

struct FieldSpec {
  std::string name;
  std::string type;            // as written: "int32", "[]string", "[]Topic", "Cursor"
  Versions versions;
  Versions nullable;           // empty when not nullable
  std::optional<Versions> flexible;  // field-level override (e.g. ClientId "none")
  Versions tagged;
  int tag = -1;
  std::string default_value;
  bool ignorable = false;
  bool map_key = false;
  std::string entity;
  std::vector<FieldSpec> fields;     // inline struct fields

  bool is_array() const { return type.rfind("[]", 0) == 0; }
  std::string_view element_type() const { return is_array() ? std::string_view(type).substr(2) : std::string_view(type); }
};

struct StructSpec {
  std::string name;
  Versions versions;
  std::vector<FieldSpec> fields;
};

struct MessageSpec {
  std::string file;            // where it was loaded from
  std::string name;            // "StreamsGroupHeartbeatRequest"
  std::string type;            // request, response, header, data, metadata, coordinator-key, ...
  int api_key = -1;
  Versions valid;
  Versions flexible;
  bool latest_unstable = false;
  std::vector<std::string> listeners;
  std::vector<FieldSpec> fields;
  std::vector<StructSpec> common_structs;

  bool is_api() const { return (type == "request" || type == "response") && api_key >= 0; }
  // Finds a struct type by name: inline (nested) or common.
  const std::vector<FieldSpec>* struct_fields(std::string_view name) const;
};

struct SpecError {
  std::string file;
  std::string field;           // dotted path, empty for message-level problems
  std::string reason;
  std::string str() const;
};

struct LoadResult {
  std::vector<MessageSpec> messages;
  std::vector<SpecError> errors;
  bool ok() const { return errors.empty(); }
};

// Parses and validates one spec. On failure returns nullopt and appends errors.
std::optional<MessageSpec> parse_spec(std::string_view text, const std::string& file,
                                      std::vector<SpecError>& errors);
std::optional<MessageSpec> load_spec_file(const std::string& path, std::vector<SpecError>& errors);
// Every *.json in a directory (sorted by name). Non-message files (no "type")
// are errors; a directory that cannot be read is an error.
LoadResult load_spec_dir(const std::string& dir);

bool is_primitive(std::string_view type);  // int8..float64, bool, uuid, string, bytes, records

}  // namespace kwire::spec
