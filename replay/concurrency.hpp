// What the interleaving of concurrent sessions, and the time a broker takes
// to make an admin write visible, change in live answers without anything
// being wrong with the broker:
//
// - Races. Requests of different sessions on one topic-partition (or one
//   classic group: a member's join or leave starts a rebalance) whose order
//   the capture does not fix (the recorded request/response windows overlap,
//   so neither client waited for the other) may reach the target in the
//   other order, and values that count what reached the partition before
//   (a Produce's baseOffset, ListOffsets' latest offset) then differ. Such a
//   difference is reported as a race, with the other request as evidence, and
//   not as a regression. Members of a share group race for the records of
//   the partitions they share: which member's ShareFetch acquires a record
//   is their interleaving.
// - Reads after admin writes. A Metadata (or DescribeTopicPartitions,
//   ListOffsets, DescribeConfigs) answer may not show a topic the replay has
//   just created, grown or deleted. A read whose differences all concern such
//   a topic is sent again, as a client waiting for metadata would, until it
//   converges or a bound passes.
//
// Topic-partitions are named by topic name; topic ids (Produce v13) are read
// through the recorded id -> name map of ReplayState.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare.hpp"
#include "replay/engine.hpp"
#include "replay/recording.hpp"

namespace kwire::replay {

// Recorded topic id (16 raw bytes) -> topic name; empty when unknown.
using TopicNameOf = std::function<std::string(std::string_view id)>;

struct TopicPartition {
  std::string topic;
  int32_t partition = -1;   // -1: the topic as a whole
  auto operator<=>(const TopicPartition&) const = default;
  std::string str() const { return partition < 0 ? topic : topic + "-" + std::to_string(partition); }
};

// Response fields whose value depends on which other sessions' writes reached
// the partition first.
struct RaceField {
  PathPattern pattern;
  std::string why;
};
const std::vector<RaceField>& race_fields();
// Request apis whose requests move a partition's log end ("Produce").
const std::vector<std::string_view>& partition_writers();
// Classic group answers that depend on whether another member's join or leave
// (which starts a rebalance) reached the coordinator first. A difference in
// these alone, with REBALANCE_IN_PROGRESS on one side of an error code, is a
// race when such a request of another session on the same group raced with it.
const std::vector<RaceField>& group_race_fields();
// Request apis that start a classic group's rebalance ("JoinGroup", "LeaveGroup").
const std::vector<std::string_view>& group_changers();
// Share group answers (KIP-932) that depend on which member's ShareFetch
// reached a partition first: the records a member acquired, and what its
// acknowledgements then cover. A difference in these alone, with no error
// code other than 0 on either side, is a race when another member of the
// same share group fetched concurrently.
const std::vector<RaceField>& share_race_fields();
// ShareGroupDescribe answers that depend on whether a member's join or leave
// (a ShareGroupHeartbeat with member epoch 0 or -1) of another session came
// first: a race when such a heartbeat raced with the describe.
const std::vector<RaceField>& share_member_race_fields();

// The topic-partitions a request names (elements with a partition index
// under an element with a topic name or id).
std::vector<TopicPartition> request_partitions(const ProgramSet& ps, const Frame& request, const TopicNameOf& topic_name);

// The topic (and partition, when the path goes through a partition element)
// that a difference path of compare() lies under. `recorded` is the recorded
// response, `live` the live one: "[i]" indexes the recorded array, "[+i]" the
// live one (known only where no recorded index came before it). False when
// the path names no topic.
bool topic_partition_at(const ProgramSet& ps, const Frame& recorded, const Frame* live, const std::string& path,
                        const TopicNameOf& topic_name, TopicPartition& out);

// Marks as Outcome::Race every regression of `result` whose differences are
// all in race_fields() and lie under topic-partitions that a write of another
// session was racing with: their recorded windows overlap (the capture does
// not fix their order), or the target saw them in the other order than the
// capture. Evidence goes into ExchangeResult::races and the note.
void classify_races(const ProgramSet& ps, const Recording& rec, const TopicNameOf& topic_name, ReplayResult& result);

// Reads that can lag an admin write, and the admin writes.
struct LaggingRead {
  std::string_view api;
  std::string_view why;
};
const std::vector<LaggingRead>& lagging_reads();
const std::vector<std::string_view>& admin_writes();
bool is_lagging_read(std::string_view api);
bool is_admin_write(std::string_view api);
// Re-sending a lagging read: the pause between tries and the bound on all of them.
inline constexpr int64_t kConvergeStepUs = 250'000;
inline constexpr int64_t kConvergeForUs = 5'000'000;
// An admin write explains a read's differences for this long after its answer.
inline constexpr int64_t kAdminWriteVisibleUs = 10'000'000;

// The topic names an admin write's request and live answer name.
std::set<std::string> written_topics(const ProgramSet& ps, const Frame& request, const Frame& response);
// Whether every difference that is not ignored lies under one of `pending`
// (topics an admin write of this replay touched and that may not be visible yet).
bool lag_explains(const ProgramSet& ps, const Frame& recorded, const Frame& live, const std::vector<Difference>& diffs,
                  const std::set<std::string>& pending, const TopicNameOf& topic_name);

}  // namespace kwire::replay
