#include "replay/compare.hpp"

#include <algorithm>

#include "dissector/output/output.hpp"
#include "dissector/protocol/codes.hpp"

namespace kwire::replay {

namespace {

// Walks the recorded and the live answer side by side and reports where they
// differ. At each field it asks the parts what the difference is: timing of a
// member's heartbeats (compare_roles), the target's own value
// (compare_ignore), a consequence of the clusters' sizes or no difference at
// all (compare_shape), a leader the target does not have (compare_nodes);
// whatever is left is a regression.
class Walker {
 public:
  Walker(const ProgramSet& ps, const Frame& rec, const Frame& live, const CompareOptions& opts,
         std::vector<Difference>& out, StickyMemory* memory, const std::string& member)
      : ps_(ps), rec_(rec), live_(live), opts_(opts), out_(out), memory_(memory), member_(member),
        api_(live.program ? live.program->api_name : std::string_view()),
        sizes_{opts.recorded_brokers, opts.target_brokers} {}

  void run() {
    if (!rec_.body || !live_.body) return;
    Step s(path_, "body");
    structure(rec_.body, live_.body);
  }

 private:
  using Step = PathCursor::Step;

  void structure(uint32_t r, uint32_t l) {
    // Fields by descriptor (unknown tagged fields by tag): tagged fields may be
    // present on one side only.
    std::vector<uint32_t> lc;
    for (uint32_t c : Children(live_, l)) lc.push_back(c);
    std::vector<bool> used(lc.size(), false);
    for (uint32_t c : Children(rec_, r)) {
      const Node& rn = rec_.nodes[c];
      size_t k = 0;
      for (; k < lc.size(); ++k) {
        const Node& ln = live_.nodes[lc[k]];
        if (!used[k] && ln.desc == rn.desc && (rn.desc != kDescUnknownTag || ln.tag == rn.tag)) break;
      }
      if (k < lc.size() && same_subtree(rec_, c, live_, lc[k]) && !role_field(c)) { used[k] = true; continue; }
      Step s(path_, field_name(ps_, rec_, c));
      if (k == lc.size()) { diff(json_value(ps_, rec_, c), "\"(absent)\""); continue; }
      used[k] = true;
      node(c, lc[k]);
    }
    for (size_t k = 0; k < lc.size(); ++k)
      if (!used[k]) {
        Step s(path_, field_name(ps_, live_, lc[k]));
        diff("\"(absent)\"", json_value(ps_, live_, lc[k]));
      }
  }

  // A field compared by a by-role rule must be visited even when equal: it updates the memory.
  bool role_field(uint32_t c) const {
    if (!memory_ || rec_.nodes[c].parent != rec_.body) return false;
    const std::string path = "body." + std::string(ps_.field(rec_.nodes[c].desc).json_name);
    return listed(sticky_fields(), api_, path) || listed(ask_fields(), api_, path);
  }

  void node(uint32_t r, uint32_t l) {
    const Node& rn = rec_.nodes[r];
    const Node& ln = live_.nodes[l];
    if (memory_ && listed(ask_fields(), api_, path_.text())) {
      const bool a = rn.type == WireType::Bool && rn.v.i, b = ln.type == WireType::Bool && ln.v.i;
      role(match_ask(*memory_, member_key(member_, api_, path_.text()), a, b));
      return;
    }
    if (memory_ && listed(sticky_fields(), api_, path_.text())) {
      auto value = [&](const Frame& f, uint32_t i) {
        return f.nodes[i].is_null() ? std::nullopt : std::optional<std::string>(canonical_json(ps_, f, i, api_));
      };
      role(match_sticky(*memory_, member_key(member_, api_, path_.text()), value(rec_, r), value(live_, l),
                        timer_pending(ps_, live_, api_)));
      return;
    }
    if (rn.is_null() || ln.is_null() || rn.type != ln.type) {
      if (rn.is_null() != ln.is_null() || rn.type != ln.type) diff(json_value(ps_, rec_, r), json_value(ps_, live_, l));
      return;
    }
    switch (rn.type) {
      case WireType::Struct: structure(r, l); return;
      case WireType::Array: case WireType::Records: array(r, l); return;
      default: {
        if (leader_check(r, l)) return;
        if (same_leaf(rec_, r, live_, l)) return;
        std::string a = json_value(ps_, rec_, r), b = json_value(ps_, live_, l);
        if (a == b) return;
        if (host_config_value(r, l, a, b)) return;
        if (replica_config_value(r, l, a, b)) return;
        if (config_source(r, l, a, b)) return;
        if (is_integer(rn.type) && run_time(api_, path_.segments(), rn.v.i, ln.v.i, opts_.run_from_ms, opts_.run_to_ms)) {
          report(std::move(a), std::move(b), std::string(kWallClockRule));
          return;
        }
        if (path_.last() == "replicationFactor" && is_integer(rn.type) && sizes_.replica_count(rn.v.i, ln.v.i)) {
          report(std::move(a), std::move(b), sizes_.replicas_why());
          return;
        }
        diff(a, b);
        if (rn.desc != kDescUnknownTag && is_error_code_field(ps_.field(rn.desc))) {
          out_.back().recorded_name = std::string(error_name(rn.v.i));
          out_.back().replayed_name = std::string(error_name(ln.v.i));
        }
      }
    }
  }

  // What a by-role rule made of the field: nothing, timing (ignored) or a difference.
  void role(RoleVerdict v) {
    if (!v.differs) return;
    if (!v.timing.empty()) report(std::move(v.recorded), std::move(v.live), std::move(v.timing));
    else diff(std::move(v.recorded), std::move(v.live));
  }

  // A DescribeConfigs value of one of host_configs(): handled here (true) or
  // compared as any value (false).
  bool host_config_value(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    const std::string& path = path_.text();
    if (api_ != "DescribeConfigs" || path.size() < 6 || path.compare(path.size() - 6, 6, ".value") != 0) return false;
    const Node& rn = rec_.nodes[r];
    if (rn.type != WireType::String || rn.is_null() || live_.nodes[l].is_null()) return false;
    std::string_view name = config_name(ps_, rec_, rn.parent);
    const HostConfig* h = host_config(name);
    if (!h) return false;
    if (!h->endpoints) {
      report(a, b, "DescribeConfigs " + std::string(h->name) + ": " + std::string(h->why));
      return true;
    }
    // The resource (a broker) both values belong to: that of a config, or
    // of one of its synonyms.
    const uint32_t rres = result_of(rec_, r), lres = result_of(live_, l);
    std::map<uint16_t, uint16_t> ports = opts_.endpoints ? opts_.endpoints->ports() : std::map<uint16_t, uint16_t>{};
    listener_ports(resource_configs(ps_, rec_, rres), resource_configs(ps_, live_, lres), ports);
    static const EndpointMap none;
    if (!endpoints_match(rn.str(), live_.nodes[l].str(), opts_.endpoints ? *opts_.endpoints : none, ports)) {
      // The controller quorum of a cluster of another size lists another
      // number of controllers.
      const size_t rc = parse_endpoints(rn.str()).size(), lc = parse_endpoints(live_.nodes[l].str()).size();
      if (name.starts_with("controller.quorum.") && sizes_.quorum(rc, lc)) {
        report(a, b, sizes_.quorum_why(name, rc, lc));
        return true;
      }
      return false;  // compared as any value: a regression
    }
    report(a, b, "DescribeConfigs " + std::string(h->name) + ": " + std::string(h->why) +
                     " (recorded broker addresses mapped to the target's)");
    return true;
  }

  // A DescribeConfigs value that counts replicas (a replication factor, a
  // minimum in sync) and follows from the clusters' sizes: a shape difference
  // (true).
  bool replica_config_value(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || path_.last() != "value") return false;
    const Node& rn = rec_.nodes[r];
    const Node& ln = live_.nodes[l];
    if (rn.type != WireType::String || rn.is_null() || ln.is_null()) return false;
    return replica_counts(config_name(ps_, rec_, rn.parent), rn, ln, a, b);
  }
  // Config `name`'s values rv and lv as replica counts that differ with the
  // clusters' sizes: a shape difference (true).
  bool replica_counts(std::string_view name, const Node& rv, const Node& lv, const std::string& a, const std::string& b) {
    int64_t rc = 0, lc = 0;
    if (!replica_config(name) || !parse_count(rv.str(), rc) || !parse_count(lv.str(), lc) || !sizes_.config_cap(rc, lc))
      return false;
    report(a, b, sizes_.replica_config_why(name));
    return true;
  }

  // A DescribeConfigs config source that differs where the value is the same
  // (a default written out in one broker's properties, left out in the
  // other's): ignored (true).
  bool config_source(uint32_t r, uint32_t l, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || path_.last() != "configSource") return false;
    const Node* rv = config_field(ps_, rec_, rec_.nodes[r].parent, "Value");
    const Node* lv = config_field(ps_, live_, live_.nodes[l].parent, "Value");
    if (!rv || !lv || rv->is_null() || lv->is_null()) return false;
    return value_source(config_name(ps_, rec_, rec_.nodes[r].parent), *rv, *lv, a, b);
  }
  // A difference in where config `name`'s value comes from (its source, a
  // synonym): ignored where the values rv and lv are the same, a shape
  // difference where they are replica counts that differ with the shape (true);
  // else a difference of its own (false).
  bool value_source(std::string_view name, const Node& rv, const Node& lv, const std::string& a, const std::string& b) {
    if (rv.str() == lv.str()) {
      report(a, b, "DescribeConfigs " + std::string(name) +
                       ": the same value from another source (a default written out, or left out)");
      return true;
    }
    return replica_counts(name, rv, lv, a, b);
  }
  // A DescribeConfigs synonym (element `el` of frame `f`, under the synonyms
  // arrays r and l) that one side lists and the other not: a source that holds
  // its config's own value, where the config has the same value on both sides
  // (ignored) or values that differ with the shape (a shape difference). True
  // when handled.
  bool config_synonym(uint32_t r, uint32_t l, const Frame& f, uint32_t el, const std::string& a, const std::string& b) {
    if (api_ != "DescribeConfigs" || path_.last() != "synonyms" || f.nodes[el].type != WireType::Struct) return false;
    const Node* rv = config_field(ps_, rec_, rec_.nodes[r].parent, "Value");
    const Node* lv = config_field(ps_, live_, live_.nodes[l].parent, "Value");
    const Node* sv = config_field(ps_, f, el, "Value");
    const Node* own = &f == &rec_ ? rv : lv;
    if (!rv || !lv || !sv || rv->is_null() || lv->is_null() || sv->is_null() || sv->str() != own->str()) return false;
    return value_source(config_name(ps_, rec_, rec_.nodes[r].parent), *rv, *lv, a, b);
  }

  void array(uint32_t r, uint32_t l) {
    std::vector<uint32_t> re, le;
    for (uint32_t c : Children(rec_, r)) if (!timer_element(ps_, rec_, c, api_, path_.text())) re.push_back(c);
    for (uint32_t c : Children(live_, l)) if (!timer_element(ps_, live_, c, api_, path_.text())) le.push_back(c);
    const bool structs = (!re.empty() && rec_.nodes[re[0]].type == WireType::Struct) ||
                         (!le.empty() && live_.nodes[le[0]].type == WireType::Struct);
    auto values = [&](const Frame& f, const std::vector<uint32_t>& els) {
      std::vector<std::string> v;
      for (uint32_t c : els) v.push_back(json_value(ps_, f, c));
      return v;
    };
    // Node ids are the target's, but how many replicas a partition has is not:
    // compared as a count (or a shape difference).
    if (!structs && re.size() != le.size() && (path_.last() == "replicaNodes" || path_.last() == "isrNodes")) {
      const std::string a = json_list(values(rec_, re)), b = json_list(values(live_, le));
      if (sizes_.replica_count(static_cast<int64_t>(re.size()), static_cast<int64_t>(le.size())))
        report(a, b, sizes_.replicas_why());
      else
        out_.push_back({path_.text(), a, b,
                        std::to_string(re.size()) + " replicas recorded, " + std::to_string(le.size()) + " replayed", false});
      return;
    }
    if (structs && path_.last() == "brokers" && sizes_.broker_list(re.size(), le.size())) {
      auto brokers = [](size_t n) { return '"' + std::to_string(n) + (n == 1 ? " broker\"" : " brokers\""); };
      report(brokers(re.size()), brokers(le.size()), sizes_.brokers_why());
      return;
    }
    if (!structs && unordered_values(api_, path_.segments())) {
      // A set: the same values in any order are equal; else the sorted lists differ.
      std::vector<std::string> a = values(rec_, re), b = values(live_, le);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) diff(json_list(a), json_list(b));
      return;
    }
    if (!structs) {
      if (re.size() != le.size()) diff('"' + std::to_string(re.size()) + " elements\"", '"' + std::to_string(le.size()) + " elements\"");
      for (size_t i = 0; i < std::min(re.size(), le.size()); ++i) {
        Step s(path_, "[" + std::to_string(i) + "]", true);
        node(re[i], le[i]);
      }
      return;
    }
    // Equal element by element (the common case): nothing to pair.
    if (re.size() == le.size()) {
      bool all = true;
      for (size_t i = 0; i < re.size() && all; ++i) all = same_subtree(rec_, re[i], live_, le[i]);
      if (all) return;
    }
    std::vector<std::string> rj(re.size()), lj(le.size()), rid(re.size()), lid(le.size());
    for (size_t i = 0; i < re.size(); ++i) subtree_json(ps_, rec_, re[i], rj[i]), rid[i] = element_identity(ps_, rec_, re[i]);
    for (size_t i = 0; i < le.size(); ++i) subtree_json(ps_, live_, le[i], lj[i]), lid[i] = element_identity(ps_, live_, le[i]);
    std::vector<bool> taken;
    const std::vector<int64_t> pair = pair_elements(rj, lj, rid, lid, taken);
    for (size_t i = 0; i < re.size(); ++i) {
      Step s(path_, "[" + std::to_string(i) + "]", true);
      if (pair[i] < 0 && config_synonym(r, l, rec_, re[i], rj[i], "\"(absent)\"")) continue;
      if (pair[i] < 0) { presence(rj[i], "\"(absent)\""); continue; }
      if (rj[i] != lj[static_cast<size_t>(pair[i])]) node(re[i], le[static_cast<size_t>(pair[i])]);
    }
    for (size_t i = 0; i < le.size(); ++i) {
      if (taken[i]) continue;
      Step s(path_, "[+" + std::to_string(i) + "]", true);
      if (config_synonym(r, l, live_, le[i], "\"(absent)\"", lj[i])) continue;
      presence("\"(absent)\"", lj[i]);
    }
  }

  // A partition's leader that is none of the target's brokers: a regression,
  // whatever the capture's id. True when reported.
  bool leader_check(uint32_t r, uint32_t l) {
    const Node& ln = live_.nodes[l];
    if (!is_integer(ln.type) || !foreign_leader(api_, path_.last(), ln.v.i, opts_.target_nodes)) return false;
    out_.push_back({path_.text(), json_value(ps_, rec_, r), json_value(ps_, live_, l),
                    "leader " + std::to_string(ln.v.i) + " is none of the target's brokers", false});
    return true;
  }

  // An element one side lists and the other does not.
  void presence(std::string recorded, std::string replayed) {
    if (const IgnoreRule* rule = presence_rule(opts_.ignore, api_, path_.segments()))
      report(std::move(recorded), std::move(replayed), rule->pattern.text);
    else
      diff(std::move(recorded), std::move(replayed));
  }

  // A difference that a rule explains: reported, and ignored.
  void report(std::string recorded, std::string replayed, std::string why) {
    out_.push_back({path_.text(), std::move(recorded), std::move(replayed), std::move(why), true});
  }

  // A difference no rule of the walk explains: ignored only where an ignore rule covers it.
  void diff(std::string recorded, std::string replayed) {
    Difference d;
    d.path = path_.text();
    d.recorded = std::move(recorded);
    d.replayed = std::move(replayed);
    if (const IgnoreRule* rule = value_rule(opts_.ignore, api_, path_.segments())) {
      d.ignored = true;
      d.rule = rule->pattern.text;
    }
    out_.push_back(std::move(d));
  }

  const ProgramSet& ps_;
  const Frame& rec_;
  const Frame& live_;
  const CompareOptions& opts_;
  std::vector<Difference>& out_;
  StickyMemory* memory_;
  const std::string& member_;
  std::string_view api_;
  ClusterSizes sizes_;
  PathCursor path_;
};

std::string unquoted(const std::string& literal) {
  if (literal.size() >= 2 && literal.front() == '"') return literal.substr(1, literal.size() - 2);
  return literal;
}

}  // namespace

void check_expectations(const ProgramSet& ps, const Frame& live, const std::vector<ExpectRule>& expect,
                        std::vector<Difference>& out) {
  if (expect.empty() || !live.body || !live.program) return;
  const std::string_view api = live.program->api_name;
  for (const ExpectRule& e : expect) {
    if (!e.pattern.api.empty() && e.pattern.api != api) continue;
    const bool indexed = e.path.find('[') != std::string::npos;
    bool seen = false;
    std::string path = "body";
    std::vector<std::string> segs{"body"};
    each_path(ps, live, live.body, path, segs, [&](uint32_t c, const std::string& p, const std::vector<std::string>& s) {
      bool hit = indexed ? p == e.path : e.pattern.matches(api, std::vector<std::string_view>(s.begin(), s.end()));
      if (!hit) return;
      seen = true;
      std::string got = json_value(ps, live, c);
      bool ok = unquoted(got) == e.value;
      const FieldDesc& d = ps.field(live.nodes[c].desc);
      if (!ok && is_error_code_field(d)) ok = error_name(live.nodes[c].v.i) == e.value;
      if (!ok) {
        TextBuffer t;
        json_string(t, e.value);
        out.push_back({p, t.str(), got, "expect " + e.pattern.text + "=" + e.value, false});
      }
    });
    if (!seen && !e.pattern.api.empty()) {
      TextBuffer t;
      json_string(t, e.value);
      out.push_back({e.path, t.str(), "\"(absent)\"", "expect " + e.pattern.text + "=" + e.value, false});
    }
  }
}

void compare(const ProgramSet& ps, const Frame& recorded, const Frame& live, const CompareOptions& opts,
             std::vector<Difference>& out, StickyMemory* memory, const std::string& member) {
  Walker(ps, recorded, live, opts, out, memory, member).run();
  check_target_nodes(ps, live, opts.target_nodes, opts.target_endpoints, out);
  check_expectations(ps, live, opts.expect, out);
}

}  // namespace kwire::replay
