// What Kafka Streams groups (KIP-1071 streams rebalance protocol) did on the
// wire: a state model fed by decoded frames. Per group and member it keeps
// the epochs over time, the assignments the coordinator handed out, statuses,
// errors, topology description pushes (KIP-1331), describes and deletes, and
// derives rebalances, task movements and anomalies from them.
//
// Memory grows with groups, members and the things that changed (epochs,
// assignments, statuses, errors), never with the number of frames: a steady
// heartbeat adds nothing but a counter.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "dissector/protocol/session.hpp"

namespace kwire::streams {

// Where on the wire something happened: the packet that completed the
// message (as `kwire decode` numbers it) and seconds since the first message.
struct At {
  uint64_t frame = 0;
  double time = 0;
};

enum class TaskKind : uint8_t { Active, Standby, Warmup };
const char* kind_name(TaskKind k);  // "active", "standby", "warm-up"

// Tasks by name: "<subtopology>_<partition>", as Kafka Streams prints task ids.
struct Assignment {
  std::set<std::string> tasks[3];  // by TaskKind
  bool operator==(const Assignment& o) const {
    return tasks[0] == o.tasks[0] && tasks[1] == o.tasks[1] && tasks[2] == o.tasks[2];
  }
  size_t count(TaskKind k) const { return tasks[static_cast<int>(k)].size(); }
};

struct EpochChange {
  At at;
  int32_t epoch = 0;     // the member epoch the coordinator answered
  int32_t request_epoch = 0;  // what the member sent (0 join, -1 leave, -2 static leave)
};

struct AssignmentChange {
  At at;
  int32_t epoch = 0;
  Assignment assignment;
};

struct StatusChange {
  At at;
  // code -> detail; empty: the response carried no status.
  std::map<int, std::string> statuses;
};

struct WireError {
  At at;
  std::string api;       // "StreamsGroupHeartbeat", ...
  std::string code;      // "FENCED_MEMBER_EPOCH"
  std::string message;
};

struct Member {
  std::string id;
  std::string client_id;       // request header
  std::string process_id, rack, instance_id, endpoint;
  std::map<std::string, std::string> client_tags;
  int32_t topology_epoch = -1;  // last sent by the member
  At first_seen, last_seen;
  uint64_t heartbeats = 0;
  bool left = false;
  std::optional<At> left_at;
  int32_t epoch = -100;        // latest answered member epoch (-100: none yet)
  int32_t heartbeat_interval_ms = 0;
  std::vector<EpochChange> epochs;
  std::vector<AssignmentChange> assignments;   // the coordinator's, as handed out
  std::vector<StatusChange> statuses;          // each change of the status set
  std::vector<WireError> errors;
  Assignment current;                          // latest handed-out assignment
  // Heartbeat timing: the last response, to compare with the next request.
  std::optional<At> last_response;
  int32_t interval_at_last_response = 0;
  // For the stuck-at-old-epoch check: which group epochs were reported.
  int32_t stuck_reported_for = -1;
};

struct Rebalance {
  At at;
  int32_t from = 0, to = 0;       // group (assignment) epoch as seen on the wire
  std::string by;                 // member whose response first showed it
  std::vector<std::string> causes;
};

struct TaskMove {
  At at;
  std::string task;
  TaskKind kind = TaskKind::Active;
  std::string from, to;           // member ids; from may be empty (first owner)
};

struct Anomaly {
  At at;
  std::string kind;   // stuck-epoch, double-active, push-failures, late-heartbeat, error
  std::string member;
  std::string detail;
};

// One node of a topology description (Topology#describe()).
struct TopoNode {
  std::string name;
  int type = 0;  // 1 SOURCE, 2 PROCESSOR, 3 SINK
  std::vector<std::string> source_topics;
  std::string sink_topic;
  bool has_sink_topic = false;
  std::vector<std::string> stores;
  std::vector<std::string> successors;
  std::vector<std::string> predecessors;  // reconstructed from the successors
};

struct Subtopology {
  std::string id;
  std::vector<TopoNode> nodes;   // from a description
  // From the heartbeat's topology (or describe v0/v1 Topology).
  std::vector<std::string> source_topics, source_regex, repartition_sink_topics, repartition_source_topics,
      changelog_topics;
};

struct GlobalStore {
  TopoNode source, processor;
};

struct Topology {
  bool present = false;
  bool described = false;        // from a topology description (KIP-1331), else the heartbeat's
  std::string origin;            // "StreamsGroupTopologyDescriptionUpdate", ...
  At at;
  int32_t epoch = -1;
  std::vector<Subtopology> subtopologies;
  std::vector<GlobalStore> global_stores;
};

struct Push {
  At at;                         // request
  std::optional<At> answered;
  std::string member;
  int32_t topology_epoch = 0;
  size_t nodes = 0;
  std::string error = "";        // empty until answered; "NONE" on success
  std::string message;
};

struct Describe {
  At at;                         // response
  std::string error, state, description_status, assignor;
  int32_t group_epoch = -1, assignment_epoch = -1, topology_epoch = -1;
  size_t members = 0;
};

struct Delete {
  At at;                         // response
  std::string error, message;
};

// The broker that answered a group's heartbeats as its coordinator, over a
// span of them; a new span when another broker takes over.
struct CoordinatorSpan {
  std::string broker;            // "host:port" the heartbeats went to
  At first, last;                // first and last answer in the span
  uint64_t answered = 0;
};

struct Group {
  std::string id;
  std::vector<CoordinatorSpan> coordinators;
  std::vector<std::string> member_order;       // first seen first
  std::unordered_map<std::string, Member> members;
  int32_t group_epoch = -1;                    // highest member/group epoch seen
  At group_epoch_at;
  int32_t epoch_before_delete = -1;            // group_epoch when a DeleteGroups succeeded
  int32_t topology_epoch = -1;                 // highest topology epoch seen
  std::vector<Rebalance> rebalances;
  std::vector<TaskMove> moves;
  std::vector<Anomaly> anomalies;
  std::vector<Push> pushes;
  std::vector<Describe> describes;
  std::vector<Delete> deletes;
  Topology topology;            // the best one on the wire (description over heartbeat)
  Topology heartbeat_topology;  // the latest heartbeat topology
  // Causes seen since the last rebalance, for the next one.
  std::vector<std::string> pending_causes;
  // Last owner of each (kind, task), to name where a task moved from.
  std::map<std::pair<int, std::string>, std::string> last_owner;
  std::set<std::string> double_active_reported;
  int push_failures = 0;

  Member& member(const std::string& id, const At& at);
};

struct Summary {
  std::vector<std::string> group_order;
  std::map<std::string, Group> groups;
  uint64_t frames = 0;            // Kafka messages seen
  uint64_t streams_frames = 0;    // of the APIs this model reads
  uint64_t malformed = 0;
  // Broker addresses -> node ids, from the capture's Metadata and DescribeCluster answers.
  std::map<std::string, int32_t> node_ids;
};

class StreamsModel : public FrameHandler {
 public:
  explicit StreamsModel(const ProgramSet& ps);
  ~StreamsModel() override;

  void on_frame(const FrameContext& ctx, const Frame& frame) override;
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;
  void on_connection_end(const TcpConnection& c) override;

  // Closes the model at the end of the capture (late checks) and returns it.
  const Summary& finish();
  const Summary& summary() const { return s_; }
  const std::vector<std::string>& capture_errors() const { return capture_errors_; }

 private:
  struct Pending;
  At at(const FrameContext& ctx);
  Group& group(const std::string& id);
  void heartbeat_request(const FrameContext& ctx, const Frame& f, const At& at);
  void heartbeat_response(const Frame& f, const Pending& p, const At& at);
  void push_request(const FrameContext& ctx, const Frame& f, const At& at);
  void push_response(const Frame& f, const Pending& p, const At& at);
  void describe_response(const Frame& f, const At& at);
  void delete_request(const FrameContext& ctx, const Frame& f, const At& at);
  void delete_response(const Frame& f, const At& at);
  void assign(Group& g, Member& m, const Assignment& a, int32_t epoch, const At& at);
  void check_stuck(Group& g, const At& at);

  const ProgramSet& ps_;
  Summary s_;
  bool first_set_ = false;
  int64_t first_sec_ = 0;
  int32_t first_usec_ = 0;
  std::map<std::pair<const TcpConnection*, int32_t>, std::unique_ptr<Pending>> pending_;
  std::vector<std::string> capture_errors_;
  bool finished_ = false;
};

// "orders" style name of a status code (STALE_TOPOLOGY, ...).
std::string status_name(int code);

}  // namespace kwire::streams
