#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <climits>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "dissector/filter/filter.hpp"
#include "replay/concurrency.hpp"
#include "replay/engine.hpp"
#include "replay/recording.hpp"
#include "replay/report.hpp"
#include "replay/script.hpp"
#include "replay/state.hpp"

namespace kwire::cli {

namespace {

// --sasl-plain/--sasl-scram-256/--sasl-scram-512 USER:PASSWORD (USER alone:
// the password from $KWIRE_SASL_PASSWORD, kept out of the process list);
// --sasl-oauthbearer TOKEN or @FILE.
bool parse_sasl_login(const std::string& option, const std::string& v, replay::SaslLogin& out, std::string& error) {
  if (option == "--sasl-oauthbearer") {
    out.mechanism = "OAUTHBEARER";
    out.token = v;
    if (v.starts_with("@")) {
      std::ifstream f(v.substr(1));
      if (!f || !std::getline(f, out.token)) { error = option + ": cannot read a token from " + v.substr(1); return false; }
    }
    while (!out.token.empty() && std::isspace(static_cast<unsigned char>(out.token.back()))) out.token.pop_back();
    if (out.token.empty()) { error = option + " needs a token (TOKEN or @FILE)"; return false; }
    return true;
  }
  out.mechanism = option == "--sasl-plain" ? "PLAIN" : option == "--sasl-scram-256" ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
  const size_t c = v.find(':');
  out.user = v.substr(0, c);
  if (c != std::string::npos) {
    out.password = v.substr(c + 1);
  } else if (const char* p = getenv("KWIRE_SASL_PASSWORD")) {
    out.password = p;
  } else {
    error = option + " needs USER:PASSWORD (or USER with the password in $KWIRE_SASL_PASSWORD)";
    return false;
  }
  if (out.user.empty()) { error = option + ": the user name is empty"; return false; }
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

void list_rules() {
  std::cout << "Values learned from the target's responses and substituted into later requests\n"
               "(and into recorded responses before they are compared):\n";
  for (const auto& r : replay::state_rules()) {
    const char* scope = r.scope == replay::Scope::Member ? "per group member"
                        : r.scope == replay::Scope::Producer ? "per producer"
                        : r.scope == replay::Scope::Connection ? "per connection" : "capture-wide";
    std::cout << "  " << r.name << " (" << scope << ")\n    learned from:";
    for (auto l : r.learn) std::cout << " " << l;
    std::cout << "\n    written into request fields:";
    for (auto f : r.fields) std::cout << " " << f;
    std::cout << "\n";
  }
  std::cout << "  topic id (capture-wide, by topic name)\n"
               "    learned from: every response struct with a topic name and a TopicId, and a\n"
               "    Metadata request of kwire's own at the start\n"
               "    written into request fields: TopicId (Uuid)\n"
               "  followed by value: a string field of any name (JoinGroup's leader, member lists)\n"
               "    holding a learned capture-wide value of at least "
            << replay::kFollowMinLength << " characters gets the live one\n"
               "  renames: --rename-group prefixes strings of entity groupId, --rename-topic of topicName\n"
               "  correlation ids: renumbered per connection\n\n"
               "Differences ignored by default (--no-default-ignores compares them; --ignore adds):\n";
  for (const auto& r : replay::default_ignore_rules())
    std::cout << "  " << r.pattern.text << std::string(r.pattern.text.size() < 46 ? 46 - r.pattern.text.size() : 1, ' ')
              << r.why << (r.presence_only ? " (elements one side lists only)" : "") << "\n";
  std::cout << "  DescribeConfigs values of configs that describe the host:\n";
  for (const auto& h : replay::host_configs())
    std::cout << "    " << h.name << std::string(h.name.size() < 44 ? 44 - h.name.size() : 1, ' ') << h.why
              << (h.endpoints ? " (addresses mapped, then compared)" : "") << "\n";
  std::cout << "    endpoint values: a recorded broker's HOST:PORT becomes the target's it maps to\n"
               "      (--target/--map, and node ids of Metadata/DescribeCluster answers), exactly or\n"
               "      by its port alone; the port of a listener no session reached (the controller's,\n"
               "      a PLAINTEXT listener beside the SSL one used) becomes the port the target's\n"
               "      listeners give the same name, if no other recorded address maps there; then\n"
               "      compared endpoint by endpoint (host: the mapped one or the one recorded); an\n"
               "      added, removed or renamed listener, another protocol, or a port that maps to\n"
               "      nothing stays a difference\n"
               "\nRaces (outcome \"race\", not a regression; the exit status ignores them): a\n"
               "difference only in these fields, on a partition that another session's write was\n"
               "racing with (their recorded request/response windows overlap, so the capture does\n"
               "not fix their order, or the target got them in the other order):\n";
  auto print_races = [](const std::vector<replay::RaceField>& fields) {
    for (const auto& r : fields) std::cout << "  " << r.pattern.text << "\n    " << r.why << "\n";
  };
  print_races(replay::race_fields());
  std::cout << "  writes that race:";
  for (auto w : replay::partition_writers()) std::cout << " " << w;
  std::cout << "\nand on a classic group, a difference only in these fields, one of them an error\n"
               "code REBALANCE_IN_PROGRESS on one side only, where another member's join or leave\n"
               "raced with it (a rebalance began before or after the answer):\n";
  print_races(replay::group_race_fields());
  std::cout << "  requests that start a rebalance:";
  for (auto w : replay::group_changers()) std::cout << " " << w;
  std::cout << "\n\nReads that can lag an admin write (";
  bool first = true;
  for (auto w : replay::admin_writes()) std::cout << (first ? "" : ", ") << w, first = false;
  std::cout << ") of the replay: when every\n"
               "difference lies under a topic such a write named in the last "
            << replay::kAdminWriteVisibleUs / 1000000 << " s, the read is sent again\n"
               "every " << replay::kConvergeStepUs / 1000 << " ms for up to " << replay::kConvergeForUs / 1000000
            << " s and its last answer compared:\n";
  for (const auto& r : replay::lagging_reads())
    std::cout << "  " << r.api << std::string(r.api.size() < 44 ? 44 - r.api.size() : 1, ' ') << r.why << "\n";
  std::cout << "\nCompared without order:\n"
               "  every array of structs: elements pair by the spec's map key (\"mapKey\": true),\n"
               "    else by their topic, partition, group, member or subtopology fields\n"
               "  sticky heartbeat assignments (below): as sets, at every level\n"
               "  arrays of values that are sets:\n";
  for (const auto& u : replay::unordered_arrays())
    std::cout << "    " << u.pattern.text << std::string(u.pattern.text.size() < 44 ? 44 - u.pattern.text.size() : 1, ' ')
              << u.why << "\n";
  std::cout << "\nCompared by effective value (null keeps the member's last one; one heartbeat\n"
               "earlier or later is timing):\n";
  for (const auto& f : replay::sticky_fields()) std::cout << "  " << f.api << ":" << f.path << "\n";
  std::cout << "\nCompared as a member's sequence of asks, at whatever heartbeat (the target's\n"
               "back-off has jitter; an ask the capture never shows is a regression):\n";
  for (const auto& f : replay::ask_fields()) std::cout << "  " << f.api << ":" << f.path << "\n";
}

// A number of seconds: above 0, or 0 too when zero_ok.
Option seconds(std::vector<std::string> names, std::string arg, std::string help, bool zero_ok, double& into) {
  const std::string first = names.front();
  return value(std::move(names), std::move(arg), std::move(help),
               [first, zero_ok, &into](const std::string& v, std::string& error) {
                 double s = -1;
                 size_t used = 0;
                 try {
                   s = std::stod(v, &used);
                 } catch (...) {
                 }
                 if (used != v.size() || !(zero_ok ? s >= 0 : s > 0)) {
                   error = first + (zero_ok ? " needs a number of seconds (0: no bound), not "
                                            : " needs a positive number of seconds, not ") + v;
                   return false;
                 }
                 into = s;
                 return true;
               });
}

struct ReplayArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string file, report_json, junit, script_file;
  replay::ReplayOptions o;
  SessionOptions session;
  CaptureOptions capture;
  bool have_target = false, default_ignores = true, quiet = false, list_rules = false;
  double budget = -1;
  std::vector<replay::IgnoreRule> extra_ignores;
  std::shared_ptr<const filter::Filter> display_filter;
};

Command replay_table(ReplayArgs& a) {
  replay::ReplayOptions& o = a.o;
  auto text = [](std::string& into) {
    return [&into](const std::string& v, std::string&) { into = v; return true; };
  };
  auto tls_file = [&o](std::string& into) {
    return [&o, &into](const std::string& v, std::string&) {
      o.tls.enabled = true;
      into = v;
      return true;
    };
  };
  auto sasl = [&o](const std::string& option) {
    return [&o, option](const std::string& v, std::string& error) {
      replay::SaslLogin login;
      if (!parse_sasl_login(option, v, login, error)) return false;
      if (o.login_for(login.mechanism)) {
        error = option + " is given twice";
        return false;
      }
      o.sasl.push_back(std::move(login));
      return true;
    };
  };
  Command c;
  c.name = "replay";
  c.brief = "replay -r FILE --target HOST:PORT";
  c.summary = "re-send the capture's client sessions to a broker, compare the answers";
  c.usage = {{"kwire replay -r CAPTURE --target HOST:PORT [options]", ""}};
  c.description = {
      "Re-sends the client sessions of CAPTURE to a broker under test, one connection per recorded connection, "
      "substituting what the broker hands out (member epochs, member ids, producer ids and epochs, fetch sessions, "
      "topic ids), compares every response with the recorded one field by field, and reports the differences."};
  c.options = {
      value({"-r"}, "FILE", "pcap or pcapng capture (- reads standard input)", text(a.file), ValueKind::File),
      value({"--target"}, "[PROTOCOL://]HOST:PORT[,...]",
            "the broker or cluster under test: one or more bootstrap brokers, on one listener or several "
            "(repeatable). Each recorded broker's sessions go to the target's broker of the same node id, on the "
            "target listener of the recorded one's security protocol (TLS: recorded over TLS; SASL: logged in); "
            "PROTOCOL (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) says a listener's, else TLS is --tls's and SASL "
            "what the listener answers to a SaslHandshake",
            [&a](const std::string& v, std::string& error) {
              size_t from = 0;
              while (from <= v.size()) {
                const size_t comma = std::min(v.find(',', from), v.size());
                std::string protocol;
                replay::HostPort hp;
                if (!replay::parse_target(v.substr(from, comma - from), protocol, hp, error)) {
                  error = "--target: " + error;
                  return false;
                }
                if (a.o.targets.empty()) a.o.target = hp;
                a.o.targets.push_back(hp);
                if (!protocol.empty()) a.o.protocols[hp.str()] = protocol;
                from = comma + 1;
              }
              a.have_target = true;
              return true;
            }),
      value({"--map"}, "ADDR:PORT=[PROTOCOL://]HOST:PORT",
            "send what went to recorded broker ADDR:PORT to HOST:PORT instead (repeatable); kwire connects to no "
            "other address",
            [&o](const std::string& v, std::string& error) {
              const auto eq = v.find('=');
              replay::HostPort from, to;
              std::string protocol;
              if (eq == std::string::npos) {
                error = "--map needs ADDR:PORT=HOST:PORT, not " + v;
                return false;
              }
              if (!replay::parse_host_port(v.substr(0, eq), from, error) ||
                  !replay::parse_target(v.substr(eq + 1), protocol, to, error)) {
                error = "--map " + v + ": " + error;
                return false;
              }
              o.map[from.str()] = to;
              if (!protocol.empty()) o.protocols[to.str()] = protocol;
              return true;
            }),
      value({"-p"}, "PORTS", "Kafka ports of the capture (default: found from the traffic)",
            [&a](const std::string& v, std::string& error) { return parse_ports(v, a.session.ports, error); }),
      value({"--tls-keylog"}, "FILE",
            "TLS key log to read sessions recorded over TLS from their decrypted content (a pcapng file's own "
            "secrets blocks are read without it)",
            [&a](const std::string& v, std::string&) { a.capture.tls_keylogs.push_back(v); return true; },
            ValueKind::File),
      value({"--timing"}, "recorded|fast",
            "recorded (default): keep the recorded gaps between requests; fast: each request as soon as the "
            "responses it may depend on are in, at the connection's recorded pipelining depth",
            [&o](const std::string& v, std::string&) {
              o.timing = v == "fast" ? replay::ReplayOptions::Timing::Fast : replay::ReplayOptions::Timing::Recorded;
              return true;
            }),
      value({"--speed"}, "X", "with recorded timing, gaps divided by X (2 = twice as fast)",
            [&o](const std::string& v, std::string& error) {
              size_t used = 0;
              try {
                o.speed = std::stod(v, &used);
              } catch (...) {
                o.speed = -1;
              }
              if (used == v.size() && o.speed > 0) return true;
              error = "--speed needs a positive number, not " + v;
              return false;
            }),
      value({"--api"}, "A,B", "replay only these requests (api names, any case)",
            [&a](const std::string& v, std::string& error) {
              for (const auto& name : split(v, ',')) {
                const MessageProgram* m = a.ps.find_api(name);
                if (!m) {
                  error = "--api: no api named " + name + " (kwire specs lists them)";
                  return false;
                }
                a.o.apis.insert(std::string(m->api_name));
              }
              return true;
            }),
      display_filter_option(a.ps, a.display_filter,
                            "replay only the requests of the exchanges a display filter selects (as for kwire "
                            "decode): the request matches, or its recorded response does (-Y 'body.errorCode != 0' "
                            "replays what failed)"),
      value({"--group"}, "G,H", "replay only sessions whose requests name one of these groups",
            [&o](const std::string& v, std::string&) {
              for (const auto& g : split(v, ',')) o.groups.insert(g);
              return true;
            }),
      value({"--conn"}, "N,M", "replay only these sessions (numbers as the report lists them)",
            [&o](const std::string& v, std::string& error) {
              for (const auto& n : split(v, ',')) {
                size_t used = 0;
                unsigned long k = 0;
                try {
                  k = std::stoul(n, &used);
                } catch (...) {
                  used = 0;
                }
                if (used != n.size() || n[0] == '-' || k > UINT32_MAX) {
                  error = "--conn: bad session number " + n;
                  return false;
                }
                o.conns.insert(static_cast<uint32_t>(k));
              }
              return true;
            }),
      value({"--rename-group"}, "PREFIX", "prefix every group id, so the replay meets no earlier state",
            text(o.renames.group_prefix)),
      value({"--rename-topic"}, "PREFIX", "prefix every topic name (with --setup, topics are made so)",
            text(o.renames.topic_prefix)),
      flag({"--setup"},
           "create the topics the capture uses that the target lacks, as recorded (names and partition counts from "
           "its Metadata responses): this hides a changed default partition count",
           [&o] { o.setup = true; }),
      value({"--ignore"}, "[API:]PATH", "also ignore differences at PATH (JSON names, * and ** wildcards)",
            [&a](const std::string& v, std::string& error) {
              replay::IgnoreRule r;
              if (!replay::parse_pattern(v, r.pattern, error)) {
                error = "--ignore: " + error;
                return false;
              }
              r.why = "--ignore";
              a.extra_ignores.push_back(std::move(r));
              return true;
            }),
      flag({"--no-default-ignores"}, "compare the volatile fields too (see --list-rules)",
           [&a] { a.default_ignores = false; }),
      value({"--expect"}, "[API:]PATH=VALUE", "the live responses must carry VALUE at PATH",
            [&o](const std::string& v, std::string& error) {
              const auto eq = v.find('=');
              if (eq == std::string::npos) {
                error = "--expect needs [API:]PATH=VALUE, not " + v;
                return false;
              }
              replay::ExpectRule r;
              if (!replay::parse_pattern(v.substr(0, eq), r.pattern, error)) {
                error = "--expect: " + error;
                return false;
              }
              std::string path = v.substr(0, eq);
              if (auto colon = path.find(':'); colon != std::string::npos) path = path.substr(colon + 1);
              r.path = path;
              r.value = v.substr(eq + 1);
              o.compare.expect.push_back(std::move(r));
              return true;
            }),
      flag({"--list-rules"}, "print the substitution and ignore rules and exit", [&a] { a.list_rules = true; }),
      value({"--report"}, "FILE.json", "the report as JSON", text(a.report_json), ValueKind::File),
      value({"--junit"}, "FILE.xml", "the report as JUnit XML, one test case per session", text(a.junit),
            ValueKind::File),
      value({"--record-out"}, "FILE", "the replay's own traffic as pcapng (open it beside CAPTURE)",
            text(o.record_out), ValueKind::File),
      value({"--script"}, "FILE.lua",
            "hooks: on_request(msg, ctx) may edit a request's fields or return false to skip it; on_response(msg, "
            "recorded, ctx) may add expectations with kwire.expect(path, value)",
            text(a.script_file), ValueKind::File),
      seconds({"--timeout"}, "S",
              "per-request timeout, seconds (default 30; at least twice the recorded latency). A retriable error "
              "where the capture shows success is retried with back-off for up to 10 s (or S)",
              false, o.timeout_s),
      value({"--retry-budget"}, "S[:N]",
            "what one session may spend on such retries: S seconds (each attempt's round trip and the back-off "
            "after it; default 5) and N retries (default 20); retries that end in an answer are given back, waits "
            "for a coordinator to load not charged; once spent, the session's later answers are compared as they "
            "come (retriable errors become regressions) and the report says so. 0: no retries",
            [&o](const std::string& v, std::string& error) {
              double s = -1;
              long long n = o.retry_budget.max_retries;
              const auto colon = v.find(':');
              try {
                size_t used = 0;
                const std::string secs = v.substr(0, colon);
                s = std::stod(secs, &used);
                if (used != secs.size()) s = -1;
                if (colon != std::string::npos) {
                  const std::string count = v.substr(colon + 1);
                  n = std::stoll(count, &used);
                  if (used != count.size()) n = -1;
                }
              } catch (...) {
                s = -1;
              }
              if (!(s >= 0) || n < 0 || n > 1000000) {
                error = "--retry-budget needs seconds and optionally a count of retries (S or S:N, e.g. 5:20), not " + v;
                return false;
              }
              o.retry_budget.max_us = static_cast<int64_t>(s * 1e6);
              o.retry_budget.max_retries = static_cast<uint32_t>(n);
              return true;
            }),
      seconds({"--reconnect-timeout"}, "S",
              "give a connection up after S seconds unreachable, and the whole target once it sent nothing for S "
              "seconds while requests timed out (default 10)",
              false, o.reconnect_s),
      flag({"--tls"},
           "connect to the target over TLS (1.2 or 1.3), verifying its certificate against the system's CAs and the "
           "target's host name",
           [&o] { o.tls.enabled = true; }),
      value({"--tls-ca"}, "FILE", "trust the CA certificates in FILE (PEM) instead (implies --tls)",
            tls_file(o.tls.ca_file), ValueKind::File),
      value({"--tls-cert"}, "FILE", "client certificate chain, PEM, for brokers that require one",
            tls_file(o.tls.cert_file), ValueKind::File),
      value({"--tls-key"}, "FILE", "its private key, PEM (default: in --tls-cert's file)", tls_file(o.tls.key_file),
            ValueKind::File),
      value({"--tls-server-name"}, "NAME", "the name sent as SNI and verified (default: the target host)",
            tls_file(o.tls.server_name)),
      flag({"--tls-insecure"}, "TLS without verifying the target's certificate (warned about)",
           [&o] { o.tls.enabled = o.tls.insecure = true; }),
      value({"--sasl-plain"}, "USER:PASSWORD",
            "sessions recorded with SASL PLAIN log in with these credentials (USER alone: the password from "
            "$KWIRE_SASL_PASSWORD); the first mechanism given also logs kwire's own connections in",
            sasl("--sasl-plain")),
      value({"--sasl-scram-256"}, "USER:PASSWORD", "the same for SCRAM-SHA-256", sasl("--sasl-scram-256")),
      value({"--sasl-scram-512"}, "USER:PASSWORD", "the same for SCRAM-SHA-512", sasl("--sasl-scram-512")),
      value({"--sasl-oauthbearer"}, "TOKEN|@FILE", "the same for OAUTHBEARER, with this token",
            sasl("--sasl-oauthbearer")),
      seconds({"--budget"}, "S",
              "end the whole run after S seconds and report what was done (default: 120 + 4 x the capture's "
              "duration; 0: no bound)",
              true, a.budget),
      flag({"-q"},
           "no progress on stderr (else a line kept up to date on a terminal, one line every 5 s when stderr is "
           "not one)",
           [&a] { a.quiet = true; }),
  };
  for (auto& opt : spec_options(a.ps)) c.options.push_back(std::move(opt));
  c.options.push_back(help_flag());
  c.exit = {{"0", "no regression (races between sessions are reported, not counted)"},
            {"1", "regressions or unanswered requests"},
            {"2", "could not run (bad usage, unreadable capture, target unreachable, its TLS handshake or SASL login "
                  "refused), with the reason on stderr"}};
  c.exit_note =
      "SIGINT or SIGTERM (and a spent --budget) end the run early: the text, --report and --junit reports of what was "
      "done are still written, and the exit status is 1.";
  return c;
}

}  // namespace

Command replay_cli() { return detached(replay_table); }

volatile std::sig_atomic_t g_stop = 0;

int replay_command(std::vector<std::string> args) {
  ReplayArgs a;
  if (const int rc = parse(replay_table(a), args); rc >= 0) return rc;
  if (a.list_rules) {
    list_rules();
    return 0;
  }
  auto fail = [](const std::string& m) { std::cerr << "kwire replay: " << m << "\n"; return 2; };
  std::string error;
  const ProgramSet& ps = a.ps;
  const std::string& file = a.file;
  replay::ReplayOptions& o = a.o;
  double budget = a.budget;
  if (file.empty()) return fail("-r CAPTURE is required ('kwire replay --help' lists the options)");
  if (!a.have_target) return fail("--target HOST:PORT is required (kwire connects to no address it is not given)");
  if (o.tls.insecure)
    std::cerr << "kwire replay: WARNING: --tls-insecure: the target's certificate is not checked; anyone between kwire "
                 "and the target can read and answer this replay\n";
  if (a.default_ignores) o.compare.ignore = replay::default_ignore_rules();
  for (auto& r : a.extra_ignores) o.compare.ignore.push_back(std::move(r));
  o.progress = !a.quiet;
  o.progress_lines = !isatty(2);
  std::unique_ptr<replay::Script> script;
  if (!a.script_file.empty()) {
    script = replay::Script::load(a.script_file, ps, error);
    if (!script) return fail("--script: " + error);
    replay::Script* sp = script.get();
    if (sp->has_on_request())
      o.on_request = [sp](Frame& f, uint64_t frame, const std::string& conn, bool& skip, std::string& err) {
        return sp->on_request(f, replay::HookContext{frame, conn}, skip, err);
      };
    if (sp->has_on_response())
      o.on_response = [sp](const Frame& live, const Frame& recorded, uint64_t frame, const std::string& conn,
                           std::vector<std::pair<std::string, std::string>>& expect, std::string& err) {
        std::vector<replay::Expectation> add;
        bool ok = sp->on_response(live, recorded, replay::HookContext{frame, conn}, add, err);
        for (auto& e : add) expect.emplace_back(std::move(e.path), std::move(e.value));
        return ok;
      };
  }

  replay::Recording rec;
  if (!replay::load_recording(file, ps, a.session, rec, error, a.capture)) return fail("cannot read " + file + ": " + error);
  for (const auto& n : rec.notes) std::cerr << "kwire replay: " << file << ": " << n << "\n";
  std::set<const replay::Exchange*> selected;
  if (a.display_filter) {
    replay::select_exchanges(ps, *a.display_filter, rec, selected);
    o.select = [&selected](const replay::Exchange& e) { return selected.count(&e) > 0; };
  }
  replay::ReplayResult result;
  replay::ReportContext ctx;
  ctx.capture = file;
  ctx.target.clear();
  for (const auto& t : o.targets) {
    auto p = o.protocols.find(t.str());
    ctx.target += (ctx.target.empty() ? "" : ",") + (p == o.protocols.end() ? "" : p->second + "://") + t.str();
  }
  for (const auto& [from, to] : o.map) ctx.target += ", " + from + "=" + to.str();
  char timing[64];
  snprintf(timing, sizeof timing, "recorded x%g", o.speed);
  ctx.timing = o.timing == replay::ReplayOptions::Timing::Fast ? "fast" : timing;
  // The run's budget: by default four times what the capture lasted (at
  // --speed in recorded timing) and two minutes more, so that a replay that
  // cannot converge ends with its report instead of running on.
  if (budget < 0) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& s : rec.sessions)
      for (const auto& e : s.exchanges) {
        first = std::min(first, e.request_us);
        last = std::max(last, std::max(e.request_us, e.response_us));
      }
    const double span = first <= last ? (last - first) / 1e6 : 0;
    budget = 120 + 4 * (o.timing == replay::ReplayOptions::Timing::Recorded ? span / o.speed : span);
  }
  o.budget_s = budget;
  // SIGINT and SIGTERM end the run; the reports of what was done are still written.
  g_stop = 0;
  struct sigaction sa{};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  o.stop = &g_stop;
  bool ran = replay::run_replay(ps, rec, o, result, error);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (!ran) {
    std::cerr << "kwire replay: " << error << "\n";
    return 2;
  }
  replay::write_text_report(std::cout, result, ctx);
  auto write = [&](const std::string& path, auto fn) -> bool {
    std::ofstream f(path);
    if (!f) { std::cerr << "kwire replay: cannot write " << path << "\n"; return false; }
    fn(f, result, ctx);
    f.close();
    if (!f) { std::cerr << "kwire replay: cannot write " << path << "\n"; return false; }
    return true;
  };
  if (!a.report_json.empty() && !write(a.report_json, replay::write_json_report)) return 2;
  if (!a.junit.empty() && !write(a.junit, replay::write_junit_report)) return 2;
  replay::Totals t = replay::totals(result);
  if (!result.stopped.empty()) {
    std::cerr << "kwire replay: stopped early (" << result.stopped << "); the reports hold what was done\n";
    return 1;
  }
  return t.regressions || t.unanswered ? 1 : 0;
}

}  // namespace kwire::cli
