// Request-to-response times of a capture: per api version, per connection,
// per broker (its address, and its node id when the capture's Metadata or
// DescribeCluster answers name it), and the slowest exchanges, as `kwire
// latency` and `--latency` print them.
//
// A request's time is that of the packet that completed it, a response's
// likewise (the frames Wireshark shows the two messages in). Memory stays
// bounded by what a capture can hold at once: requests in flight, one sparse
// histogram per api version and per connection, and the N slowest exchanges;
// never one entry per exchange.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "dissector/output/text_buffer.hpp"
#include "dissector/protocol/brokers.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire {

// Counts of durations in microseconds: exact below 8,192 µs, above that in
// buckets 1/8192 of a power of two wide (a value is reported as its bucket's
// lower bound, at most 0.013% under the true one). Sparse: memory grows with
// the number of distinct buckets hit, not with the count.
class LatencyHistogram {
 public:
  void add(int64_t micros);
  uint64_t count() const { return count_; }
  int64_t max() const { return max_; }
  int64_t min() const { return min_; }
  // Nearest rank: the smallest value with at least ceil(p/100 * count) values
  // at or below it (0 < p <= 100). 0 when empty.
  int64_t percentile(double p) const;

 private:
  static uint32_t bucket(int64_t micros);
  static int64_t lower_bound(uint32_t bucket);
  std::map<uint32_t, uint64_t> buckets_;
  uint64_t count_ = 0;
  int64_t max_ = 0;
  int64_t min_ = 0;
};

// A request still waiting for its response.
struct PendingRequest {
  int64_t micros;        // time of the packet that completed the request
  uint64_t frame;        // its packet number (the message number without one)
  int16_t api_key, api_version;
  bool selected;
  int32_t max_wait_ms;   // the request's MaxWaitMs (Fetch, ShareFetch long-polls), or -1
};

// Pairs each response with its request by connection and correlation id:
// what kwire latency and kwire monitor time. Holds only requests in flight.
class RequestMatcher {
 public:
  explicit RequestMatcher(const ProgramSet& ps) : ps_(ps) {}
  // Remembers a request (not a Produce with acks=0, which gets no answer).
  // A correlation id that comes again before its answer replaces the first
  // request, which is returned: it was never answered.
  std::optional<PendingRequest> request(const FrameContext& ctx, const Frame& f, bool selected = true);
  // The request a response answers, forgotten; none for an unmatched one.
  std::optional<PendingRequest> response(const FrameContext& ctx, const Frame& f);
  // The connection is over: each of its requests still waiting, forgotten.
  void end(uint32_t conn, const std::function<void(const PendingRequest&)>& unanswered);
  // Each request still waiting, with its connection id.
  void waiting(const std::function<void(uint32_t conn, const PendingRequest&)>& fn) const;

 private:
  const ProgramSet& ps_;
  std::unordered_map<uint64_t, PendingRequest> pending_;  // (connection id << 32 | correlation id) -> request
};

// Microseconds since the epoch of a packet's timestamp.
inline int64_t packet_micros(const PacketMeta& m) { return m.ts_sec * 1000000 + m.ts_usec; }

class LatencyTracker {
 public:
  explicit LatencyTracker(const ProgramSet& ps, size_t slowest = 10) : ps_(ps), slowest_n_(slowest), matcher_(ps) {}

  // `selected`: a display filter chose this message. An exchange counts when
  // its request or its response was chosen.
  void on_frame(const FrameContext& ctx, const Frame& f, bool selected = true);
  void on_connection_end(const TcpConnection& c);

  // The report: a table per api version, the slowest exchanges, per
  // connection. `json`: one JSON object on one line.
  void write(TextBuffer& out, bool json) const;

 private:
  struct Slow {
    int64_t micros;
    uint64_t request_frame, response_frame;
    int16_t api_key, api_version;
    uint32_t conn;
    int32_t correlation_id;
    bool operator>(const Slow& o) const { return micros > o.micros; }
  };
  struct ApiStats {
    LatencyHistogram h;
    uint64_t unanswered = 0;
  };
  struct ConnStats {
    std::string client, server;
    LatencyHistogram h;
    uint64_t unanswered = 0;
  };
  struct BrokerStats {
    LatencyHistogram h;
    uint64_t unanswered = 0;
  };
  void unanswered(uint32_t conn, const PendingRequest& p);
  std::string api_name(int16_t key) const;

  const ProgramSet& ps_;
  size_t slowest_n_;
  RequestMatcher matcher_;
  std::map<std::pair<int16_t, int16_t>, ApiStats> apis_;
  std::map<uint32_t, ConnStats> conns_;
  std::vector<Slow> slowest_;  // a min-heap of the N slowest
  std::map<std::string, BrokerStats> brokers_;  // by the address the connections went to
  std::map<std::string, int32_t> node_ids_;     // "host:port" -> node id
};

}  // namespace kwire
