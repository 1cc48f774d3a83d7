// What a live coordinator hands out and clients echo back: member epochs and
// generations, broker-assigned member ids, producer ids and epochs, fetch
// sessions, topic ids. ReplayState learns each value from the live responses
// (next to the recorded ones) and substitutes it into later requests that
// carried the recorded value, and into recorded responses before they are
// compared. Which fields hold which value comes from the specs (field names,
// entity types, the message a field belongs to) and the rule table below;
// nothing is written per API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"

namespace kwire::replay {

// Where one learned value is valid.
enum class Scope : uint8_t {
  Member,      // one group member: the request's group id and (recorded) member id
  Producer,    // one producer: the recorded producer id next to the field
  Connection,  // one replayed connection
  Capture,     // everywhere (values unique by construction: uuids, member ids, producer ids)
};

struct StateRule {
  std::string_view name;                 // "member epoch"
  std::vector<std::string_view> learn;   // "Api.Field" of response bodies (top level) the value comes from
  std::vector<std::string_view> fields;  // request fields (any depth) named so, or "entity:TYPE"
  Scope scope;
};

// Values of the capture-wide string rules (broker-assigned member ids) are
// also followed by value: a string field of any name (JoinGroup's Leader, a
// member list) that holds a recorded value known to map to a live one gets
// the live one. Only values at least this long, so that short strings that
// happen to be equal are left alone.
inline constexpr size_t kFollowMinLength = 8;

// The rule table, for --list-rules and the tests.
const std::vector<StateRule>& state_rules();

struct RenameOptions {
  std::string group_prefix;  // --rename-group: prefixed to every groupId-entity string
  std::string topic_prefix;  // --rename-topic: prefixed to every topicName-entity string
};

class ReplayState {
 public:
  ReplayState(const ProgramSet& ps, RenameOptions renames);

  // Topic names and ids, learned from any response (Metadata, CreateTopics,
  // DescribeTopicPartitions, ...): the recorded ones as the capture is read,
  // the live ones as the target answers.
  void learn_topics(const Frame& response, bool live);
  // After a live response: records recorded -> live for every rule whose
  // source is this response. `recorded_request` is the request as recorded.
  void learn(const Frame& recorded_request, const Frame& recorded, const Frame& live, uint32_t connection);
  // Before a request is sent: substitutes learned values and renames in place
  // (record batches are patched and their CRC recomputed). Returns how many
  // values changed. `recorded` is left untouched; `out` is its edited copy
  // (the same frame object may be passed as both).
  int rewrite_request(Frame& request, uint32_t connection);
  // Before comparing: maps the recorded response's learned values and names
  // into the target's space, so that only real differences remain.
  void translate_response(Frame& recorded, const Frame& recorded_request, uint32_t connection);

  // Record timestamps (CreateTime batches of Produce) and the times a
  // request names (ListOffsets by time) are moved by this many ms; the
  // timestamps of recorded answers (ListOffsets) are moved alike before they
  // are compared (replay/timeshift.hpp). 0: sent as recorded.
  void set_time_shift(int64_t ms) { time_shift_ms_ = ms; may_rewrite_.clear(); }
  int64_t time_shift() const { return time_shift_ms_; }

  size_t learned() const { return learned_; }
  // The name a recorded topic id (16 bytes) stands for; empty when unknown.
  std::string recorded_topic_name(std::string_view id) const {
    auto it = recorded_topic_ids_.find(std::string(id));
    return it == recorded_topic_ids_.end() ? std::string() : it->second;
  }
  // The same, of an id in Kafka's text form (a Metadata answer's, routing's).
  std::string recorded_topic_name_of_text(std::string_view id) const {
    auto it = recorded_topic_text_ids_.find(std::string(id));
    return it == recorded_topic_text_ids_.end() ? std::string() : it->second;
  }
  size_t differing() const { return differing_; }
  // False while every value learned so far equals the recorded one and
  // nothing is renamed: then no request can change, and an answer equal to
  // the recorded one byte for byte teaches nothing new.
  bool substituting() const {
    return differing_ > 0 || time_shift_ms_ != 0 || !renames_.group_prefix.empty() || !renames_.topic_prefix.empty() ||
           (!live_cluster_id_.empty() && !recorded_cluster_ids_.empty() && !recorded_cluster_ids_.count(live_cluster_id_));
  }
  // Whether a request of this layout has any field rewrite_request could
  // change (a request without one is sent as recorded, undecoded).
  bool may_rewrite(const MessageProgram& m);
  // Whether responses of this api are a source of learned values.
  bool learns_from(int16_t api_key);

 private:
  using Map = std::unordered_map<std::string, std::string>;  // recorded raw value -> live raw value
  int rule_of(uint32_t desc) const;           // index into state_rules(), -1 none
  std::string scope_key(const StateRule& r, const Frame& f, uint32_t node, uint32_t connection) const;
  std::string member_key(const Frame& request) const;
  bool substitute(Frame& f, uint32_t node, const std::string& key, int rule);
  // FindCoordinator's group keys (a request's, or its answer's), --rename-group applied.
  int rename_keys(Frame& f, const Frame& request);
  int rename(Frame& f, uint32_t node);
  bool map_topic_id(Frame& f, uint32_t node);
  bool map_cluster_id(Frame& f, uint32_t node);
  bool follow(Frame& f, uint32_t node);
  int patch_batches(Frame& f, uint32_t records, const std::string& connection_key);
  // A recorded answer's record batches as the target would send them: the
  // producer id and epoch it gave (substituted into the nodes first), the
  // timestamps moved, the CRC recomputed (nodes only).
  void translate_answer_batches(Frame& f, uint32_t records) const;

  const ProgramSet& ps_;
  RenameOptions renames_;
  mutable std::vector<int8_t> rule_cache_;     // per FieldDesc: -2 unknown, -1 none, else rule index
  mutable std::vector<int8_t> entity_cache_;   // per FieldDesc: -2 unknown, 0 none, 1 group, 2 topic name, 3 topic id
  std::unordered_map<std::string, Map> values_;  // rule index + scope key -> map
  std::unordered_map<std::string, std::string> recorded_topic_ids_;  // recorded id (16 bytes) -> name
  std::unordered_map<std::string, std::string> recorded_topic_text_ids_;  // the same, the id in Kafka's text form
  std::unordered_map<std::string, std::string> live_topic_ids_;      // name -> live id
  // Cluster ids (ApiVersions v5+ requests echo the one the client last saw):
  // every recorded one maps to the target's.
  std::unordered_map<std::string, bool> recorded_cluster_ids_;
  std::string live_cluster_id_;
  size_t learned_ = 0;
  int64_t time_shift_ms_ = 0;
  bool is_time(uint32_t desc, bool response) const;
  size_t differing_ = 0;   // learned values (and topic ids, cluster ids) that differ from the recorded ones
  int entity_of(uint32_t desc) const;
  bool struct_may_rewrite(uint32_t sp, int depth) const;
  std::unordered_map<const MessageProgram*, bool> may_rewrite_;
  std::unordered_map<int16_t, bool> learns_from_;
};

}  // namespace kwire::replay
