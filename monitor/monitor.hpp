// kwire monitor's metrics: a FrameHandler that turns the decoded Kafka
// messages of a capture (live or from a file) into Prometheus series, owned
// by one prometheus::Registry that an HTTP exposer or a text dump reads.
//
// It owns the series and what bounds them: per label (client id, topic,
// broker) at most a set number of distinct values, the rest folded into
// "other"; at most a set number of series per metric, the rest counted as
// dropped; and series not seen for a while removed. Besides the series it
// keeps only what open connections need (the requests in flight, each
// connection's client id), so memory is bounded by the limits and the open
// connections, never by the length of the capture.
//
// Time is the capture's: a message's time is that of the packet that
// completed it, and expiry compares packet times, so a file and a live
// capture of the same traffic give the same series.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "dissector/output/latency.hpp"
#include "dissector/protocol/session.hpp"

namespace kwire {

struct MonitorLimits {
  size_t client_ids = 200;   // distinct client_id label values; more are "other"
  size_t topics = 1000;      // distinct topic label values; more are "other"
  size_t brokers = 200;      // distinct broker label values; more are "other"
  size_t series = 20000;     // series per metric; more are dropped (counted)
  int64_t expire_seconds = 900;  // a series not seen this long is removed; 0: never
};

// The response-time buckets, in seconds: 100 µs to 60 s, 1-2.5-5 per decade,
// fine enough for sub-millisecond answers and multi-second long-polls.
const std::vector<double>& response_time_buckets();

// At most `limit` distinct values of one label: a new value past the limit
// becomes "other". Values not seen for the expiry time make room again.
class LabelLimit {
 public:
  LabelLimit(size_t limit, prometheus::Counter& folded) : limit_(limit), folded_(folded) {}
  std::string_view fold(std::string_view value, int64_t now_micros);
  void expire(int64_t before_micros);
  size_t size() const { return seen_.size(); }

 private:
  size_t limit_;
  prometheus::Counter& folded_;
  std::unordered_map<std::string, int64_t> seen_;  // value -> last seen
};

// One metric's series with their last-seen times: at most `limit`, removed
// when stale.
template <class M>
class SeriesSet {
 public:
  SeriesSet(prometheus::Family<M>& family, size_t limit, prometheus::Counter& dropped)
      : family_(family), limit_(limit), dropped_(dropped) {}
  // The series of these labels, made if need be; null when the limit is reached.
  template <class... Args>
  M* get(const prometheus::Labels& labels, int64_t now_micros, Args&&... args) {
    auto it = series_.find(labels);
    if (it == series_.end()) {
      if (series_.size() >= limit_) {
        dropped_.Increment();
        return nullptr;
      }
      it = series_.emplace(labels, Entry{&family_.Add(labels, std::forward<Args>(args)...), now_micros}).first;
    }
    it->second.last_seen = now_micros;
    return it->second.metric;
  }
  // Removes the series last seen before the time; returns how many.
  size_t expire(int64_t before_micros) {
    size_t n = 0;
    for (auto it = series_.begin(); it != series_.end();) {
      if (it->second.last_seen < before_micros) {
        family_.Remove(it->second.metric);
        it = series_.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    return n;
  }
  size_t size() const { return series_.size(); }

 private:
  struct Entry {
    M* metric;
    int64_t last_seen;
  };
  prometheus::Family<M>& family_;
  size_t limit_;
  prometheus::Counter& dropped_;
  std::map<prometheus::Labels, Entry> series_;
};

// Totals of the capture below the sessions, as the source and the packet
// pipeline count them (each call gives the totals so far).
struct CaptureTotals {
  uint64_t packets = 0, bytes = 0;
  uint64_t kernel_dropped = 0, if_dropped = 0;
};

class Monitor : public FrameHandler {
 public:
  Monitor(const ProgramSet& ps, MonitorLimits limits = {});
  ~Monitor() override;

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  // The Prometheus text exposition of every series.
  std::string exposition() const;

  void on_frame(const FrameContext& ctx, const Frame& f) override;
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override;
  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;
  void on_verdict(const TcpConnection& c, bool kafka, const Endpoint& client) override;
  void on_tls(const TcpConnection& c, const TlsEvent& event) override;
  void on_connection_end(const TcpConnection& c) override;

  void capture_totals(const CaptureTotals& t);
  void session_totals(const SessionStats& s);
  // Removes the series and label values not seen for the expiry time before
  // now (the latest packet time, in µs since the epoch); sweeps at most once
  // a tenth of the expiry time.
  void expire(int64_t now_micros);
  // The latest packet time seen, µs since the epoch (0 before any).
  int64_t now() const { return now_; }

 private:
  struct Families;
  void request(const FrameContext& ctx, const Frame& f, uint32_t conn);
  void response(const FrameContext& ctx, const Frame& f, uint32_t conn);
  void errors(const Frame& f, const std::string& api, const std::string& broker, const std::string& client);
  std::string_view topic_of(const Frame& f, uint32_t node) const;
  std::string broker_of(const Endpoint& server);
  std::string api_name(const Frame& f) const;
  void undecoded(std::string_view reason);
  static void add_to(prometheus::Counter& c, uint64_t total, uint64_t& last);

  const ProgramSet& ps_;
  MonitorLimits limits_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> m_;
  RequestMatcher matcher_;
  std::map<std::string, int32_t> node_ids_;             // "host:port" -> node id, from Metadata/DescribeCluster
  std::unordered_map<uint32_t, std::string> clients_;    // connection id -> its requests' client id
  int64_t now_ = 0;
  int64_t last_sweep_ = 0;  // capture time of the latest expiry sweep
  CaptureTotals last_capture_;
  SessionStats last_session_;
};

}  // namespace kwire
