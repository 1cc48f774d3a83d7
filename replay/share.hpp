// Share groups (KIP-932) in replay. A share consumer acknowledges the records
// its ShareFetch acquired, and which records a member acquires depends on
// when the group's other members fetched. So a recorded acknowledgement is
// rewritten into the same acknowledgement of what this member acquired on the
// target: the k-th record it held in the capture stands for the k-th record
// it holds live (both in the order they were acquired). What the recorded
// member held and acknowledged all of, the live member acknowledges all of,
// with the type of the last recorded one (a consumer that accepts what it
// polled accepts what it got).
//
// The ledger keeps, per member, topic and partition, the offsets each side
// holds: acquired (ShareFetch's AcquiredRecords) and not yet acknowledged.
// Memory: what the members hold now, not what they held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare.hpp"

namespace kwire::replay {

inline constexpr int16_t kShareFetchKey = 78;
inline constexpr int16_t kShareAcknowledgeKey = 79;

// AcknowledgeType values of the specs: 0 gap, 1 accept, 2 release, 3 reject,
// 4 renew (KIP-1222: the acquisition lock is extended, the record stays held).
inline constexpr int8_t kAckAccept = 1;
inline constexpr int8_t kAckRenew = 4;

struct AckBatch {
  int64_t first = 0, last = 0;
  std::vector<int8_t> types;   // one per offset, or one for the whole batch
  bool operator==(const AckBatch&) const = default;
};

struct OffsetRange {
  int64_t first = 0, last = 0;
};

// A member's share of a partition: the member id and topic id as the target
// knows them (raw bytes), and the partition.
struct ShareKey {
  std::string member;
  std::string topic_id;
  int32_t partition = -1;
  auto operator<=>(const ShareKey&) const = default;
};

// Offsets as ranges, merged: what some member of a share group acquired.
class OffsetSet {
 public:
  void add(int64_t first, int64_t last);
  // The ranges of this set that `other` lacks.
  std::vector<OffsetRange> minus(const OffsetSet& other) const;
  bool empty() const { return r_.empty(); }

 private:
  std::map<int64_t, int64_t> r_;   // first -> last, disjoint and not adjacent
};

// A share group's partition: group, topic id (the target's, raw), partition.
struct SharePartition {
  std::string group;
  std::string topic_id;
  int32_t partition = -1;
  auto operator<=>(const SharePartition&) const = default;
};

class ShareLedger {
 public:
  // One ShareFetch answered: the ranges the recorded answer and the live one
  // acquired. `group` is the member's share group, `exchange` names the
  // answer (the last one per partition is where a lack is reported).
  void acquired(const ShareKey& k, const std::vector<OffsetRange>& recorded, const std::vector<OffsetRange>& live,
                const std::string& group = {}, size_t exchange = SIZE_MAX);
  // Per share group partition: the offsets some member acquired in the
  // capture and no member on the target, and the last answer that named it.
  struct Lack {
    SharePartition where;
    std::vector<OffsetRange> offsets;
    size_t exchange = SIZE_MAX;
    bool in_last = false;   // all of them acquired, in the capture, by that last answer
  };
  std::vector<Lack> never_acquired() const;
  // The live acknowledgements that stand for the recorded ones; what they
  // acknowledge (but renew) is no longer held. A key the ledger never saw
  // acquire, or a recorded offset it does not know held, goes as recorded.
  std::vector<AckBatch> translate(const ShareKey& k, const std::vector<AckBatch>& recorded);
  bool knows(const ShareKey& k) const { return held_.count(k) != 0; }
  // The member's partitions where it holds records live and none in the
  // capture: the recorded client had acknowledged all it acquired, so the
  // live one acknowledges the rest, as it acknowledged its last records
  // (accept when it never did). They are no longer held.
  std::vector<std::pair<ShareKey, std::vector<AckBatch>>> settle(const std::string& member);
  // Offsets held: in the capture (false) or live (true).
  const std::vector<int64_t>* held(const ShareKey& k, bool live) const;

 private:
  struct Held {
    std::vector<int64_t> recorded, live;
  };
  std::map<ShareKey, Held> held_;
  std::map<std::string, int8_t> last_type_;   // by member: the type of its last acknowledgement
  struct Union {
    OffsetSet recorded, live;
    size_t exchange = SIZE_MAX;
    OffsetSet last;   // what the capture's last answer acquired
  };
  std::map<SharePartition, Union> acquired_;
};

// Batches as the protocol wants them: one type each, consecutive offsets of
// the same type joined, in offset order.
std::vector<AckBatch> ack_batches(std::vector<std::pair<int64_t, int8_t>> acks);

// Rewrites the AcknowledgementBatches of a ShareFetch or ShareAcknowledge
// request (member id and topic ids already the target's) by the ledger, and
// adds the acknowledgements ShareLedger::settle() gives (with their partition
// and topic elements where the request has none). Returns how many arrays
// changed.
int translate_acknowledgements(Frame& request, const ProgramSet& ps, ShareLedger& ledger);

// Records in the ledger what a ShareFetch acquired: `request` as sent (the
// target's member id and topic ids), `recorded` the recorded answer with its
// topic ids translated to the target's, `live` the target's answer.
void learn_acquired(const Frame& request, const Frame& recorded, const Frame& live, const ProgramSet& ps, ShareLedger& ledger,
                    size_t exchange = SIZE_MAX);

// Whether a value as compare() writes it (JSON) holds an error code
// ("errorCode", "acknowledgeErrorCode", ...) other than 0.
bool json_names_error(const std::string& json);

// The answer to a request whose acknowledgements translate_acknowledgements()
// rewrote names what they named: a topic or partition present on one side
// only, with no error, follows from the rewriting (for a ShareFetch only
// where the live side has it: its answer without a recorded topic is about
// what it acquired). Such differences are marked ignored, with the reason.
void rewritten_acknowledgements(int16_t api_key, std::vector<Difference>& diffs);

// DescribeShareGroupOffsets: a start offset of a partition whose every record
// is acknowledged on both sides (lag 0) says where the share coordinator's
// last written state begins, which follows how the acknowledgements were
// batched: such differences are marked ignored, with the reason.
void settled_start_offsets(const Frame& recorded, const Frame& live, const ProgramSet& ps, std::vector<Difference>& diffs);

}  // namespace kwire::replay
