// Names for numeric codes: Kafka's error codes (generated from the release's
// Errors enum) and the enumerations the specs document for individual fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dissector/protocol/program.hpp"

namespace kwire {

struct ErrorCode {
  int16_t code;
  const char* name;
  bool retriable;
};
extern const ErrorCode kErrorCodes[];
extern const size_t kErrorCodeCount;

// "NONE", "STREAMS_TOPOLOGY_FENCED", or empty for a code the release lacks.
std::string_view error_name(int64_t code);
// True for the int16 fields that carry an error code (ErrorCode, TopLevelErrorCode, ...).
bool is_error_code_field(const FieldDesc& d);
// Whether code_name can name any value of the field (in some api).
bool has_code_names(const FieldDesc& d);
// The documented name of a field's value (error codes, streams status codes,
// topology node types, TopologyDescriptionStatus), or empty.
std::string_view code_name(std::string_view api_name, const FieldDesc& d, int64_t value);

}  // namespace kwire
