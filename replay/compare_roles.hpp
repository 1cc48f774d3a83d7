// By-role rules of the comparison: fields whose comparison depends on the
// member an answer goes to and on that member's earlier and later answers
// (group heartbeats), not on the answer alone. Sticky fields (an assignment
// left null when unchanged), ask fields (the broker asking on its own timer),
// and statuses that only say a timer has not fired yet. Their memory lives
// per member connection in StickyMemory. Includes compare_paths and
// compare_shape (sticky values are compared as canonical JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare_paths.hpp"
#include "replay/compare_shape.hpp"

namespace kwire::replay {

// Heartbeat responses leave an assignment null when it did not change, and
// which heartbeat first carries a new one is timing. Fields listed here are
// compared by their effective value: the last one sent to that member (a
// field that is never null, such as topologyDescriptionRequired, by its value),
// and a value the capture shows one heartbeat earlier or later is timing.
struct StickyField {
  std::string_view api;    // "StreamsGroupHeartbeat"
  std::string_view path;   // "body.activeTasks"
};
const std::vector<StickyField>& sticky_fields();
// Booleans by which the target asks a member for something on its own timer
// (topologyDescriptionRequired: the broker asks again for a topology
// description once the back-off after a failed one is over, and that back-off
// has 20% jitter). Compared per member as a sequence of asks, whatever
// heartbeat carries them: an ask on one side matches one the other side made
// earlier, or one the capture shows later in the member's session; a target's
// ask the capture never makes is a regression.
const std::vector<StickyField>& ask_fields();
// Whether `list` names the field `path` ("body.x") of `api`.
bool listed(const std::vector<StickyField>& list, std::string_view api, std::string_view path);
// Status codes that only say a timer has not fired yet (ASSIGNMENT_DELAYED):
// elements with them are left out of the comparison of `path`.
struct TimerStatus {
  std::string_view api, path, code_field;
  int64_t code;
};
const std::vector<TimerStatus>& timer_statuses();
// StreamsGroupHeartbeat's status code that says the assignment waits for a timer.
inline constexpr int64_t kAssignmentDelayed = 5;
// Whether element `el` of the array at `path` of `api` has one of timer_statuses().
bool timer_element(const ProgramSet& ps, const Frame& f, uint32_t el, std::string_view api, std::string_view path);
// Whether the answer `f` of `api` says at its top level that its assignment
// waits for a timer (ASSIGNMENT_DELAYED, not MISSING_INTERNAL_TOPICS).
bool timer_pending(const ProgramSet& ps, const Frame& f, std::string_view api);

// A StreamsGroupHeartbeat answer whose status says ASSIGNMENT_DELAYED (the
// target's assignment waits for a timer) where the recorded answer has no such
// status: the client would heartbeat again, and the replay does (a retry).
// Likewise a ShareGroupHeartbeat answered with an empty assignment where the
// recorded answer assigned partitions: the target's share group has not
// assigned this member yet (its assignor runs after the member joined), and
// the member's next heartbeat gets it.
// A ShareGroupHeartbeat answer's assignment: -1 when it has none (null: the
// member's assignment is unchanged), else how many partitions it assigns.
int64_t share_assigned(const ProgramSet& ps, const Frame& f);
bool assignment_delayed_only_live(const ProgramSet& ps, const Frame& recorded, const Frame& live);

// The last effective value of each sticky field, per member connection.
struct StickyMemory {
  std::unordered_map<std::string, std::string> recorded, live;
  // The value the capture shows at the member's next response of the same
  // api: a target that hands an assignment out one heartbeat earlier (or
  // later, matching the previous value) differs in timing only.
  std::unordered_map<std::string, std::string> next;
  // Ask fields: recorded asks minus the target's so far, and the recorded
  // asks not yet compared in the member's session (counted once needed).
  std::unordered_map<std::string, int> ask_balance, asks_left;
};
// The key of a member's sticky or ask field in StickyMemory.
std::string member_key(std::string_view member, std::string_view api, std::string_view path);
// Adds the asks of one recorded response of a member to memory.asks_left
// (called for each of the member's responses after the one being compared,
// the first time the target asks alone; until then no ask needs them).
void count_recorded_asks(const ProgramSet& ps, const Frame& recorded, const std::string& member, StickyMemory& memory);
// Whether `live` asks where `recorded` does not.
bool asks_alone(const ProgramSet& ps, const Frame& recorded, const Frame& live);
// Fills memory.next from the member's next recorded response of that api.
void sticky_lookahead(const ProgramSet& ps, const Frame& next_recorded, const std::string& member,
                      StickyMemory& memory);

// What a by-role rule makes of one field of one answer: the values to report
// (JSON literals), whether they differ, and why that is timing (empty where
// it is not: a regression unless an ignore rule covers it).
struct RoleVerdict {
  std::string recorded, live;
  bool differs = false;
  std::string timing;
};
// An ask field (at `key` of memory): asks on both sides are matched in order,
// not by heartbeat.
RoleVerdict match_ask(StickyMemory& memory, const std::string& key, bool recorded, bool live);
// A sticky field (at `key` of memory), compared by effective value: null
// (nullopt; else the canonical JSON of this answer's value) keeps the member's
// last one. `timer_pending`: the target says its assignment waits for a timer.
RoleVerdict match_sticky(StickyMemory& memory, const std::string& key, const std::optional<std::string>& recorded,
                         const std::optional<std::string>& live, bool timer_pending);

}  // namespace kwire::replay
