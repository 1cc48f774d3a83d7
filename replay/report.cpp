#include "replay/report.hpp"

#include "replay/routing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "dissector/output/output.hpp"
#include "dissector/output/text_buffer.hpp"

namespace kwire::replay {

namespace {

bool sent(const ExchangeResult& e) {
  return e.outcome != Outcome::Skipped && e.outcome != Outcome::Unsupported &&
         !(e.outcome == Outcome::Unanswered && e.note.starts_with("not sent"));
}

std::string quote(std::string_view s) { return json_text(s); }
std::string xml(std::string_view s) { return xml_text(s); }

}  // namespace

std::map<std::string, size_t> regressions_by_field(const ReplayResult& r) {
  std::map<std::string, size_t> paths;
  for (const auto& e : r.exchanges)
    if (e.outcome == Outcome::Regression)
      for (const auto& d : e.differences)
        if (!d.ignored) ++paths[e.api_name + " " + plain_path(d.path)];
  return paths;
}

std::string json_text(std::string_view s) {
  TextBuffer t;
  json_string(t, s);
  return t.str();
}

std::string xml_text(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += ' ';
        else o += c;
    }
  }
  return o;
}

namespace {


double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) ;
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

struct ApiRow {
  Totals t;
  std::vector<double> live_ms, recorded_ms;
};

void count(Totals& t, const ExchangeResult& e) {
  if (sent(e)) ++t.sent;
  if (e.live_latency_us >= 0) ++t.answered;
  switch (e.outcome) {
    case Outcome::Same: ++t.same; break;
    case Outcome::IgnoredOnly: ++t.ignored_only; break;
    case Outcome::Regression: ++t.regressions; break;
    case Outcome::Race: ++t.races; break;
    case Outcome::Unanswered: ++t.unanswered; break;
    case Outcome::Unsupported: ++t.unsupported; break;
    case Outcome::Skipped: ++t.skipped; break;
    case Outcome::NotExpected: ++t.not_compared; break;
  }
}

std::map<std::string, ApiRow> by_api(const ReplayResult& r) {
  std::map<std::string, ApiRow> rows;
  for (const auto& e : r.exchanges) {
    if (e.outcome == Outcome::Skipped) continue;
    ApiRow& row = rows[e.api_name + " v" + std::to_string(e.api_version)];
    count(row.t, e);
    if (e.live_latency_us >= 0) row.live_ms.push_back(e.live_latency_us / 1000.0);
    if (e.live_latency_us >= 0 && e.recorded_latency_us >= 0) row.recorded_ms.push_back(e.recorded_latency_us / 1000.0);
  }
  return rows;
}

// Sessions that were a broker's own connection, by kind, in
// broker_traffic_kinds() order.
std::vector<std::pair<std::string, size_t>> broker_traffic_counts(const ReplayResult& r) {
  std::vector<std::pair<std::string, size_t>> out;
  for (auto kind : broker_traffic_kinds()) {
    size_t n = 0;
    for (const auto& s : r.sessions) n += s.broker_traffic == kind;
    if (n) out.emplace_back(kind, n);
  }
  return out;
}

}  // namespace

Totals totals(const ReplayResult& r) {
  Totals t;
  for (const auto& e : r.exchanges) count(t, e);
  return t;
}

void write_text_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx) {
  size_t replayed = 0;
  for (const auto& s : r.sessions) replayed += s.skip.empty();
  out << "kwire replay: " << ctx.capture << " -> " << ctx.target << " (timing " << ctx.timing << ")\n";
  out << "sessions: " << replayed << " replayed, " << (r.sessions.size() - replayed) << " not\n";
  for (const auto& s : r.sessions)
    if (!s.skip.empty()) out << "  session " << s.id << " " << s.client << " -> " << s.broker << ": " << s.skip << "\n";
  if (const auto kinds = broker_traffic_counts(r); !kinds.empty()) {
    out << "  broker-to-broker connections, never sent:";
    bool first = true;
    for (const auto& [kind, n] : kinds) out << (first ? " " : ", ") << kind << " " << n, first = false;
    out << "\n";
  }
  for (const auto& n : r.notes) out << "  " << n << "\n";
  char line[256];
  snprintf(line, sizeof line, "%-34s %6s %8s %6s %7s %7s %5s %10s %5s  %-15s %-15s\n", "api", "sent", "answered", "same",
           "ignored", "regress", "race", "unanswered", "unsup", "p50 ms live/rec", "p99 ms live/rec");
  out << "\n" << line;
  for (auto& [name, row] : by_api(r)) {
    char p50[32], p99[32];
    snprintf(p50, sizeof p50, "%.1f/%.1f", percentile(row.live_ms, 0.5), percentile(row.recorded_ms, 0.5));
    snprintf(p99, sizeof p99, "%.1f/%.1f", percentile(row.live_ms, 0.99), percentile(row.recorded_ms, 0.99));
    snprintf(line, sizeof line, "%-34s %6llu %8llu %6llu %7llu %7llu %5llu %10llu %5llu  %-15s %-15s\n", name.c_str(),
             (unsigned long long)row.t.sent, (unsigned long long)row.t.answered, (unsigned long long)row.t.same,
             (unsigned long long)row.t.ignored_only, (unsigned long long)row.t.regressions, (unsigned long long)row.t.races,
             (unsigned long long)row.t.unanswered, (unsigned long long)row.t.unsupported, p50, p99);
    out << line;
  }
  Totals t = totals(r);
  snprintf(line, sizeof line, "%-34s %6llu %8llu %6llu %7llu %7llu %5llu %10llu %5llu\n", "total", (unsigned long long)t.sent,
           (unsigned long long)t.answered, (unsigned long long)t.same, (unsigned long long)t.ignored_only,
           (unsigned long long)t.regressions, (unsigned long long)t.races, (unsigned long long)t.unanswered, (unsigned long long)t.unsupported);
  out << line;
  // Regressions by api and field path (indices left out), most frequent first.
  const std::map<std::string, size_t> paths = regressions_by_field(r);
  if (!paths.empty()) {
    std::vector<std::pair<std::string, size_t>> sorted(paths.begin(), paths.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    out << "\nregressions by field:\n";
    for (size_t i = 0; i < sorted.size() && i < ctx.max_listed; ++i) {
      snprintf(line, sizeof line, "  %6zu  %s\n", sorted[i].second, sorted[i].first.c_str());
      out << line;
    }
    if (sorted.size() > ctx.max_listed) out << "  ... " << sorted.size() - ctx.max_listed << " more fields\n";
  }
  // Per session, its first divergence in full, and the session's later
  // regressions under it, grouped: what a cascade started from comes first.
  std::map<uint32_t, std::vector<const ExchangeResult*>> per;
  for (const auto& e : r.exchanges)
    if (e.outcome == Outcome::Regression) per[e.session].push_back(&e);
  size_t listed = 0;
  for (auto& [session, list] : per) {
    if (listed++ == ctx.max_listed) { out << "  ... " << per.size() - ctx.max_listed << " more sessions\n"; break; }
    if (listed == 1) out << "\nfirst divergence per session (later regressions of the session under it):\n";
    std::sort(list.begin(), list.end(), [](const ExchangeResult* a, const ExchangeResult* b) { return a->frame < b->frame; });
    const ExchangeResult& e = *list.front();
    std::string who;
    for (const auto& s : r.sessions)
      if (s.id == session)
        who = " " + s.client + " -> " + s.broker + (s.client_id.empty() ? "" : " (" + s.client_id + ")") +
              (s.retry_budget_spent ? ", retry budget spent" : "");
    out << "  session " << session << who << "\n    frame " << e.frame << " " << e.api_name << " v" << e.api_version
        << " (recorded response frame " << e.response_frame << ")\n";
    size_t shown = 0;
    for (const auto& d : e.differences) {
      if (d.ignored) continue;
      if (shown++ == 8) { out << "        ...\n"; break; }
      out << "        " << (d.path.empty() ? "(response)" : d.path) << ": recorded " << d.recorded_text() << ", replayed "
          << d.replayed_text() << (d.rule.empty() ? "" : "  [" + d.rule + "]") << "\n";
    }
    if (list.size() > 1) {
      std::map<std::string, size_t> later;
      for (size_t i = 1; i < list.size(); ++i)
        for (const auto& d : list[i]->differences)
          if (!d.ignored) ++later[list[i]->api_name + " " + plain_path(d.path)];
      out << "    then " << list.size() - 1 << " more regressed response" << (list.size() > 2 ? "s" : "")
          << " in this session, up to frame " << list.back()->frame << ":\n";
      size_t n = 0;
      for (const auto& [what, count] : later) {
        if (n++ == 8) { out << "        ...\n"; break; }
        out << "        " << what << " x" << count << "\n";
      }
    }
  }
  // Races: the differing fields and the other session's request.
  size_t races = 0;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Race) continue;
    if (races++ == ctx.max_listed) { out << "  ... " << t.races - ctx.max_listed << " more\n"; break; }
    if (races == 1)
      out << "\nraces (differences that the order of concurrent sessions on one partition or group decides; not regressions):\n";
    out << "  session " << e.session << " frame " << e.frame << " " << e.api_name << " v" << e.api_version << "\n";
    size_t shown = 0;
    for (const auto& d : e.differences) {
      if (d.ignored) continue;
      if (shown++ == 4) { out << "        ...\n"; break; }
      out << "        " << d.path << ": recorded " << d.recorded_text() << ", replayed " << d.replayed_text() << "\n";
    }
    for (const auto& ev : e.races) {
      snprintf(line, sizeof line,
               "      with session %u frame %llu %s on %s: recorded %.3f ms (this) and %.3f ms%s; live %.3f and %.3f ms%s\n",
               ev.session, (unsigned long long)ev.frame, ev.api.c_str(), ev.partition.c_str(), ev.recorded_ms,
               ev.other_recorded_ms, ev.order_not_fixed ? ", order not fixed by the capture" : "", ev.live_ms,
               ev.other_live_ms, ev.live_order_differs ? ", the other order" : "");
      out << line;
    }
  }
  size_t unanswered = 0;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Unanswered || unanswered >= 5) continue;
    if (unanswered++ == 0) out << "\nunanswered (first 5):\n";
    out << "  frame " << e.frame << " " << e.api_name << " v" << e.api_version << " (session " << e.session << "): "
        << e.note << "\n";
  }
  size_t unsupported = 0;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Unsupported || unsupported >= 5) continue;
    if (unsupported++ == 0) out << "\nunsupported by the target (first 5):\n";
    out << "  frame " << e.frame << " " << e.api_name << " v" << e.api_version << ": " << e.note << "\n";
  }
  if (!r.shape.empty()) {
    out << "\nshape differences (the target has " << r.target_brokers << (r.target_brokers == 1 ? " broker" : " brokers")
        << ", the capture's cluster " << r.recorded_brokers << "; these follow from that alone, not regressions):\n";
    for (const auto& d : r.shape) {
      out << "  " << d.what << ": " << d.count << (d.count == 1 ? " time" : " times") << ", first frame " << d.first_frame;
      if (!d.recorded.empty()) out << " (recorded " << d.recorded << ", replayed " << d.replayed << ")";
      out << "\n    " << d.why << "\n";
    }
  }
  if (!r.gap_errors_ms.empty()) {
    snprintf(line, sizeof line, "\ntiming: replayed minus recorded gap between requests, p50 %.2f ms, p99 %.2f ms (%zu gaps)\n",
             percentile(r.gap_errors_ms, 0.5), percentile(r.gap_errors_ms, 0.99), r.gap_errors_ms.size());
    out << line;
  }
  snprintf(line, sizeof line,
           "\nresult: %llu regressions, %llu unanswered, %llu %s, %llu same, %llu differ only in ignored fields (%.1f s)\n",
           (unsigned long long)t.regressions, (unsigned long long)t.unanswered, (unsigned long long)t.races,
           t.races == 1 ? "race" : "races",
           (unsigned long long)t.same, (unsigned long long)t.ignored_only, r.wall_s);
  out << line;
  if (!r.stopped.empty()) out << "stopped early: " << r.stopped << " (what was not done is counted unanswered)\n";
}

void write_json_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx) {
  Totals t = totals(r);
  out << "{\"capture\":" << quote(ctx.capture) << ",\"target\":" << quote(ctx.target) << ",\"timing\":" << quote(ctx.timing)
      << ",\"summary\":{\"sent\":" << t.sent << ",\"answered\":" << t.answered << ",\"same\":" << t.same
      << ",\"ignoredOnly\":" << t.ignored_only << ",\"regressions\":" << t.regressions << ",\"unanswered\":" << t.unanswered
      << ",\"unsupported\":" << t.unsupported << ",\"skipped\":" << t.skipped << ",\"notCompared\":" << t.not_compared
      << ",\"races\":" << t.races << ",\"readsConverged\":" << r.reads_converged
      << ",\"readsNotConverged\":" << r.reads_not_converged << ",\"wallSeconds\":" << r.wall_s << ",\"cpuSeconds\":" << r.cpu_s;
  if (!r.stopped.empty()) out << ",\"stopped\":" << quote(r.stopped);
  size_t budget_spent = 0;
  for (const auto& s : r.sessions) budget_spent += s.retry_budget_spent;
  out << ",\"brokerToBroker\":{";
  bool any = false;
  for (const auto& [kind, n] : broker_traffic_counts(r)) out << (any ? "," : "") << quote(kind) << ":" << n, any = true;
  out << "},\"retryBudgetSpent\":" << budget_spent << "}";
  out << ",\"apis\":[";
  bool first = true;
  for (auto& [name, row] : by_api(r)) {
    out << (first ? "" : ",") << "{\"api\":" << quote(name) << ",\"sent\":" << row.t.sent << ",\"answered\":" << row.t.answered
        << ",\"same\":" << row.t.same << ",\"ignoredOnly\":" << row.t.ignored_only << ",\"regressions\":" << row.t.regressions
        << ",\"unanswered\":" << row.t.unanswered << ",\"unsupported\":" << row.t.unsupported
        << ",\"races\":" << row.t.races << ",\"latencyMs\":{\"p50\":" << percentile(row.live_ms, 0.5) << ",\"p99\":" << percentile(row.live_ms, 0.99)
        << ",\"recordedP50\":" << percentile(row.recorded_ms, 0.5) << ",\"recordedP99\":" << percentile(row.recorded_ms, 0.99)
        << "}}";
    first = false;
  }
  out << "],\"sessions\":[";
  first = true;
  // Each session's first divergence: its earliest regressed response, the
  // first field that differs (as the text report shows it), in one pass.
  std::map<uint32_t, const ExchangeResult*> first_regression;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Regression) continue;
    auto [it, fresh] = first_regression.emplace(e.session, &e);
    if (!fresh && e.frame < it->second->frame) it->second = &e;
  }
  for (const auto& s : r.sessions) {
    out << (first ? "" : ",") << "{\"session\":" << s.id << ",\"client\":" << quote(s.client) << ",\"broker\":" << quote(s.broker)
        << ",\"target\":" << quote(s.target) << ",\"clientId\":" << quote(s.client_id) << ",\"reconnects\":" << s.reconnects
        << ",\"retries\":" << s.retries << ",\"retrySeconds\":" << s.retry_s
        << ",\"retryBudgetSpent\":" << (s.retry_budget_spent ? "true" : "false");
    const auto fr = first_regression.find(s.id);
    const ExchangeResult* firstr = fr == first_regression.end() ? nullptr : fr->second;
    if (firstr)
      for (const auto& d : firstr->differences) {
        if (d.ignored) continue;
        out << ",\"firstDivergence\":{\"frame\":" << firstr->frame << ",\"api\":" << quote(firstr->api_name)
            << ",\"version\":" << firstr->api_version << ",\"path\":" << quote(d.path) << ",\"recorded\":" << d.recorded
            << ",\"replayed\":" << d.replayed;
        if (!d.recorded_name.empty())
          out << ",\"recordedName\":" << quote(d.recorded_name) << ",\"replayedName\":" << quote(d.replayed_name);
        out << "}";
        break;
      }
    if (!s.skip.empty()) out << ",\"skipped\":" << quote(s.skip);
    if (!s.broker_traffic.empty()) out << ",\"brokerToBroker\":" << quote(s.broker_traffic);
    out << "}";
    first = false;
  }
  out << "],\"regressions\":[";
  first = true;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Regression) continue;
    for (const auto& d : e.differences) {
      if (d.ignored) continue;
      out << (first ? "" : ",") << "{\"frame\":" << e.frame << ",\"responseFrame\":" << e.response_frame
          << ",\"session\":" << e.session << ",\"api\":" << quote(e.api_name) << ",\"version\":" << e.api_version
          << ",\"path\":" << quote(d.path) << ",\"recorded\":" << d.recorded << ",\"replayed\":" << d.replayed;
      if (!d.recorded_name.empty())
        out << ",\"recordedName\":" << quote(d.recorded_name) << ",\"replayedName\":" << quote(d.replayed_name);
      if (!d.rule.empty()) out << ",\"rule\":" << quote(d.rule);
      out << "}";
      first = false;
    }
  }
  out << "],\"regressionsByField\":{";
  first = true;
  for (const auto& [what, n] : regressions_by_field(r)) {
    out << (first ? "" : ",") << quote(what) << ":" << n;
    first = false;
  }
  out << "},\"races\":[";
  first = true;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Race) continue;
    out << (first ? "" : ",") << "{\"frame\":" << e.frame << ",\"responseFrame\":" << e.response_frame
        << ",\"session\":" << e.session << ",\"api\":" << quote(e.api_name) << ",\"version\":" << e.api_version
        << ",\"differences\":[";
    bool f2 = true;
    for (const auto& d : e.differences) {
      if (d.ignored) continue;
      out << (f2 ? "" : ",") << "{\"path\":" << quote(d.path) << ",\"recorded\":" << d.recorded
          << ",\"replayed\":" << d.replayed << "}";
      f2 = false;
    }
    out << "],\"with\":[";
    f2 = true;
    for (const auto& ev : e.races) {
      out << (f2 ? "" : ",") << "{\"session\":" << ev.session << ",\"frame\":" << ev.frame << ",\"api\":" << quote(ev.api)
          << ",\"partition\":" << quote(ev.partition) << ",\"recordedMs\":" << ev.recorded_ms
          << ",\"recordedResponseMs\":" << ev.recorded_response_ms << ",\"otherRecordedMs\":" << ev.other_recorded_ms
          << ",\"otherRecordedResponseMs\":" << ev.other_recorded_response_ms << ",\"liveMs\":" << ev.live_ms
          << ",\"otherLiveMs\":" << ev.other_live_ms << ",\"orderNotFixed\":" << (ev.order_not_fixed ? "true" : "false")
          << ",\"liveOrderDiffers\":" << (ev.live_order_differs ? "true" : "false") << "}";
      f2 = false;
    }
    out << "]}";
    first = false;
  }
  out << "],\"unanswered\":[";
  first = true;
  for (const auto& e : r.exchanges) {
    if (e.outcome != Outcome::Unanswered && e.outcome != Outcome::Unsupported) continue;
    out << (first ? "" : ",") << "{\"frame\":" << e.frame << ",\"session\":" << e.session << ",\"api\":" << quote(e.api_name)
        << ",\"version\":" << e.api_version << ",\"outcome\":" << quote(outcome_name(e.outcome)) << ",\"reason\":" << quote(e.note) << "}";
    first = false;
  }
  out << "]";
  if (!r.gap_errors_ms.empty())
    out << ",\"timingAccuracy\":{\"gaps\":" << r.gap_errors_ms.size() << ",\"gapErrorP50Ms\":" << percentile(r.gap_errors_ms, 0.5)
        << ",\"gapErrorP99Ms\":" << percentile(r.gap_errors_ms, 0.99) << "}";
  out << ",\"brokers\":{\"capture\":" << r.recorded_brokers << ",\"target\":" << r.target_brokers << "}";
  out << ",\"shape\":[";
  first = true;
  for (const auto& d : r.shape) {
    out << (first ? "" : ",") << "{\"what\":" << quote(d.what) << ",\"why\":" << quote(d.why) << ",\"count\":" << d.count
        << ",\"firstFrame\":" << d.first_frame << ",\"recorded\":" << quote(d.recorded) << ",\"replayed\":" << quote(d.replayed) << "}";
    first = false;
  }
  out << "]";
  out << ",\"timeShiftMs\":" << r.time_shift_ms;
  out << ",\"notes\":[";
  first = true;
  for (const auto& n : r.notes) { out << (first ? "" : ",") << quote(n); first = false; }
  out << "]}\n";
}

void write_junit_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx) {
  Totals t = totals(r);
  size_t failures = 0, skipped = 0;
  std::map<uint32_t, std::vector<const ExchangeResult*>> per;
  for (const auto& e : r.exchanges) per[e.session].push_back(&e);
  for (const auto& s : r.sessions) {
    if (!s.skip.empty()) { ++skipped; continue; }
    for (const auto* e : per[s.id])
      if (e->outcome == Outcome::Regression || e->outcome == Outcome::Unanswered) { ++failures; break; }
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"kwire replay\" tests=\"" << r.sessions.size() << "\" failures=\"" << failures << "\">\n";
  out << "  <testsuite name=\"" << xml(ctx.capture + " -> " + ctx.target) << "\" tests=\"" << r.sessions.size()
      << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\" time=\"" << r.wall_s << "\">\n";
  for (const auto& s : r.sessions) {
    out << "    <testcase classname=\"kwire.replay\" name=\""
        << xml("session " + std::to_string(s.id) + " " + s.client + " -> " + s.broker +
               (s.client_id.empty() ? "" : " (" + s.client_id + ")"))
        << "\">\n";
    if (!s.skip.empty()) {
      out << "      <skipped message=\"" << xml(s.skip) << "\"/>\n";
    } else {
      std::string body, races;
      size_t regressions = 0, unanswered = 0;
      for (const auto* e : per[s.id]) {
        if (e->outcome == Outcome::Regression) {
          ++regressions;
          body += "frame " + std::to_string(e->frame) + " " + e->api_name + " v" + std::to_string(e->api_version) + "\n";
          for (const auto& d : e->differences)
            if (!d.ignored) body += "  " + d.path + ": recorded " + d.recorded_text() + ", replayed " + d.replayed_text() + "\n";
        } else if (e->outcome == Outcome::Race) {
          races += "race: frame " + std::to_string(e->frame) + " " + e->api_name + " v" + std::to_string(e->api_version) +
                   " " + e->note + "\n";
        } else if (e->outcome == Outcome::Unanswered) {
          ++unanswered;
          body += "frame " + std::to_string(e->frame) + " " + e->api_name + " v" + std::to_string(e->api_version) +
                  " unanswered: " + e->note + "\n";
        }
      }
      if (regressions || unanswered)
        out << "      <failure message=\"" << regressions << " regressions, " << unanswered << " unanswered\">"
            << xml(body) << "</failure>\n";
      // A race is not a failure: said next to the test case.
      if (!races.empty()) out << "      <system-out>" << xml(races) << "</system-out>\n";
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  (void)t;
}

}  // namespace kwire::replay
