// The field model kwire-wsgen builds from a ProgramSet: one entry per field
// name, with the widest type any version gives that path.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dissector/protocol/program.hpp"
#include "dissector/wireshark/generated_fields.hpp"

namespace kwire::wireshark {

struct ModelField {
  std::string abbrev, name, blurb;
  GenType type = GenType::None;
  bool error_code = false;
  std::vector<std::pair<int32_t, std::string>> values;
};

struct FieldModel {
  std::vector<ModelField> fields;
  std::unordered_map<std::string, size_t> index;  // abbrev -> fields[i]
  std::map<int32_t, std::string> api_names;
  std::vector<std::pair<int32_t, std::string>> error_names;
};

GenType gen_type(WireType t, uint32_t desc);
// Every spec field path of every message in `ps` and the record fields. Fails
// when one path has types that cannot share a field (say string and int32).
std::optional<FieldModel> build_field_model(const ProgramSet& ps, std::string& error);

}  // namespace kwire::wireshark
