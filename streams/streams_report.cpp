#include "streams/streams_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>

#include "dissector/protocol/brokers.hpp"

namespace kwire::streams {

using nlohmann::json;

namespace {

std::string fmt(const char* f, auto... args) {
  char buf[512];
  snprintf(buf, sizeof buf, f, args...);
  return buf;
}

std::string when(const At& a) { return fmt("frame %llu (%.3f s)", static_cast<unsigned long long>(a.frame), a.time); }

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}

// Task names sort by sub-topology then partition numerically.
std::vector<std::string> sorted_tasks(const std::set<std::string>& s) {
  std::vector<std::string> v(s.begin(), s.end());
  auto key = [](const std::string& t) {
    size_t u = t.rfind('_');
    return std::make_pair(t.substr(0, u), u == std::string::npos ? 0 : std::atoi(t.c_str() + u + 1));
  };
  std::sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return v;
}

std::string assignment_text(const Assignment& a) {
  return "active " + list(sorted_tasks(a.tasks[0])) + " standby " + list(sorted_tasks(a.tasks[1])) + " warm-up " +
         list(sorted_tasks(a.tasks[2]));
}

std::string statuses_text(const std::map<int, std::string>& s) {
  if (s.empty()) return "(none)";
  std::string out;
  for (const auto& [code, detail] : s) {
    if (!out.empty()) out += "; ";
    out += status_name(code) + " \"" + detail + "\"";
  }
  return out;
}

const char* type_label(int t) {
  switch (t) {
    case 1: return "Source";
    case 2: return "Processor";
    case 3: return "Sink";
  }
  return "Node";
}

// Nodes in the order describe() lists them: by distance from a source, then name.
std::vector<const TopoNode*> ordered(const std::vector<TopoNode>& nodes) {
  std::map<std::string, int> depth;
  std::queue<const TopoNode*> q;
  std::map<std::string, const TopoNode*> by_name;
  for (const auto& n : nodes) by_name[n.name] = &n;
  for (const auto& n : nodes)
    if (n.predecessors.empty()) { depth[n.name] = 0; q.push(&n); }
  while (!q.empty()) {
    const TopoNode* n = q.front();
    q.pop();
    for (const auto& s : n->successors) {
      auto it = by_name.find(s);
      if (it == by_name.end() || depth.count(s)) continue;
      depth[s] = depth[n->name] + 1;
      q.push(it->second);
    }
  }
  std::vector<const TopoNode*> out;
  for (const auto& n : nodes) out.push_back(&n);
  std::stable_sort(out.begin(), out.end(), [&](const TopoNode* a, const TopoNode* b) {
    int da = depth.count(a->name) ? depth[a->name] : 1 << 20, db = depth.count(b->name) ? depth[b->name] : 1 << 20;
    return da != db ? da < db : a->name < b->name;
  });
  return out;
}

void describe_node(std::string& out, const TopoNode& n) {
  out += "    " + std::string(type_label(n.type)) + ": " + n.name;
  if (n.type == 1) out += " (topics: " + list(n.source_topics) + ")";
  else if (n.type == 3) out += " (topic: " + n.sink_topic + ")";
  else out += " (stores: " + list(n.stores) + ")";
  out += "\n";
  for (const auto& s : n.successors) out += "      --> " + s + "\n";
  for (const auto& p : n.predecessors) out += "      <-- " + p + "\n";
}

json at_json(const At& a) { return {{"frame", a.frame}, {"time", a.time}}; }
json with_at(const At& a, json j) {
  j["frame"] = a.frame;
  j["time"] = a.time;
  return j;
}

json node_json(const TopoNode& n) {
  json j = {{"name", n.name},         {"type", n.type == 1 ? "SOURCE" : n.type == 2 ? "PROCESSOR" : n.type == 3 ? "SINK" : "?"},
            {"sourceTopics", n.source_topics}, {"stores", n.stores}, {"successors", n.successors},
            {"predecessors", n.predecessors}};
  j["sinkTopic"] = n.has_sink_topic ? json(n.sink_topic) : json(nullptr);
  return j;
}

json topology_json(const Topology& t) {
  if (!t.present) return nullptr;
  json subs = json::array();
  for (const auto& s : t.subtopologies) {
    json j = {{"subtopologyId", s.id}};
    if (t.described) {
      j["nodes"] = json::array();
      for (const auto& n : s.nodes) j["nodes"].push_back(node_json(n));
    } else {
      j["sourceTopics"] = s.source_topics;
      j["sourceTopicRegex"] = s.source_regex;
      j["repartitionSourceTopics"] = s.repartition_source_topics;
      j["repartitionSinkTopics"] = s.repartition_sink_topics;
      j["stateChangelogTopics"] = s.changelog_topics;
    }
    subs.push_back(j);
  }
  json globals = json::array();
  for (const auto& g : t.global_stores) globals.push_back({{"source", node_json(g.source)}, {"processor", node_json(g.processor)}});
  return with_at(t.at, {{"origin", t.origin}, {"described", t.described}, {"epoch", t.epoch}, {"subtopologies", subs},
                        {"globalStores", globals}});
}

std::string dot_id(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
std::string dot_label(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    if (i + 1 < lines.size()) out += "\\n";
  }
  return out + "\"";
}
const char* fill(int type) { return type == 1 ? "#dbeafe" : type == 3 ? "#dcfce7" : "#fef9c3"; }

std::vector<std::string> node_lines(const TopoNode& n) {
  std::vector<std::string> l = {std::string(type_label(n.type)) + ": " + n.name};
  if (n.type == 1) l.push_back("topics: " + list(n.source_topics));
  if (n.type == 3) l.push_back("topic: " + n.sink_topic);
  if (!n.stores.empty()) l.push_back("stores: " + list(n.stores));
  return l;
}

void group_dot(std::string& out, const Group& g, const std::string& prefix) {
  const Topology& t = g.topology;
  int cluster = 0;
  auto id = [&](const std::string& n) { return dot_id(prefix + n); };
  if (t.described) {
    for (const auto& s : t.subtopologies) {
      out += fmt("  subgraph \"cluster_%s%d\" {\n", prefix.c_str(), cluster++);
      out += "    label=" + dot_label({"Sub-topology: " + s.id}) + "; style=\"rounded\"; color=\"#64748b\";\n";
      for (const auto* n : ordered(s.nodes))
        out += "    " + id(n->name) + " [label=" + dot_label(node_lines(*n)) + ", fillcolor=\"" + fill(n->type) + "\"];\n";
      out += "  }\n";
    }
    for (const auto& gs : t.global_stores) {
      out += fmt("  subgraph \"cluster_%s%d\" {\n", prefix.c_str(), cluster++);
      out += "    label=" + dot_label({"Global store: " + list(gs.processor.stores)}) + "; style=\"dashed\"; color=\"#7c3aed\";\n";
      out += "    " + id(gs.source.name) + " [label=" + dot_label(node_lines(gs.source)) + ", fillcolor=\"" + fill(1) + "\"];\n";
      out += "    " + id(gs.processor.name) + " [label=" + dot_label(node_lines(gs.processor)) + ", fillcolor=\"#ede9fe\"];\n";
      out += "  }\n";
    }
    for (const auto& s : t.subtopologies)
      for (const auto& n : s.nodes)
        for (const auto& succ : n.successors) out += "  " + id(n.name) + " -> " + id(succ) + ";\n";
    for (const auto& gs : t.global_stores) {
      for (const auto& succ : gs.source.successors) out += "  " + id(gs.source.name) + " -> " + id(succ) + ";\n";
      for (const auto& succ : gs.processor.successors) out += "  " + id(gs.processor.name) + " -> " + id(succ) + ";\n";
    }
    return;
  }
  // Only the heartbeat's topology: sub-topologies and their topics; an edge
  // where one writes the repartition topic another reads.
  for (const auto& s : t.subtopologies) {
    std::vector<std::string> l = {"Sub-topology: " + s.id};
    if (!s.source_topics.empty()) l.push_back("source topics: " + list(s.source_topics));
    if (!s.source_regex.empty()) l.push_back("source pattern: " + list(s.source_regex));
    if (!s.repartition_source_topics.empty()) l.push_back("repartition source: " + list(s.repartition_source_topics));
    if (!s.repartition_sink_topics.empty()) l.push_back("repartition sink: " + list(s.repartition_sink_topics));
    if (!s.changelog_topics.empty()) l.push_back("changelog: " + list(s.changelog_topics));
    out += "  " + id("subtopology-" + s.id) + " [label=" + dot_label(l) + ", fillcolor=\"#fef9c3\"];\n";
  }
  for (const auto& a : t.subtopologies)
    for (const auto& topic : a.repartition_sink_topics)
      for (const auto& b : t.subtopologies)
        if (std::count(b.repartition_source_topics.begin(), b.repartition_source_topics.end(), topic))
          out += "  " + id("subtopology-" + a.id) + " -> " + id("subtopology-" + b.id) + " [label=" + dot_label({topic}) + "];\n";
}

const char* kDotHead =
    "digraph topology {\n"
    "  rankdir=TB;\n"
    "  fontname=\"Helvetica\"; fontsize=11;\n"
    "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
    "  edge [color=\"#334155\"];\n";

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string short_id(const std::string& id) { return id.size() > 8 ? id.substr(0, 8) + "\u2026" : id; }

std::string member_label(const Member& m) {
  std::string client = m.client_id.empty() ? std::string("member") : m.client_id;
  if (client.size() > 22) client = client.substr(0, 21) + "\u2026";
  return client + " " + short_id(m.id);
}

std::string epoch_color(int32_t e) {
  if (e <= 0) return "#cbd5e1";
  return fmt("hsl(%d,65%%,62%%)", (e * 67) % 360);
}

// The timeline: one lane per member, epochs as coloured segments, task
// counts under them, statuses, errors and anomalies marked, rebalances as
// vertical lines.
std::string timeline_svg(const Group& g) {
  double t0 = 1e300, t1 = 0;
  auto see = [&](const At& a) { t0 = std::min(t0, a.time); t1 = std::max(t1, a.time); };
  for (const auto& [id, m] : g.members) { see(m.first_seen); see(m.last_seen); if (m.last_response) see(*m.last_response); }
  for (const auto& d : g.describes) see(d.at);
  for (const auto& d : g.deletes) see(d.at);
  for (const auto& p : g.pushes) see(p.at);
  if (t0 > t1) t0 = t1 = 0;
  if (t1 - t0 < 1) t1 = t0 + 1;
  const int left = 270, width = 1100, lane = 54, top = 34;
  const double span = t1 - t0;
  auto x = [&](double t) { return left + (t - t0) / span * (width - left - 20); };
  const int height = top + lane * static_cast<int>(g.member_order.size()) + 30;
  std::string s = fmt("<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                      width, height, width, height);
  // Time axis.
  const double step = span > 120 ? 20 : span > 60 ? 10 : span > 20 ? 5 : span > 8 ? 2 : 1;
  for (double t = std::ceil(t0 / step) * step; t <= t1; t += step) {
    s += fmt("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>", x(t), top - 6, x(t), height - 24);
    s += fmt("<text x=\"%.1f\" y=\"%d\" class=\"axis\">%g s</text>\n", x(t), height - 8, t);
  }
  for (const auto& r : g.rebalances) {
    std::string causes;
    for (const auto& c : r.causes) causes += "\n" + c;
    s += fmt("<g class=\"rebalance\"><title>%s</title><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>",
             esc(fmt("group epoch %d -> %d at %s", r.from, r.to, when(r.at).c_str()) + causes).c_str(), x(r.at.time), top - 14,
             x(r.at.time), height - 24);
    s += fmt("<text x=\"%.1f\" y=\"%d\">e%d</text></g>\n", x(r.at.time) + 2, top - 16, r.to);
  }
  int row = 0;
  for (const auto& id : g.member_order) {
    const Member& m = g.members.at(id);
    const int y = top + lane * row++;
    s += "<g class=\"lane\" data-member=\"" + esc(id) + "\">";
    s += "<title>" + esc("member " + id + (m.process_id.empty() ? "" : "\nprocess " + m.process_id) +
                         (m.rack.empty() ? "" : "\nrack " + m.rack)) + "</title>";
    s += fmt("<rect class=\"lanebg\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>", y, width, lane - 4);
    s += fmt("<text class=\"label\" x=\"6\" y=\"%d\">%s</text>", y + 18, esc(member_label(m)).c_str());
    s += fmt("<text class=\"sub\" x=\"6\" y=\"%d\">%llu heartbeats%s</text>", y + 36,
             static_cast<unsigned long long>(m.heartbeats), m.left ? ", left" : "");
    const double end_t = m.left_at ? m.left_at->time : (m.last_response ? m.last_response->time : m.last_seen.time);
    // Before the first epoch: joining.
    double start = m.first_seen.time;
    if (!m.epochs.empty() && m.epochs.front().at.time > start)
      s += fmt("<rect class=\"joining\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\"><title>joining</title></rect>", x(start), y + 6,
               std::max(1.0, x(m.epochs.front().at.time) - x(start)));
    for (size_t i = 0; i < m.epochs.size(); ++i) {
      const auto& e = m.epochs[i];
      if (e.epoch < 0) continue;
      const double a = e.at.time, b = i + 1 < m.epochs.size() ? m.epochs[i + 1].at.time : std::max(end_t, a);
      const double w = std::max(2.0, x(b) - x(a));
      s += fmt("<rect class=\"epoch\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"><title>%s</title></rect>", x(a), y + 6, w,
               epoch_color(e.epoch).c_str(), esc(fmt("epoch %d from %s", e.epoch, when(e.at).c_str())).c_str());
      if (w > 22) s += fmt("<text class=\"ep\" x=\"%.1f\" y=\"%d\">%d</text>", x(a) + 3, y + 18, e.epoch);
    }
    for (const auto& as : m.assignments) {
      s += fmt("<text class=\"tasks\" x=\"%.1f\" y=\"%d\"><title>%s</title>A%zu S%zu W%zu</text>", x(as.at.time), y + 36,
               esc(when(as.at) + " epoch " + std::to_string(as.epoch) + ": " + assignment_text(as.assignment)).c_str(),
               as.assignment.count(TaskKind::Active), as.assignment.count(TaskKind::Standby), as.assignment.count(TaskKind::Warmup));
      s += fmt("<line class=\"tick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x(as.at.time), y + 24, x(as.at.time), y + 38);
    }
    for (const auto& st : m.statuses) {
      const double cx = x(st.at.time);
      s += fmt("<path class=\"status%s\" d=\"M%.1f %d l5 8 h-10 z\"><title>%s</title></path>", st.statuses.empty() ? " cleared" : "", cx,
               y - 2, esc(when(st.at) + " status: " + statuses_text(st.statuses)).c_str());
    }
    for (const auto& e : m.errors)
      s += fmt("<circle class=\"error\" cx=\"%.1f\" cy=\"%d\" r=\"5\"><title>%s</title></circle>", x(e.at.time), y + 44,
               esc(when(e.at) + " " + e.api + ": " + e.code + (e.message.empty() ? "" : " \"" + e.message + "\"")).c_str());
    for (const auto& an : g.anomalies)
      if (an.member == id && an.at.frame)
        s += fmt("<path class=\"anomaly\" d=\"M%.1f %d l6 6 l-6 6 l-6 -6 z\"><title>%s</title></path>", x(an.at.time), y + 28,
                 esc(when(an.at) + " " + an.kind + ": " + an.detail).c_str());
    if (m.left_at)
      s += fmt("<text class=\"leave\" x=\"%.1f\" y=\"%d\">\u00d7<title>%s</title></text>", x(m.left_at->time) + 2, y + 19,
               esc("left at " + when(*m.left_at)).c_str());
    s += "</g>\n";
  }
  return s + "</svg>\n";
}

const char* kCss = R"CSS(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#0f172a;background:#f8fafc}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #cbd5e1}
h3{font-size:15px;margin:18px 0 6px} .meta{color:#475569}
section.group{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:12px 18px;margin-bottom:24px}
table{border-collapse:collapse;margin:4px 0 10px} td,th{border:1px solid #e2e8f0;padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f1f5f9} tr.hl td{background:#fef3c7}
pre{background:#f1f5f9;padding:8px;border-radius:6px;overflow:auto;font-size:12px}
svg.timeline{background:#fff;border:1px solid #e2e8f0;border-radius:6px;max-width:100%;height:auto}
svg.timeline text{font-size:11px;fill:#334155} svg.timeline .label{font-weight:600;font-size:12px}
svg.timeline .sub{fill:#64748b} svg.timeline .axis{fill:#64748b;text-anchor:middle}
svg.timeline .grid{stroke:#e2e8f0} svg.timeline .lanebg{fill:#f8fafc} svg.timeline .lane.sel .lanebg{fill:#fef3c7}
svg.timeline .lane{cursor:pointer}
svg.timeline .joining{fill:#e2e8f0} svg.timeline .epoch{stroke:#fff} svg.timeline .ep{fill:#0f172a;font-weight:600}
svg.timeline .tick{stroke:#94a3b8} svg.timeline .tasks{fill:#0f766e;font-size:10px}
svg.timeline .status{fill:#f59e0b} svg.timeline .status.cleared{fill:#a3e635}
svg.timeline .error{fill:#dc2626} svg.timeline .anomaly{fill:#7c3aed}
svg.timeline .rebalance line{stroke:#2563eb;stroke-dasharray:4 3} svg.timeline .rebalance text{fill:#2563eb;font-weight:600}
svg.timeline .leave{fill:#dc2626}
.legend span{display:inline-block;margin-right:14px;font-size:12px} .legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.graph svg{max-width:100%;height:auto;background:#fff}
.anomaly-row td:first-child{color:#7c3aed;font-weight:600}
)CSS";

// Clicking a lane highlights that member's rows in the tables below.
const char* kJs = R"JS(
document.querySelectorAll('svg.timeline .lane').forEach(function (lane) {
  lane.addEventListener('click', function () {
    var id = lane.getAttribute('data-member');
    var on = !lane.classList.contains('sel');
    document.querySelectorAll('svg.timeline .lane').forEach(function (l) { l.classList.remove('sel'); });
    document.querySelectorAll('tr[data-members]').forEach(function (tr) {
      tr.classList.toggle('hl', on && tr.getAttribute('data-members').split(' ').indexOf(id) >= 0);
    });
    if (on) lane.classList.add('sel');
  });
});
document.body.setAttribute('data-ready', '1');
)JS";

std::string row(std::initializer_list<std::string> cells, const std::string& members = "", const std::string& cls = "") {
  std::string s = "<tr";
  if (!cls.empty()) s += " class=\"" + cls + "\"";
  if (!members.empty()) s += " data-members=\"" + esc(members) + "\"";
  s += ">";
  for (const auto& c : cells) s += "<td>" + esc(c) + "</td>";
  return s + "</tr>\n";
}

}  // namespace

std::string describe_text(const Topology& t) {
  std::string out = "Topologies:\n";
  size_t n = 0;
  for (const auto& s : t.subtopologies) {
    out += "   Sub-topology: " + s.id + "\n";
    for (const auto* node : ordered(s.nodes)) describe_node(out, *node);
    if (!t.described) {
      out += "    source topics: " + list(s.source_topics) + "\n";
      if (!s.source_regex.empty()) out += "    source pattern: " + list(s.source_regex) + "\n";
      out += "    repartition source topics: " + list(s.repartition_source_topics) + "\n";
      out += "    repartition sink topics: " + list(s.repartition_sink_topics) + "\n";
      out += "    changelog topics: " + list(s.changelog_topics) + "\n";
    }
    ++n;
  }
  // Global stores take the sub-topology ids the task-generating ones leave free.
  std::set<std::string> used;
  for (const auto& s : t.subtopologies) used.insert(s.id);
  n = 0;
  for (const auto& g : t.global_stores) {
    while (used.count(std::to_string(n))) ++n;
    out += "   Sub-topology: " + std::to_string(n++) + " for global store (will not generate tasks)\n";
    describe_node(out, g.source);
    describe_node(out, g.processor);
  }
  return out;
}

std::string topology_dot(const Group& g) {
  std::string out = kDotHead;
  out += "  label=" + dot_label({"streams group " + g.id}) + "; labelloc=t;\n";
  group_dot(out, g, "");
  return out + "}\n";
}

std::string topology_dot(const Summary& s) {
  if (s.group_order.size() == 1) return topology_dot(s.groups.at(s.group_order[0]));
  std::string out = kDotHead;
  for (const auto& gid : s.group_order) {
    const Group& g = s.groups.at(gid);
    if (!g.topology.present) continue;
    out += "  subgraph " + dot_id("cluster_group_" + gid) + " {\n  label=" + dot_label({"streams group " + gid}) + ";\n";
    group_dot(out, g, gid + "/");
    out += "  }\n";
  }
  return out + "}\n";
}

bool render_svg(const std::string& dot, std::string& svg, std::string& error) {
  char path[] = "/tmp/kwire-streams-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) { error = "cannot create a temporary file"; return false; }
  bool wrote = write(fd, dot.data(), dot.size()) == static_cast<ssize_t>(dot.size());
  close(fd);
  if (!wrote) { unlink(path); error = "cannot write a temporary file"; return false; }
  std::string cmd = std::string("dot -Tsvg ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (p) {
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  }
  int status = p ? pclose(p) : -1;
  unlink(path);
  if (status != 0) {
    error = "Graphviz dot failed (is the graphviz package installed?)" + (out.empty() ? "" : ": " + out.substr(0, 300));
    return false;
  }
  size_t start = out.find("<svg");
  if (start == std::string::npos) { error = "Graphviz dot wrote no SVG"; return false; }
  svg = out.substr(start);
  return true;
}

std::string text_report(const Summary& s) {
  std::string o;
  if (s.groups.empty()) {
    o += "no streams groups in the capture (no StreamsGroupHeartbeat, StreamsGroupDescribe or topology description push)\n";
    return o;
  }
  for (const auto& gid : s.group_order) {
    const Group& g = s.groups.at(gid);
    o += "streams group " + gid + "\n";
    if (g.group_epoch < 0 && !g.deletes.empty() && g.deletes.back().error == "NONE")
      o += fmt("  deleted at frame %llu (group epoch %d before), ", static_cast<unsigned long long>(g.deletes.back().at.frame),
               g.epoch_before_delete);
    else
      o += fmt("  group epoch %d (as last seen), topology epoch %d, ", g.group_epoch, g.topology_epoch);
    o += fmt("%zu members, %zu rebalances, %zu task movements, %zu anomalies\n",
             g.member_order.size(), g.rebalances.size(), g.moves.size(), g.anomalies.size());
    for (const auto& c : g.coordinators)
      o += "  coordinator " + broker_name(s.node_ids, c.broker) +
           fmt(" (%llu heartbeats answered, frames %llu-%llu)\n", static_cast<unsigned long long>(c.answered),
               static_cast<unsigned long long>(c.first.frame), static_cast<unsigned long long>(c.last.frame));
    o += "\n  members\n";
    for (const auto& mid : g.member_order) {
      const Member& m = g.members.at(mid);
      o += "    " + mid + (m.client_id.empty() ? "" : "  client " + m.client_id) + "\n";
      std::string info;
      if (!m.process_id.empty()) info += "process " + m.process_id;
      if (!m.rack.empty()) info += (info.empty() ? "" : ", ") + std::string("rack ") + m.rack;
      if (!m.instance_id.empty()) info += (info.empty() ? "" : ", ") + std::string("instance ") + m.instance_id;
      if (!m.endpoint.empty()) info += (info.empty() ? "" : ", ") + std::string("endpoint ") + m.endpoint;
      if (!m.client_tags.empty()) {
        info += (info.empty() ? "" : ", ") + std::string("tags {");
        bool first = true;
        for (const auto& [k, v] : m.client_tags) { info += (first ? "" : ", ") + k + "=" + v; first = false; }
        info += "}";
      }
      if (!info.empty()) o += "      " + info + "\n";
      o += fmt("      %llu heartbeats, first %s, topology epoch %d, heartbeat interval %d ms",
               static_cast<unsigned long long>(m.heartbeats), when(m.first_seen).c_str(), m.topology_epoch, m.heartbeat_interval_ms);
      o += m.left_at ? ", left " + when(*m.left_at) + "\n" : "\n";
      o += "      epochs:";
      for (const auto& e : m.epochs) o += fmt(" %d@%llu(%.3fs)", e.epoch, static_cast<unsigned long long>(e.at.frame), e.at.time);
      o += m.epochs.empty() ? " (never answered)\n" : "\n";
      for (const auto& a : m.assignments)
        o += "      assigned " + when(a.at) + fmt(" epoch %d: ", a.epoch) + assignment_text(a.assignment) + "\n";
      for (const auto& st : m.statuses) o += "      status " + when(st.at) + ": " + statuses_text(st.statuses) + "\n";
      for (const auto& e : m.errors)
        o += "      error " + when(e.at) + " " + e.api + ": " + e.code + (e.message.empty() ? "" : " \"" + e.message + "\"") + "\n";
    }
    o += "\n  rebalances\n";
    if (g.rebalances.empty()) o += "    (none seen)\n";
    for (const auto& r : g.rebalances) {
      o += fmt("    %s group epoch %d -> %d (first answered to %s)\n", when(r.at).c_str(), r.from, r.to, r.by.c_str());
      if (r.causes.empty()) o += "      cause: not on the wire (a member timing out, a metadata or config change)\n";
      for (const auto& c : r.causes) o += "      cause: " + c + "\n";
    }
    o += "\n  task movements\n";
    if (g.moves.empty()) o += "    (none)\n";
    for (const auto& mv : g.moves) {
      o += "    " + when(mv.at) + " " + mv.task + " " + kind_name(mv.kind) + ": ";
      o += mv.from.empty() ? "assigned to " + mv.to + "\n" : mv.from + " -> " + mv.to + "\n";
    }
    o += "\n  topology";
    if (!g.topology.present) {
      o += ": not on the wire\n";
    } else {
      o += " (" + std::string(g.topology.described ? "description" : "heartbeat topology, no description on the wire") + " from " +
           g.topology.origin + ", " + when(g.topology.at) + fmt(", epoch %d)\n", g.topology.epoch);
      std::istringstream in(describe_text(g.topology));
      for (std::string line; std::getline(in, line);) o += "    " + line + "\n";
    }
    o += "\n  topology description pushes\n";
    if (g.pushes.empty()) o += "    (none)\n";
    for (const auto& p : g.pushes) {
      o += "    " + when(p.at) + " member " + p.member + fmt(" topology epoch %d, %zu nodes: ", p.topology_epoch, p.nodes);
      o += p.answered ? p.error + (p.message.empty() ? "" : " \"" + p.message + "\"") + " (" + when(*p.answered) + ")\n" : "no response\n";
    }
    o += "\n  describes\n";
    if (g.describes.empty()) o += "    (none)\n";
    for (const auto& d : g.describes) {
      o += "    " + when(d.at) + " " + d.error + fmt(": state %s, group epoch %d, assignment epoch %d, topology epoch %d, %zu members",
                                                   d.state.c_str(), d.group_epoch, d.assignment_epoch, d.topology_epoch, d.members);
      if (!d.description_status.empty()) o += ", description " + d.description_status;
      if (!d.assignor.empty()) o += ", assignor " + d.assignor;
      o += "\n";
    }
    o += "\n  deletes\n";
    if (g.deletes.empty()) o += "    (none)\n";
    for (const auto& d : g.deletes) o += "    " + when(d.at) + " DeleteGroups: " + d.error + (d.message.empty() ? "" : " \"" + d.message + "\"") + "\n";
    o += "\n  anomalies\n";
    if (g.anomalies.empty()) o += "    (none)\n";
    for (const auto& a : g.anomalies)
      o += "    " + (a.at.frame ? when(a.at) + " " : std::string()) + a.kind + (a.member.empty() ? "" : " member " + a.member) + ": " +
           a.detail + "\n";
    o += "\n";
  }
  return o;
}

json json_report(const Summary& s) {
  json groups = json::array();
  for (const auto& gid : s.group_order) {
    const Group& g = s.groups.at(gid);
    json members = json::array();
    for (const auto& mid : g.member_order) {
      const Member& m = g.members.at(mid);
      json epochs = json::array(), assignments = json::array(), statuses = json::array(), errors = json::array();
      for (const auto& e : m.epochs) epochs.push_back(with_at(e.at, {{"epoch", e.epoch}, {"requestEpoch", e.request_epoch}}));
      for (const auto& a : m.assignments)
        assignments.push_back(with_at(a.at, {{"epoch", a.epoch},
                                             {"active", sorted_tasks(a.assignment.tasks[0])},
                                             {"standby", sorted_tasks(a.assignment.tasks[1])},
                                             {"warmup", sorted_tasks(a.assignment.tasks[2])}}));
      for (const auto& st : m.statuses) {
        json list = json::array();
        for (const auto& [code, detail] : st.statuses) list.push_back({{"code", code}, {"name", status_name(code)}, {"detail", detail}});
        statuses.push_back(with_at(st.at, {{"statuses", list}}));
      }
      for (const auto& e : m.errors) errors.push_back(with_at(e.at, {{"api", e.api}, {"error", e.code}, {"message", e.message}}));
      members.push_back({{"memberId", m.id},
                         {"clientId", m.client_id},
                         {"processId", m.process_id},
                         {"rackId", m.rack},
                         {"instanceId", m.instance_id},
                         {"userEndpoint", m.endpoint},
                         {"clientTags", m.client_tags},
                         {"topologyEpoch", m.topology_epoch},
                         {"heartbeats", m.heartbeats},
                         {"heartbeatIntervalMs", m.heartbeat_interval_ms},
                         {"first", at_json(m.first_seen)},
                         {"left", m.left_at ? at_json(*m.left_at) : json(nullptr)},
                         {"epochs", epochs},
                         {"assignments", assignments},
                         {"statuses", statuses},
                         {"errors", errors}});
    }
    json rebalances = json::array(), moves = json::array(), pushes = json::array(), describes = json::array(),
         deletes = json::array(), anomalies = json::array();
    for (const auto& r : g.rebalances)
      rebalances.push_back(with_at(r.at, {{"from", r.from}, {"to", r.to}, {"member", r.by}, {"causes", r.causes}}));
    for (const auto& mv : g.moves)
      moves.push_back(with_at(mv.at, {{"task", mv.task}, {"kind", kind_name(mv.kind)},
                                      {"from", mv.from.empty() ? json(nullptr) : json(mv.from)}, {"to", mv.to}}));
    for (const auto& p : g.pushes)
      pushes.push_back(with_at(p.at, {{"member", p.member}, {"topologyEpoch", p.topology_epoch}, {"nodes", p.nodes},
                                      {"error", p.answered ? json(p.error) : json(nullptr)}, {"errorMessage", p.message},
                                      {"response", p.answered ? at_json(*p.answered) : json(nullptr)}}));
    for (const auto& d : g.describes)
      describes.push_back(with_at(d.at, {{"error", d.error}, {"state", d.state}, {"groupEpoch", d.group_epoch},
                                         {"assignmentEpoch", d.assignment_epoch}, {"topologyEpoch", d.topology_epoch},
                                         {"members", d.members}, {"topologyDescriptionStatus", d.description_status},
                                         {"assignorName", d.assignor}}));
    for (const auto& d : g.deletes) deletes.push_back(with_at(d.at, {{"error", d.error}, {"errorMessage", d.message}}));
    for (const auto& a : g.anomalies)
      anomalies.push_back(with_at(a.at, {{"kind", a.kind}, {"member", a.member}, {"detail", a.detail}}));
    json coordinators = json::array();
    for (const auto& c : g.coordinators) {
      const int32_t n = broker_node(s.node_ids, c.broker);
      coordinators.push_back({{"broker", c.broker}, {"nodeId", n < 0 ? json(nullptr) : json(n)},
                              {"heartbeatsAnswered", c.answered}, {"first", at_json(c.first)}, {"last", at_json(c.last)}});
    }
    groups.push_back({{"groupId", gid},
                      {"coordinators", coordinators},
                      {"groupEpoch", g.group_epoch},
                      {"topologyEpoch", g.topology_epoch},
                      {"members", members},
                      {"rebalances", rebalances},
                      {"taskMoves", moves},
                      {"topology", topology_json(g.topology)},
                      {"pushes", pushes},
                      {"describes", describes},
                      {"deletes", deletes},
                      {"anomalies", anomalies}});
  }
  return {{"groups", groups}, {"messages", s.frames}, {"streamsMessages", s.streams_frames}, {"malformed", s.malformed}};
}

std::string html_report(const Summary& s, const std::string& title) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>kwire streams: " + esc(title) +
                  "</title>\n<style>" + kCss + "</style></head><body>\n";
  h += "<h1>Kafka Streams groups on the wire</h1>\n<div class=\"meta\">" + esc(title) +
       fmt(" &middot; %llu Kafka messages, %llu of the streams-group APIs &middot; %zu groups</div>\n",
           static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.streams_frames), s.groups.size());
  if (s.groups.empty()) h += "<p>No streams groups in this capture.</p>\n";
  for (const auto& gid : s.group_order) {
    const Group& g = s.groups.at(gid);
    h += "<section class=\"group\" data-group=\"" + esc(gid) + "\">\n<h2>streams group " + esc(gid) + "</h2>\n";
    h += fmt("<div class=\"meta\">group epoch %d (last seen) &middot; topology epoch %d &middot; %zu members &middot; %zu rebalances "
             "&middot; %zu task movements &middot; %zu anomalies",
             g.group_epoch, g.topology_epoch, g.member_order.size(), g.rebalances.size(), g.moves.size(), g.anomalies.size());
    for (const auto& c : g.coordinators)
      h += " &middot; coordinator " + esc(broker_name(s.node_ids, c.broker)) +
           fmt(" (frames %llu-%llu)", static_cast<unsigned long long>(c.first.frame), static_cast<unsigned long long>(c.last.frame));
    h += "</div>\n";
    h += "<h3>Timeline</h3>\n<div class=\"legend\"><span><i style=\"background:hsl(67,65%,62%)\"></i>member epoch</span>"
         "<span><i style=\"background:#e2e8f0\"></i>joining</span><span>A/S/W: active/standby/warm-up tasks handed out</span>"
         "<span><i style=\"background:#f59e0b\"></i>status</span><span><i style=\"background:#dc2626;border-radius:5px\"></i>error</span>"
         "<span><i style=\"background:#7c3aed\"></i>anomaly</span><span><i style=\"background:#2563eb\"></i>rebalance (group epoch)</span>"
         "</div>\n";
    h += timeline_svg(g);
    h += "<h3>Members</h3>\n<table><tr><th>member</th><th>client</th><th>process</th><th>rack / tags</th><th>epochs (frame)</th><th>last assignment</th></tr>\n";
    for (const auto& mid : g.member_order) {
      const Member& m = g.members.at(mid);
      std::string epochs, tags = m.rack;
      for (const auto& e : m.epochs) epochs += fmt("%s%d (%llu)", epochs.empty() ? "" : " \u2192 ", e.epoch, static_cast<unsigned long long>(e.at.frame));
      for (const auto& [k, v] : m.client_tags) tags += (tags.empty() ? "" : " ") + k + "=" + v;
      h += row({mid, m.client_id, m.process_id, tags, epochs, m.assignments.empty() ? "" : assignment_text(m.current)}, mid);
    }
    h += "</table>\n<h3>Rebalances</h3>\n<table><tr><th>frame</th><th>time</th><th>group epoch</th><th>cause (as the wire shows it)</th></tr>\n";
    for (const auto& r : g.rebalances) {
      std::string causes;
      for (const auto& c : r.causes) causes += (causes.empty() ? "" : "; ") + c;
      if (causes.empty()) causes = "not on the wire";
      h += row({std::to_string(r.at.frame), fmt("%.3f", r.at.time), fmt("%d \u2192 %d", r.from, r.to), causes}, r.by);
    }
    h += "</table>\n<h3>Task movements</h3>\n<table><tr><th>frame</th><th>time</th><th>task</th><th>kind</th><th>from</th><th>to</th></tr>\n";
    for (const auto& mv : g.moves)
      h += row({std::to_string(mv.at.frame), fmt("%.3f", mv.at.time), mv.task, kind_name(mv.kind), mv.from.empty() ? "-" : mv.from, mv.to},
               mv.from + " " + mv.to);
    h += "</table>\n<h3>Anomalies</h3>\n<table><tr><th>kind</th><th>frame</th><th>member</th><th>what</th></tr>\n";
    if (g.anomalies.empty()) h += "<tr><td colspan=\"4\">none</td></tr>\n";
    for (const auto& a : g.anomalies)
      h += row({a.kind, a.at.frame ? std::to_string(a.at.frame) : "", a.member, a.detail}, a.member, "anomaly-row");
    h += "</table>\n<h3>Topology</h3>\n";
    if (!g.topology.present) {
      h += "<p>No topology on the wire.</p>\n";
    } else {
      h += "<div class=\"meta\">" +
           esc(std::string(g.topology.described ? "Topology description" : "Heartbeat topology (no description on the wire)") + " from " +
               g.topology.origin + ", " + when(g.topology.at) + fmt(", topology epoch %d", g.topology.epoch)) +
           "</div>\n";
      std::string svg, error;
      if (render_svg(topology_dot(g), svg, error)) h += "<div class=\"graph\">" + svg + "</div>\n";
      else h += "<p>" + esc(error) + "</p>\n";
      h += "<pre>" + esc(describe_text(g.topology)) + "</pre>\n";
    }
    h += "<h3>Topology description pushes, describes, deletes</h3>\n<table><tr><th>frame</th><th>time</th><th>what</th><th>outcome</th></tr>\n";
    for (const auto& p : g.pushes)
      h += row({std::to_string(p.at.frame), fmt("%.3f", p.at.time), fmt("push, topology epoch %d, %zu nodes", p.topology_epoch, p.nodes),
                p.answered ? p.error + (p.message.empty() ? "" : " \"" + p.message + "\"") : "no response"},
               p.member);
    for (const auto& d : g.describes)
      h += row({std::to_string(d.at.frame), fmt("%.3f", d.at.time), "describe",
                d.error + fmt(": %s, group epoch %d, %zu members", d.state.c_str(), d.group_epoch, d.members) +
                    (d.description_status.empty() ? "" : ", description " + d.description_status)});
    for (const auto& d : g.deletes)
      h += row({std::to_string(d.at.frame), fmt("%.3f", d.at.time), "DeleteGroups", d.error + (d.message.empty() ? "" : " \"" + d.message + "\"")});
    h += "</table>\n</section>\n";
  }
  h += "<script>" + std::string(kJs) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace kwire::streams
