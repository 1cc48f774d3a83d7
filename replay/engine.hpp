// kwire replay's engine: re-sends the requests of recorded client sessions to
// a target broker, one live connection per recorded one, keeping their order,
// pipelining depth and (optionally) recorded timing; substitutes what the
// target hands out (ReplayState); compares every live response with the
// recorded one; reports the differences.
//
// One thread, non-blocking sockets and poll(). Request i of the capture is
// sent only after every response the capture shows before it has been
// answered (or given up) in the replay, so a value the client echoes has
// been learned before it is needed.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/program.hpp"
#include "replay/compare.hpp"
#include "replay/link.hpp"
#include "replay/recording.hpp"
#include "replay/sasl.hpp"
#include "replay/state.hpp"

namespace kwire::replay {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string str() const;
};
bool parse_host_port(const std::string& s, HostPort& out, std::string& error);

// What one session may spend on sending again requests the target answered
// with a retriable error where the capture shows success: a number of
// retries and a time (each attempt's round trip and the back-off after it).
// Once either is spent, the session's later answers are compared as they
// come, so a target that keeps failing (a partition it lacks) costs a session
// at most this much, not the per-request limit again for every request.
// Retries that end in an answer (the target was only slow: a leader being
// elected, concurrent transactions) are refunded, and waiting for a
// coordinator to load is not charged (each request is bounded by its own
// limit): a target that recovers does not spend the budget.
struct RetryBudget {
  uint32_t max_retries = 20;
  int64_t max_us = 5'000'000;
  // Waiting for the target's background work (a coordinator loading, an
  // assignment behind its timer) is not charged, up to this much per
  // session: a target that never gets there then costs what any retry does.
  int64_t max_wait_us = 60'000'000;
  uint32_t retries = 0;      // charged so far (less those refunded)
  int64_t spent_us = 0;      // their cost
  int64_t waited_us = 0;     // the uncharged waiting so far
  bool spent = false;        // a retry was refused for want of budget
  bool waited_out = false;   // waiting went past max_wait_us: charged since
  // Charges `cost_us` (the attempt just answered plus the back-off before the
  // next) and grants the retry, or refuses it (and stays refused) when the
  // count or the time would be exceeded. An uncharged retry is granted within
  // max_wait_us, and charged beyond it.
  bool grant(int64_t cost_us, bool charged = true);
  // Gives back what the retries of a request cost once they got it answered.
  void refund(uint32_t n, int64_t cost_us);
};

// Whether a request is sent again: the target answered with only retriable
// errors (live_class 1, see error classes in engine.cpp), the recorded answer
// was not such a one, the answer decoded, and the request is still within its
// own limits (age since first sent, attempts) and the session's budget.
bool should_retry(int live_class, int recorded_class, bool live_decoded, int64_t age_us, int64_t request_limit_us,
                  int attempts, RetryBudget& budget, int64_t cost_us, bool charged = true);

// A listener's security protocol, as Kafka names it (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL), from TLS and SASL.
std::string security_protocol(bool tls, bool sasl);
// "SSL://host:9093" or "host:9093": the protocol (upper case, empty when not
// given) and the address. False with `error` for an unknown protocol.
bool parse_target(const std::string& s, std::string& protocol, HostPort& out, std::string& error);

// Keeps several replays of one capture in step (a differential replay: one
// engine per target, each on its own thread): a request that the capture
// shows sent after k responses (Exchange::after) goes to a target only once
// every target has had those k responses resolved. The slowest target sets
// the pace, the targets see the same causal order at the same stage, and no
// engine runs ahead of another by more than one step.
class Lockstep {
 public:
  explicit Lockstep(size_t lanes);
  ~Lockstep();
  Lockstep(const Lockstep&) = delete;
  Lockstep& operator=(const Lockstep&) = delete;
  size_t lanes() const { return fds_.size(); }
  // Lane `lane` has resolved its first `prefix` responses; the others wake.
  void publish(size_t lane, uint64_t prefix);
  // The lane takes no more part (it ended, or could not start): never waited for.
  void leave(size_t lane) { publish(lane, UINT64_MAX); }
  // Whether every lane has resolved its first k responses.
  bool reached(uint64_t k) const;
  // Readable once another lane has moved on; drain() before polling again.
  int fd(size_t lane) const { return fds_[lane]; }
  void drain(size_t lane) const;

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> prefix_;
  std::vector<int> fds_;   // an eventfd per lane
};

struct ReplayOptions {
  HostPort target;                             // --target: its first address (every recorded broker by default)
  // --target: every address given (the first is `target`): bootstrap brokers
  // of the target, on one listener or several.
  std::vector<HostPort> targets;
  // The security protocol a --target or --map address was given with
  // ("SSL://host:port"), by "host:port": TLS or not, and whether a SASL login
  // is expected, for that listener. Without one, TLS is --tls's and SASL is
  // what the listener answers to a SaslHandshake.
  std::map<std::string, std::string> protocols;
  std::map<std::string, HostPort> map;         // --map: recorded "addr:port" -> target
  enum class Timing { Recorded, Fast } timing = Timing::Recorded;
  double speed = 1.0;                          // --speed: recorded gaps divided by this
  std::set<std::string> apis;                  // --api: only these requests (names, exact)
  std::function<bool(const Exchange&)> select; // -Y: only the exchanges this accepts
  std::set<std::string> groups;                // --group: only sessions that name one of these groups
  std::set<uint32_t> conns;                    // --conn: only these session numbers
  RenameOptions renames;
  bool setup = false;                          // --setup: create the capture's topics the target lacks
  // --keep-timestamps: record timestamps (and ListOffsets' times) are sent as
  // recorded; by default they move with the replay's clock (replay/timeshift.hpp).
  bool keep_timestamps = false;
  // Said at once, before anything is sent (the report repeats it among the
  // notes): a target whose retention would delete what the replay writes.
  std::function<void(const std::string&)> warn;
  CompareOptions compare;
  double timeout_s = 30;                       // per request, at least twice the recorded latency
  double reconnect_s = 10;                     // give a connection up after this long unreachable
  TlsClientOptions tls;                        // --tls*: connections to the target over TLS
  // --sasl-*: sessions recorded with a mechanism log in with its credentials;
  // the first also logs kwire's own connections in (those to a SASL listener).
  std::vector<SaslLogin> sasl;
  const SaslLogin* login_for(std::string_view mechanism) const {
    for (const auto& l : sasl) if (l.mechanism == mechanism) return &l;
    return nullptr;
  }
  std::string record_out;                      // --record-out: the replay's own traffic, pcapng
  bool progress = false;                       // a status line on stderr (a terminal: rewritten in place)
  bool progress_lines = false;                 // with progress: a new line every 5 s (stderr is not a terminal)
  double budget_s = 0;                         // --budget: the whole run ends after this long (0: no bound)
  RetryBudget retry_budget;                    // --retry-budget: each session's (limits only)
  const volatile std::sig_atomic_t* stop = nullptr;  // set from a signal handler: the run ends at once
  Lockstep* lockstep = nullptr;                // with other replays of the capture (differential): this one's lane
  size_t lane = 0;
  // --script hooks (see replay/script.hpp). on_request may edit the frame or
  // set skip; on_response may add expectations (path, value).
  std::function<bool(Frame& request, uint64_t frame, const std::string& conn, bool& skip, std::string& error)> on_request;
  std::function<bool(const Frame& live, const Frame& recorded, uint64_t frame, const std::string& conn,
                     std::vector<std::pair<std::string, std::string>>& expect, std::string& error)>
      on_response;
};

enum class Outcome : uint8_t {
  Same,          // equal field by field
  IgnoredOnly,   // differs only in fields the ignore rules cover
  Regression,    // differs in other fields, or misses an expectation
  Race,          // differs only in values that another session's concurrent request on the
                 // same partition decides (its order not fixed by the capture): not a regression
  Unanswered,    // sent, but no response came (closed, timed out, target gone)
  Unsupported,   // the target does not support this api version: not sent
  Skipped,       // not sent: filtered, the session cannot be replayed, the script said so
  NotExpected,   // no response expected (Produce acks=0) or none recorded: not compared
};
std::string_view outcome_name(Outcome o);

// The request of another session that a race was with (replay/concurrency.hpp).
struct RaceEvidence {
  uint32_t session = 0;          // the other session
  uint64_t frame = 0;            // its request's packet number
  std::string api;               // its api ("Produce")
  std::string partition;         // the shared topic-partition, "orders-0", or group, "group classic-app"
  // Recorded times, ms after the capture's first request: both requests and their responses (-1: none).
  double recorded_ms = 0, recorded_response_ms = -1, other_recorded_ms = 0, other_recorded_response_ms = -1;
  // Live send times, ms after the replay started (-1: unknown).
  double live_ms = -1, other_live_ms = -1;
  bool order_not_fixed = false;  // the recorded windows overlap: neither waited for the other
  bool live_order_differs = false;  // the target got them in the other order than the capture
};

struct ExchangeResult {
  uint32_t session = 0;
  uint32_t index = 0;         // in the session's exchanges
  uint64_t frame = 0;         // recorded request's packet number
  uint64_t response_frame = 0;
  int16_t api_key = -1, api_version = -1;
  std::string api_name;
  Outcome outcome = Outcome::Skipped;
  std::string note;           // why unanswered / skipped / unsupported
  int64_t live_latency_us = -1;
  int64_t recorded_latency_us = -1;
  std::vector<Difference> differences;  // regressions first use; ignored ones kept for the count
  int substitutions = 0;
  int64_t live_sent_us = -1;  // first sent, after the replay started
  std::vector<RaceEvidence> races;
};

struct SessionResult {
  uint32_t id = 0;
  std::string client, broker, target, client_id;
  std::string skip;           // why the session was not replayed
  uint32_t reconnects = 0;
  uint32_t retries = 0;       // retries charged to the session's budget (not refunded)
  double retry_s = 0;         // what they cost
  bool retry_budget_spent = false;  // a retry was refused: later answers compared as they came
  std::string broker_traffic; // a broker's own connection, never sent: its kind (replay/routing.hpp)
};

// A difference that follows from the target's shape alone (another number
// of brokers than the capture's cluster), not from its behaviour: named once
// per kind in the report, never a regression.
struct ShapeDifference {
  std::string what;            // "Metadata body.topics.partitions.replicaNodes", "request CreateTopics ...: replication factor 3 sent as 1"
  std::string why;
  uint32_t count = 0;          // responses (or requests) it was seen in
  uint64_t first_frame = 0;    // the first one's recorded request
  std::string recorded, replayed;  // the first one's values (empty for a request)
};

struct ReplayResult {
  std::vector<SessionResult> sessions;
  std::vector<ExchangeResult> exchanges;
  std::vector<double> gap_errors_ms;   // |replayed gap - recorded gap / speed|, recorded timing only
  std::vector<std::string> notes;      // setup, learned state, reconnects
  // Record timestamps were moved by this (ms; 0 with --keep-timestamps or
  // without a capture time), and what the target's retention would delete.
  int64_t time_shift_ms = 0;
  std::vector<std::string> retention_warnings;
  std::vector<ShapeDifference> shape;  // what differs because the target has another number of brokers
  int recorded_brokers = 0, target_brokers = 0;   // the capture's cluster's and the target's (0: not known)
  // Reads sent again after an admin write of the replay until they converged (or not).
  uint32_t reads_converged = 0, reads_not_converged = 0;
  // Produce requests of idempotent producers refused as out of order while an
  // earlier batch of their partition was retried, and sent again behind it.
  uint32_t resequenced = 0;
  double wall_s = 0;
  double cpu_s = 0;                    // of the thread that ran the replay
  // The target's ApiVersions ranges (api key -> min, max), from kwire's own
  // ApiVersions at the start.
  std::map<int16_t, std::pair<int16_t, int16_t>> target_versions;
  bool target_lost = false;
  std::string stopped;                 // why the run ended before the capture did (a signal, the budget)
};

// Runs the replay. False with `error` when it cannot run at all (target
// unreachable at the start, --record-out cannot be written); the result then
// holds what it knew.
bool run_replay(const ProgramSet& ps, const Recording& rec, const ReplayOptions& opts, ReplayResult& out,
                std::string& error);

}  // namespace kwire::replay
