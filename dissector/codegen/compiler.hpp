// Compiles spec models into decode/encode programs (ProgramTables): one
// StructProgram per distinct (struct, version) layout, every field resolved
// for that version (nullable, compact, tagged). Used at build time by
// kwire-codegen and at run time for --spec-dir overlays, so both paths share
// one definition of the wire layout.
#pragma once

#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/program.hpp"
#include "dissector/spec/spec_model.hpp"

namespace kwire {

class SpecCompiler {
 public:
  explicit SpecCompiler(std::string origin, bool overlay = false);

  // Adds every version of an API message, the header versions of
  // RequestHeader/ResponseHeader, or every version of a data spec (type
  // "data": structures Kafka serializes into bytes fields). Other spec types
  // (metadata, coordinator keys and values) are skipped.
  void add(const spec::MessageSpec& m);
  // After add() of every pinned spec: the api versions of an older release
  // (`messages`, its whole spec set) that the tables do not have yet, from
  // `origin`, marked older. A version the older release marks unstable is
  // skipped (in both directions: only requests carry the mark), since its
  // layout may differ from what a later release shipped under that number.
  void add_older(const std::vector<spec::MessageSpec>& messages, const std::string& origin);

  const ProgramTables& tables() const { return t_; }
  // Strings referenced by tables(); valid as long as this compiler lives.
  const std::deque<std::string>& strings() const { return strings_; }
  bool has_request_header() const { return has_req_header_; }
  bool has_response_header() const { return has_resp_header_; }

 private:
  uint32_t compile_struct(const spec::MessageSpec& m, std::string_view name,
                          const std::vector<spec::FieldSpec>& fields, int version);
  FieldDesc compile_field(const spec::MessageSpec& m, const spec::FieldSpec& f, int version);
  uint32_t root(const spec::MessageSpec& m, int version);
  void add_version(const spec::MessageSpec& m, int version, std::string_view origin, bool older);
  std::string_view s(std::string v);

  std::string origin_;
  bool overlay_;
  ProgramTables t_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string, std::string_view> interned_;
  std::unordered_map<std::string, uint32_t> dedup_;
  bool has_req_header_ = false;
  bool has_resp_header_ = false;
};

// "Groups" -> "groups": the field names of Kafka's generated JSON converters.
std::string json_field_name(std::string_view spec_name);
// "StreamsGroupHeartbeatRequest" -> "StreamsGroupHeartbeat".
std::string api_name_of(std::string_view spec_name);
// Fields whose contents are secrets and never printed.
bool is_sensitive_field(std::string_view message, std::string_view field);

}  // namespace kwire
