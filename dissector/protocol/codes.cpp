#include "dissector/protocol/codes.hpp"

#include <array>

namespace kwire {

std::string_view error_name(int64_t code) {
  // The table is sorted by code and dense from -1; search anyway for safety.
  for (size_t i = 0; i < kErrorCodeCount; ++i)
    if (kErrorCodes[i].code == code) return kErrorCodes[i].name;
  return {};
}

bool is_error_code_field(const FieldDesc& d) { return d.flags & kErrorCode; }

namespace {

struct FieldCodes {
  std::string_view api_prefix;   // api names starting with this
  std::string_view field;
  std::array<std::string_view, 8> names;  // by value 0..7, empty when undefined
};

// Documented in the specs' comments and about texts (Kafka 4.4.0).
constexpr FieldCodes kFieldCodes[] = {
  {"StreamsGroupHeartbeat", "StatusCode",
   {"STALE_TOPOLOGY", "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS", "MISSING_INTERNAL_TOPICS",
    "SHUTDOWN_APPLICATION", "ASSIGNMENT_DELAYED", "MISSING_CLIENT_TAGS", ""}},
  {"StreamsGroup", "NodeType", {"", "SOURCE", "PROCESSOR", "SINK", "", "", "", ""}},
  {"UpdateStreamsGroup", "NodeType", {"", "SOURCE", "PROCESSOR", "SINK", "", "", "", ""}},
  {"StreamsGroupDescribe", "TopologyDescriptionStatus",
   {"NOT_REQUESTED", "NOT_STORED", "ERROR", "AVAILABLE", "", "", "", ""}},
};

}  // namespace

bool has_code_names(const FieldDesc& d) {
  if (is_error_code_field(d)) return true;
  if (!is_integer(d.type)) return false;
  for (const auto& fc : kFieldCodes)
    if (d.name == fc.field) return true;
  return false;
}

std::string_view code_name(std::string_view api_name, const FieldDesc& d, int64_t value) {
  if (is_error_code_field(d)) return error_name(value);
  if (!is_integer(d.type) || value < 0 || value > 7) return {};
  for (const auto& fc : kFieldCodes) {
    if (d.name == fc.field && api_name.rfind(fc.api_prefix, 0) == 0) return fc.names[value];
  }
  return {};
}

}  // namespace kwire
