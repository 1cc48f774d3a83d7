// Wireshark field names for kwire: every spec field path becomes a filterable
// field "kwire.<message>.<field>.<field>" in snake case, for example
// StreamsGroupHeartbeatResponse.MemberEpoch ->
// "kwire.streams_group_heartbeat_response.member_epoch". The build-time
// generator (field registrations, Lua dissector) and the plugin's run-time
// lookup must agree on these names, so both use this header.
#pragma once

#include <string>
#include <string_view>

#include "dissector/protocol/program.hpp"

namespace kwire::wireshark {

// "StreamsGroupHeartbeatResponse" -> "streams_group_heartbeat_response",
// "TopicID" -> "topic_id", "ISRState" -> "isr_state".
inline std::string snake_case(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 8);
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (upper(c)) {
      bool after_lower = i > 0 && lower(name[i - 1]);
      bool acronym_end = i > 0 && upper(name[i - 1]) && i + 1 < name.size() && lower(name[i + 1]);
      if (!out.empty() && (after_lower || acronym_end)) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

// The field name of a message's (or header's) root: "kwire.request_header".
inline std::string root_abbrev(std::string_view spec_name) { return "kwire." + snake_case(spec_name); }

inline std::string child_abbrev(std::string_view parent_abbrev, std::string_view field_name) {
  std::string out(parent_abbrev);
  out += '.';
  out += snake_case(field_name);
  return out;
}

// The type a field's values have in Wireshark: the element type of an
// array, struct for structs and records containers.
inline WireType value_type(const FieldDesc& d) { return d.type == WireType::Array ? d.elem : d.type; }

}  // namespace kwire::wireshark

namespace kwire::wireshark {

// Fields of record batches, records and legacy message sets (the builtin
// descriptors of every ProgramSet) have one name wherever records travel:
// "kwire.record_batch.base_offset", "kwire.record.key". Empty for the
// containers that are shown as a subtree without a value of their own.
inline std::string builtin_abbrev(uint32_t desc, std::string_view name) {
  if (desc == kDescUnknownTag) return "kwire.unknown_tagged_field";
  if (desc == kDescRecordBatch) return "kwire.record_batch";
  if (desc == kDescRecord) return "kwire.record";
  if (desc == kDescHeader) return "kwire.record_header";
  if (desc == kDescLegacyMessage) return "kwire.legacy_message";
  if (desc == kDescPartialBatch) return "kwire.partial_batch";
  if (desc == kDescRecordsArray || desc == kDescHeadersArray || desc == kDescLegacyInner) return {};
  if (desc > kDescRecordBatch && desc < kDescRecordsArray) return child_abbrev("kwire.record_batch", name);
  if (desc > kDescRecord && desc < kDescHeadersArray) return child_abbrev("kwire.record", name);
  if (desc > kDescHeader && desc < kDescLegacyMessage) return child_abbrev("kwire.record_header", name);
  if (desc > kDescLegacyMessage && desc < kDescLegacyInner) return child_abbrev("kwire.legacy_message", name);
  return {};
}

}  // namespace kwire::wireshark
