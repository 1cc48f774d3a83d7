// The field registrations kwire-wsgen writes at build time from the compiled
// programs (fields.gen.cpp in the build tree): one entry per spec field path
// of every message version kwire knows, plus the record fields.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kwire::wireshark {

enum class GenType : uint8_t { None, Int8, Int16, Int32, Int64, Uint16, Uint32, Uint32Hex, Double, Bool, String, Bytes };

struct GenValue {
  int32_t value;
  const char* name;   // nullptr ends a table
};

struct GenField {
  const char* abbrev;   // "kwire.streams_group_heartbeat_response.member_epoch"
  const char* name;     // "MemberEpoch"
  const char* blurb;    // "StreamsGroupHeartbeatResponse.MemberEpoch: int32, versions 0+"
  GenType type;
  bool error_code;      // carries a Kafka error code (value names: the error table)
  const GenValue* values;  // documented names of the values, or nullptr
};

extern const GenField kGenFields[];
extern const size_t kGenFieldCount;
extern const GenValue kGenApiNames[];     // api key -> name
extern const GenValue kGenErrorNames[];   // error code -> name

}  // namespace kwire::wireshark
