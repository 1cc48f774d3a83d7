#include "replay/differential.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "replay/compare.hpp"

namespace kwire::replay {

bool beyond_noise(uint64_t candidate, uint64_t noise, uint64_t exchanges, const NoiseThresholds& t) {
  if (candidate <= noise || exchanges == 0) return false;
  const double excess = static_cast<double>(candidate - noise);
  return excess * 100.0 / static_cast<double>(candidate) > t.relative &&
         excess * 100.0 / static_cast<double>(exchanges) > t.absolute;
}

std::string_view verdict_name(PathVerdict v) {
  switch (v) {
    case PathVerdict::Regression: return "regression";
    case PathVerdict::Noise: return "noise";
    case PathVerdict::Explained: return "explained";
    case PathVerdict::NoiseOnly: return "noise only";
  }
  return "?";
}

size_t DifferentialResult::regressions() const {
  size_t n = 0;
  for (const auto& p : paths) n += p.verdict == PathVerdict::Regression;
  return n;
}

bool run_differential(const ProgramSet& ps, const Recording& rec, std::vector<DiffTarget>& targets) {
  Lockstep lockstep(targets.size());
  // Script hooks (one Lua state) are called by one engine at a time.
  std::mutex hooks;
  for (size_t i = 0; i < targets.size(); ++i) {
    ReplayOptions& o = targets[i].options;
    o.lockstep = &lockstep;
    o.lane = i;
    if (auto hook = o.on_request)
      o.on_request = [hook, &hooks](Frame& f, uint64_t frame, const std::string& conn, bool& skip, std::string& error) {
        std::lock_guard<std::mutex> lock(hooks);
        return hook(f, frame, conn, skip, error);
      };
    if (auto hook = o.on_response)
      o.on_response = [hook, &hooks](const Frame& live, const Frame& recorded, uint64_t frame, const std::string& conn,
                                     std::vector<std::pair<std::string, std::string>>& expect, std::string& error) {
        std::lock_guard<std::mutex> lock(hooks);
        return hook(live, recorded, frame, conn, expect, error);
      };
  }
  std::vector<std::thread> threads;
  for (auto& t : targets)
    threads.emplace_back([&ps, &rec, &t] { t.ran = run_replay(ps, rec, t.options, t.result, t.error); });
  for (auto& th : threads) th.join();
  bool all = true;
  for (auto& t : targets) {
    t.options.lockstep = nullptr;
    all &= t.ran;
  }
  return all;
}

namespace {

bool answered(Outcome o) {
  return o == Outcome::Same || o == Outcome::IgnoredOnly || o == Outcome::Regression || o == Outcome::Race;
}

std::string range_text(const std::map<int16_t, std::pair<int16_t, int16_t>>& versions, int16_t api) {
  auto it = versions.find(api);
  if (it == versions.end()) return "\"api not supported\"";
  return "\"v" + std::to_string(it->second.first) + "-v" + std::to_string(it->second.second) + "\"";
}

}  // namespace

void pair_differences(const ExchangeResult& a, const ExchangeResult& b,
                      const std::map<int16_t, std::pair<int16_t, int16_t>>& versions_a,
                      const std::map<int16_t, std::pair<int16_t, int16_t>>& versions_b,
                      std::vector<PairDifference>& out) {
  const bool aa = answered(a.outcome), ba = answered(b.outcome);
  if (aa && ba) {
    // Both judged against the same recorded answer: where their differences
    // from it are not the same, they differ from each other.
    std::map<std::string, const Difference*> da, db;
    for (const auto& d : a.differences) da.emplace(d.path.empty() ? "(response)" : d.path, &d);
    for (const auto& d : b.differences) db.emplace(d.path.empty() ? "(response)" : d.path, &d);
    const bool race = a.outcome == Outcome::Race || b.outcome == Outcome::Race;
    auto judge = [&](const std::string& path, const Difference* x, const Difference* y) {
      PairDifference p;
      p.path = path;
      p.a = x ? x->replayed_text() : y->recorded_text();
      p.b = y ? y->replayed_text() : x->recorded_text();
      p.capture = !x ? "a" : !y ? "b" : "neither";
      if ((!x || x->ignored) && (!y || y->ignored)) p.explained = "rule: " + (x ? x->rule : y->rule);
      else if (race) p.explained = "race";
      out.push_back(std::move(p));
    };
    // In the order the engines found them (the fields' order in the answer).
    auto key = [](const Difference& d) { return d.path.empty() ? std::string("(response)") : d.path; };
    for (const auto& d : a.differences) {
      const std::string path = key(d);
      if (da[path] != &d) continue;   // a path twice: its first
      auto it = db.find(path);
      if (it == db.end()) judge(path, &d, nullptr);
      else if (d.replayed != it->second->replayed) judge(path, &d, it->second);
    }
    for (const auto& d : b.differences) {
      const std::string path = key(d);
      if (db[path] == &d && !da.count(path)) judge(path, nullptr, &d);
    }
    return;
  }
  const bool au = a.outcome == Outcome::Unsupported, bu = b.outcome == Outcome::Unsupported;
  if ((au && ba) || (bu && aa)) {
    PairDifference p;
    p.path = "(version)";
    p.a = range_text(versions_a, a.api_key);
    p.b = range_text(versions_b, b.api_key);
    p.capture = au ? "b" : "a";
    out.push_back(std::move(p));
    return;
  }
  const bool an = a.outcome == Outcome::Unanswered, bn = b.outcome == Outcome::Unanswered;
  if ((an && ba) || (bn && aa)) {
    PairDifference p;
    p.path = "(answer)";
    p.a = an ? json_text("no answer: " + a.note) : "\"answered\"";
    p.b = bn ? json_text("no answer: " + b.note) : "\"answered\"";
    p.capture = an ? "b" : "a";
    out.push_back(std::move(p));
  }
}

namespace {

// Exchanges compared by both targets of a pair: both sent (answered,
// refused for its version, or unanswered) and not both without an answer.
bool comparable(const ExchangeResult& a, const ExchangeResult& b) {
  auto reached = [](Outcome o) { return answered(o) || o == Outcome::Unsupported || o == Outcome::Unanswered; };
  return reached(a.outcome) && reached(b.outcome) && (answered(a.outcome) || answered(b.outcome));
}

using Key = std::tuple<std::string, int16_t, std::string>;   // api, version, plain path

const std::string& role_word(const std::string& side, bool noise) {
  static const std::string baseline = "baseline", candidate = "candidate", secondary = "secondary", neither = "neither";
  return side == "a" ? baseline : side == "b" ? (noise ? secondary : candidate) : neither;
}

}  // namespace

DifferentialResult analyse(const std::vector<DiffTarget>& targets, const NoiseThresholds& t) {
  DifferentialResult out;
  out.thresholds = t;
  const DiffTarget* base = nullptr;
  const DiffTarget* cand = nullptr;
  const DiffTarget* sec = nullptr;
  for (const auto& x : targets) {
    if (x.role == "baseline") base = &x;
    else if (x.role == "candidate") cand = &x;
    else if (x.role == "secondary") sec = &x;
  }
  if (!base || !cand) return out;
  out.has_secondary = sec != nullptr;
  // The engines lay their results out alike (same recording, same filters);
  // paired by session and index all the same.
  auto index = [](const ReplayResult& r) {
    std::unordered_map<uint64_t, const ExchangeResult*> m;
    for (const auto& e : r.exchanges) m.emplace((uint64_t{e.session} << 32) | e.index, &e);
    return m;
  };
  const auto cand_at = index(cand->result);
  const auto sec_at = sec ? index(sec->result) : decltype(cand_at){};
  std::map<Key, PathRow> rows;
  std::map<Key, std::map<std::string, uint64_t>> reasons;
  std::map<std::pair<std::string, int16_t>, uint64_t> exchanges;
  std::vector<std::pair<Key, Divergence>> unexplained;
  std::vector<PairDifference> diffs;
  for (const auto& b : base->result.exchanges) {
    const uint64_t key = (uint64_t{b.session} << 32) | b.index;
    auto c = cand_at.find(key);
    if (c == cand_at.end()) continue;
    const ExchangeResult& ce = *c->second;
    if (!comparable(b, ce)) {
      if (answered(b.outcome) || answered(ce.outcome)) ++out.not_compared;
    } else {
      ++out.compared;
      ++exchanges[{b.api_name, b.api_version}];
      diffs.clear();
      pair_differences(b, ce, base->result.target_versions, cand->result.target_versions, diffs);
      out.differing += !diffs.empty();
      std::set<Key> seen, seen_unexplained;   // a path counts once per exchange
      for (auto& d : diffs) {
        Key k{b.api_name, b.api_version, plain_path(d.path)};
        PathRow& row = rows[k];
        if (seen.insert(k).second) {
          ++row.candidate;
          if (row.candidate == 1) {
            row.frame = b.frame;
            row.baseline = d.a;
            row.candidate_value = d.b;
            row.capture = role_word(d.capture, false);
          }
        }
        if (d.explained.empty()) {
          if (seen_unexplained.insert(k).second) ++row.unexplained;
          unexplained.push_back({k, Divergence{b.session, b.frame, b.api_name, b.api_version, d}});
        } else {
          ++reasons[k][d.explained];
        }
      }
    }
    if (!sec) continue;
    auto s = sec_at.find(key);
    if (s == sec_at.end() || !comparable(b, *s->second)) continue;
    diffs.clear();
    pair_differences(b, *s->second, base->result.target_versions, sec->result.target_versions, diffs);
    out.noisy += !diffs.empty();
    std::set<Key> seen;
    for (const auto& d : diffs) {
      Key k{b.api_name, b.api_version, plain_path(d.path)};
      if (!seen.insert(k).second) continue;
      PathRow& row = rows[k];
      if (++row.noise == 1) {
        row.noise_frame = b.frame;
        row.noise_baseline = d.a;
        row.noise_secondary = d.b;
      }
    }
  }
  for (auto& [k, row] : rows) {
    row.api = std::get<0>(k);
    row.version = std::get<1>(k);
    row.path = std::get<2>(k);
    row.exchanges = exchanges[{row.api, row.version}];
    if (row.candidate == 0) {
      row.verdict = PathVerdict::NoiseOnly;
    } else if (row.unexplained == 0) {
      row.verdict = PathVerdict::Explained;
      uint64_t best = 0;
      for (const auto& [why, n] : reasons[k])
        if (n > best) best = n, row.why = why;
    } else if (sec && !beyond_noise(row.candidate, row.noise, row.exchanges, t)) {
      row.verdict = PathVerdict::Noise;
    } else {
      row.verdict = PathVerdict::Regression;
    }
  }
  for (auto& [k, d] : unexplained)
    if (rows[k].verdict == PathVerdict::Regression) out.divergences.push_back(std::move(d));
  std::stable_sort(out.divergences.begin(), out.divergences.end(), [](const Divergence& x, const Divergence& y) {
    return std::tie(x.session, x.frame) < std::tie(y.session, y.frame);
  });
  for (auto& [k, row] : rows) out.paths.push_back(std::move(row));
  std::stable_sort(out.paths.begin(), out.paths.end(), [](const PathRow& x, const PathRow& y) {
    return static_cast<int>(x.verdict) < static_cast<int>(y.verdict);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Reports

namespace {

std::string thresholds_text(const NoiseThresholds& t) {
  char line[128];
  snprintf(line, sizeof line, "relative %g%%, absolute %g%% of exchanges", t.relative, t.absolute);
  return line;
}

std::string session_who(const ReplayResult& r, uint32_t session) {
  for (const auto& s : r.sessions)
    if (s.id == session)
      return s.client + " -> " + s.broker + (s.client_id.empty() ? "" : " (" + s.client_id + ")");
  return {};
}

// Divergences per session, in frame order.
std::map<uint32_t, std::vector<const Divergence*>> per_session(const DifferentialResult& d) {
  std::map<uint32_t, std::vector<const Divergence*>> per;
  for (const auto& v : d.divergences) per[v.session].push_back(&v);
  return per;
}

const DiffTarget* role(const std::vector<DiffTarget>& targets, std::string_view name) {
  for (const auto& t : targets)
    if (t.role == name) return &t;
  return nullptr;
}

std::string capture_note(const std::string& side) {
  return side == "neither" ? "neither as the capture" : side + " as the capture";
}

}  // namespace

void write_differential_text(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                             const DiffReportContext& ctx) {
  char line[320];
  out << "kwire replay: " << ctx.capture << " (timing " << ctx.timing << "), differential\n";
  for (const auto& t : targets) {
    out << "  " << t.role << std::string(t.role.size() < 10 ? 10 - t.role.size() : 1, ' ') << t.target;
    if (!t.ran) out << "  could not run: " << t.error;
    out << "\n";
  }
  out << "  noise thresholds: " << thresholds_text(d.thresholds)
      << (d.has_secondary ? "" : " (no --secondary: the replay's own rules decide alone)") << "\n";
  const DiffTarget* base = role(targets, "baseline");
  const auto per = per_session(d);
  if (!per.empty()) out << "\ncandidate divergences, first per session (its later ones under it):\n";
  size_t listed = 0;
  for (const auto& [session, list] : per) {
    if (listed++ == ctx.max_listed) { out << "  ... " << per.size() - ctx.max_listed << " more sessions\n"; break; }
    const Divergence& first = *list.front();
    out << "  session " << session << " " << (base ? session_who(base->result, session) : "") << "\n    frame "
        << first.frame << " " << first.api << " v" << first.version << "\n";
    size_t shown = 0;
    for (const Divergence* v : list) {
      if (v->frame != first.frame) break;
      if (shown++ == 8) { out << "        ...\n"; break; }
      if (v->d.path == "(version)")
        out << "        version not supported by the " << (v->d.capture == "b" ? "baseline" : "candidate")
            << " (ApiVersions ranges: baseline " << v->d.a << ", candidate " << v->d.b << ")\n";
      else
        out << "        " << v->d.path << ": baseline " << v->d.a << ", candidate " << v->d.b << "  ("
            << capture_note(role_word(v->d.capture, false)) << ")\n";
    }
    std::map<std::string, size_t> later;
    uint64_t last = first.frame;
    for (const Divergence* v : list)
      if (v->frame != first.frame) ++later[v->api + " " + plain_path(v->d.path)], last = v->frame;
    if (!later.empty()) {
      out << "    then, up to frame " << last << ":\n";
      size_t n = 0;
      for (const auto& [what, count] : later) {
        if (n++ == 8) { out << "        ...\n"; break; }
        out << "        " << what << " x" << count << "\n";
      }
    }
  }
  snprintf(line, sizeof line, "\n%-40s %-46s %9s %9s %7s  %s\n", "api", "path", "exchanges", "candidate", "noise",
           "verdict");
  out << line;
  size_t rows = 0;
  for (const auto& p : d.paths) {
    if (p.verdict == PathVerdict::NoiseOnly) continue;
    ++rows;
    const std::string api = p.api + " v" + std::to_string(p.version);
    std::string verdict(verdict_name(p.verdict));
    if (p.verdict == PathVerdict::Explained) verdict += " (" + p.why + ")";
    snprintf(line, sizeof line, "%-40s %-46s %9llu %9llu %7llu  %s\n", api.c_str(), p.path.c_str(),
             (unsigned long long)p.exchanges, (unsigned long long)p.candidate, (unsigned long long)p.noise, verdict.c_str());
    out << line;
    if (p.verdict == PathVerdict::Regression || p.verdict == PathVerdict::Noise)
      out << "    first frame " << p.frame << ": baseline " << p.baseline << ", candidate " << p.candidate_value << " ("
          << capture_note(p.capture) << ")\n";
  }
  if (!rows) out << "  (the candidate answered every compared request as the baseline did)\n";
  if (d.has_secondary) {
    out << "\nnoise (the secondary against the baseline; first frame, both values):\n";
    size_t n = 0;
    for (const auto& p : d.paths) {
      if (p.noise == 0) continue;
      if (n++ == 3 * ctx.max_listed) { out << "  ...\n"; break; }
      snprintf(line, sizeof line, "  %-40s %-46s %5llu of %llu\n", (p.api + " v" + std::to_string(p.version)).c_str(),
               p.path.c_str(), (unsigned long long)p.noise, (unsigned long long)p.exchanges);
      out << line << "      frame " << p.noise_frame << ": baseline " << p.noise_baseline << ", secondary "
          << p.noise_secondary << "\n";
    }
    if (!n) out << "  (none: the two baselines answered alike)\n";
  }
  out << "\ndrift from the capture (each target against the recorded answers; not judged):\n";
  for (const auto& t : targets) {
    if (!t.ran) continue;
    const Totals tt = totals(t.result);
    snprintf(line, sizeof line, "  %-10s %llu sent, %llu regressions, %llu %s, %llu unanswered, %llu unsupported (%.1f s, %.2f CPU s)\n",
             t.role.c_str(), (unsigned long long)tt.sent, (unsigned long long)tt.regressions, (unsigned long long)tt.races,
             tt.races == 1 ? "race" : "races", (unsigned long long)tt.unanswered, (unsigned long long)tt.unsupported, t.result.wall_s, t.result.cpu_s);
    out << line;
    size_t n = 0;
    for (const auto& [what, count] : regressions_by_field(t.result)) {
      if (n++ == 5) { out << "      ...\n"; break; }
      out << "      " << what << " x" << count << "\n";
    }
    if (!t.result.stopped.empty()) out << "      stopped early: " << t.result.stopped << "\n";
  }
  snprintf(line, sizeof line,
           "\nresult: %zu candidate %s beyond noise; %llu exchanges compared, %llu differ (%llu not sent to both)\n",
           d.regressions(), d.regressions() == 1 ? "regression" : "regressions", (unsigned long long)d.compared,
           (unsigned long long)d.differing, (unsigned long long)d.not_compared);
  out << line;
}

void write_differential_json(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                             const DiffReportContext& ctx) {
  out << "{\"capture\":" << json_text(ctx.capture) << ",\"timing\":" << json_text(ctx.timing) << ",\"targets\":[";
  bool first = true;
  for (const auto& t : targets) {
    const Totals tt = totals(t.result);
    out << (first ? "" : ",") << "{\"role\":" << json_text(t.role) << ",\"target\":" << json_text(t.target)
        << ",\"ran\":" << (t.ran ? "true" : "false");
    if (!t.ran) out << ",\"error\":" << json_text(t.error);
    out << ",\"drift\":{\"sent\":" << tt.sent << ",\"same\":" << tt.same << ",\"ignoredOnly\":" << tt.ignored_only
        << ",\"regressions\":" << tt.regressions << ",\"races\":" << tt.races << ",\"unanswered\":" << tt.unanswered
        << ",\"unsupported\":" << tt.unsupported << "},\"wallSeconds\":" << t.result.wall_s
        << ",\"cpuSeconds\":" << t.result.cpu_s;
    if (!t.result.stopped.empty()) out << ",\"stopped\":" << json_text(t.result.stopped);
    out << "}";
    first = false;
  }
  out << "],\"thresholds\":{\"relativePercent\":" << d.thresholds.relative << ",\"absolutePercent\":" << d.thresholds.absolute
      << "},\"secondary\":" << (d.has_secondary ? "true" : "false") << ",\"summary\":{\"regressions\":" << d.regressions()
      << ",\"compared\":" << d.compared << ",\"differing\":" << d.differing << ",\"noisy\":" << d.noisy
      << ",\"notCompared\":" << d.not_compared << "},\"paths\":[";
  first = true;
  for (const auto& p : d.paths) {
    out << (first ? "" : ",") << "{\"api\":" << json_text(p.api) << ",\"version\":" << p.version
        << ",\"path\":" << json_text(p.path) << ",\"exchanges\":" << p.exchanges << ",\"candidate\":" << p.candidate
        << ",\"unexplained\":" << p.unexplained << ",\"noise\":" << p.noise
        << ",\"verdict\":" << json_text(verdict_name(p.verdict));
    if (!p.why.empty()) out << ",\"why\":" << json_text(p.why);
    if (p.candidate)
      out << ",\"example\":{\"frame\":" << p.frame << ",\"baseline\":" << json_text(p.baseline)
          << ",\"candidate\":" << json_text(p.candidate_value) << ",\"asTheCapture\":" << json_text(p.capture) << "}";
    if (p.noise)
      out << ",\"noiseExample\":{\"frame\":" << p.noise_frame << ",\"baseline\":" << json_text(p.noise_baseline)
          << ",\"secondary\":" << json_text(p.noise_secondary) << "}";
    out << "}";
    first = false;
  }
  out << "],\"sessions\":[";
  first = true;
  for (const auto& [session, list] : per_session(d)) {
    const Divergence& f = *list.front();
    out << (first ? "" : ",") << "{\"session\":" << session << ",\"firstDivergence\":{\"frame\":" << f.frame
        << ",\"api\":" << json_text(f.api) << ",\"version\":" << f.version << ",\"path\":" << json_text(f.d.path)
        << ",\"baseline\":" << json_text(f.d.a) << ",\"candidate\":" << json_text(f.d.b)
        << ",\"asTheCapture\":" << json_text(role_word(f.d.capture, false));
    if (f.d.path == "(version)")
      out << ",\"what\":" << json_text(std::string("version not supported by the ") + (f.d.capture == "b" ? "baseline" : "candidate"));
    out << "},\"later\":[";
    bool f2 = true;
    for (size_t i = 1; i < list.size(); ++i) {
      const Divergence& v = *list[i];
      out << (f2 ? "" : ",") << "{\"frame\":" << v.frame << ",\"api\":" << json_text(v.api) << ",\"path\":" << json_text(v.d.path)
          << ",\"baseline\":" << json_text(v.d.a) << ",\"candidate\":" << json_text(v.d.b) << "}";
      f2 = false;
    }
    out << "]}";
    first = false;
  }
  out << "]}\n";
}

void write_differential_junit(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                              const DiffReportContext& ctx) {
  const DiffTarget* base = role(targets, "baseline");
  const auto per = per_session(d);
  std::vector<uint32_t> sessions;
  if (base)
    for (const auto& s : base->result.sessions)
      if (s.skip.empty()) sessions.push_back(s.id);
  const size_t regressed = d.regressions();
  const size_t tests = sessions.size() + regressed;
  const size_t failures = per.size() + regressed;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"kwire replay differential\" tests=\"" << tests << "\" failures=\"" << failures << "\">\n";
  out << "  <testsuite name=\"" << xml_text(ctx.capture + ": candidate against baseline") << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\">\n";
  for (uint32_t s : sessions) {
    out << "    <testcase classname=\"kwire.replay.session\" name=\""
        << xml_text("session " + std::to_string(s) + " " + session_who(base->result, s)) << "\">\n";
    if (auto it = per.find(s); it != per.end()) {
      std::string body;
      for (const Divergence* v : it->second)
        body += "frame " + std::to_string(v->frame) + " " + v->api + " v" + std::to_string(v->version) + " " + v->d.path +
                ": baseline " + v->d.a + ", candidate " + v->d.b + "\n";
      const Divergence& f = *it->second.front();
      out << "      <failure message=\""
          << xml_text("first candidate divergence: frame " + std::to_string(f.frame) + " " + f.api + " " + f.d.path)
          << "\">" << xml_text(body) << "</failure>\n";
    }
    out << "    </testcase>\n";
  }
  for (const auto& p : d.paths) {
    if (p.verdict != PathVerdict::Regression) continue;
    const std::string name = p.api + " v" + std::to_string(p.version) + " " + p.path;
    out << "    <testcase classname=\"kwire.replay.path\" name=\"" << xml_text(name) << "\">\n      <failure message=\""
        << xml_text(std::to_string(p.candidate) + " of " + std::to_string(p.exchanges) + " exchanges differ, noise " +
                    std::to_string(p.noise))
        << "\">"
        << xml_text("first frame " + std::to_string(p.frame) + ": baseline " + p.baseline + ", candidate " + p.candidate_value)
        << "</failure>\n    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace kwire::replay
