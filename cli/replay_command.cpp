#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <climits>
#include <csignal>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "dissector/filter/filter.hpp"
#include "replay/concurrency.hpp"
#include "replay/differential.hpp"
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
               "\nTimes (docs/replay.md, \"Time\"): record timestamps in Produce batches and the times\n"
               "ListOffsets asks for move by the replay's start minus the capture's (--keep-timestamps:\n"
               "as recorded); recorded ListOffsets timestamps and Fetch batches move alike before they\n"
               "are compared. Wall-clock times the target stamps are compared as times of the replay's\n"
               "run (-1 where the capture has -1):\n";
  for (const auto& w : replay::wall_clock_fields()) std::cout << "  " << w.pattern.text << "\n    " << w.why << "\n";
  std::cout << "\nRaces (outcome \"race\", not a regression; the exit status ignores them): a\n"
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

// Where and how kwire reaches one target of a differential replay
// (--candidate, --secondary): its own addresses and --map, and its own TLS and
// SASL settings where given (else --tls*/--sasl*'s).
struct TargetConn {
  std::vector<replay::HostPort> targets;
  std::map<std::string, std::string> protocols;
  std::map<std::string, replay::HostPort> map;
  replay::TlsClientOptions tls;
  std::vector<replay::SaslLogin> sasl;
  bool tls_given = false;
};

struct ReplayArgs {
  ProgramSet ps = ProgramSet::build_release();
  std::string file, report_json, junit, script_file;
  replay::ReplayOptions o;
  TargetConn candidate, secondary;
  replay::NoiseThresholds noise;
  SessionOptions session;
  CaptureOptions capture;
  bool have_target = false, have_candidate = false, have_secondary = false, default_ignores = true, quiet = false,
       list_rules = false;
  double budget = -1;
  std::vector<replay::IgnoreRule> extra_ignores;
  std::shared_ptr<const filter::Filter> display_filter;
};

// A percentage in [0, 100].
Option percent(std::vector<std::string> names, std::string help, double& into) {
  const std::string first = names.front();
  return value(std::move(names), "PCT", std::move(help), [first, &into](const std::string& v, std::string& error) {
    double x = -1;
    size_t used = 0;
    try {
      x = std::stod(v, &used);
    } catch (...) {
    }
    if (used != v.size() || !(x >= 0 && x <= 100)) {
      error = first + " needs a percentage from 0 to 100, not " + v;
      return false;
    }
    into = x;
    return true;
  });
}

// The options that say where a target is and how to reach it: --target,
// --map, --tls*, --sasl-* (who empty), or the same for the candidate or the
// secondary (--candidate, --candidate-map, --candidate-tls-ca, ...).
std::vector<Option> target_options(const std::string& who, std::vector<replay::HostPort>& targets,
                                   std::map<std::string, std::string>& protocols,
                                   std::map<std::string, replay::HostPort>& map, replay::TlsClientOptions& tls,
                                   std::vector<replay::SaslLogin>& sasl, bool& have_target, bool* tls_given) {
  const std::string pre = who.empty() ? "--" : "--" + who + "-";
  const std::string target_name = who.empty() ? "--target" : "--" + who;
  auto also = [&who](const std::string& plain, const std::string& help) {
    return who.empty() ? help : "as " + plain + ", for the " + who;
  };
  auto tls_on = [&tls, tls_given] {
    tls.enabled = true;
    if (tls_given) *tls_given = true;
  };
  auto tls_file = [tls_on](std::string& into) {
    return [tls_on, &into](const std::string& v, std::string&) {
      tls_on();
      into = v;
      return true;
    };
  };
  auto login = [&sasl, pre](const std::string& plain) {
    const std::string option = pre + plain.substr(2);
    return [&sasl, option, plain](const std::string& v, std::string& error) {
      replay::SaslLogin l;
      if (!parse_sasl_login(plain, v, l, error)) {
        if (error.starts_with(plain)) error = option + error.substr(plain.size());
        return false;
      }
      for (const auto& x : sasl)
        if (x.mechanism == l.mechanism) {
          error = option + " is given twice";
          return false;
        }
      sasl.push_back(std::move(l));
      return true;
    };
  };
  std::vector<Option> out;
  out.push_back(value(
      {target_name}, "[PROTOCOL://]HOST:PORT[,...]",
      who.empty()
          ? "the broker or cluster under test (the baseline of a differential replay): one or more bootstrap "
            "brokers, on one listener or several (repeatable). Each recorded broker's sessions go to the target's "
            "broker of the same node id, on the target listener of the recorded one's security protocol (TLS: "
            "recorded over TLS; SASL: logged in); PROTOCOL (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) says a "
            "listener's, else TLS is --tls's and SASL what the listener answers to a SaslHandshake"
          : who == "candidate"
                ? "differential replay: the broker or cluster whose answers are judged against --target's (the "
                  "baseline), both sent the same sessions in step; addresses as for --target (repeatable)"
                : "a second baseline (the same release and settings as --target): what differs between the two "
                  "is noise, and the candidate's differences at a field are a regression only beyond it",
      [&targets, &protocols, &have_target, target_name](const std::string& v, std::string& error) {
        size_t from = 0;
        while (from <= v.size()) {
          const size_t comma = std::min(v.find(',', from), v.size());
          std::string protocol;
          replay::HostPort hp;
          if (!replay::parse_target(v.substr(from, comma - from), protocol, hp, error)) {
            error = target_name + ": " + error;
            return false;
          }
          targets.push_back(hp);
          if (!protocol.empty()) protocols[hp.str()] = protocol;
          from = comma + 1;
        }
        have_target = true;
        return true;
      }));
  out.push_back(value({pre + "map"}, "ADDR:PORT=[PROTOCOL://]HOST:PORT",
                      also("--map", "ADDR:PORT is at HOST:PORT (repeatable): a recorded broker's sessions start there, and an "
                                    "address the target advertises is reached there (a port-forward, a NAT); each request "
                                    "still goes where its role lives"),
                      [&map, &protocols, option = pre + "map"](const std::string& v, std::string& error) {
                        const auto eq = v.find('=');
                        replay::HostPort from, to;
                        std::string protocol;
                        if (eq == std::string::npos) {
                          error = option + " needs ADDR:PORT=HOST:PORT, not " + v;
                          return false;
                        }
                        if (!replay::parse_host_port(v.substr(0, eq), from, error) ||
                            !replay::parse_target(v.substr(eq + 1), protocol, to, error)) {
                          error = option + " " + v + ": " + error;
                          return false;
                        }
                        map[from.str()] = to;
                        if (!protocol.empty()) protocols[to.str()] = protocol;
                        return true;
                      }));
  out.push_back(flag({pre + "tls"},
                     also("--tls", "connect to the target over TLS (1.2 or 1.3), verifying its certificate against the "
                                   "system's CAs and the target's host name"),
                     tls_on));
  out.push_back(value({pre + "tls-ca"}, "FILE",
                      also("--tls-ca", "trust the CA certificates in FILE (PEM) instead (implies --tls)"),
                      tls_file(tls.ca_file), ValueKind::File));
  out.push_back(value({pre + "tls-cert"}, "FILE",
                      also("--tls-cert", "client certificate chain, PEM, for brokers that require one"),
                      tls_file(tls.cert_file), ValueKind::File));
  out.push_back(value({pre + "tls-key"}, "FILE", also("--tls-key", "its private key, PEM (default: in --tls-cert's file)"),
                      tls_file(tls.key_file), ValueKind::File));
  out.push_back(value({pre + "tls-server-name"}, "NAME",
                      also("--tls-server-name", "the name sent as SNI and verified (default: the target host)"),
                      tls_file(tls.server_name)));
  out.push_back(flag({pre + "tls-insecure"},
                     also("--tls-insecure", "TLS without verifying the target's certificate (warned about)"),
                     [&tls, tls_on] {
                       tls_on();
                       tls.insecure = true;
                     }));
  out.push_back(value({pre + "sasl-plain"}, "USER:PASSWORD",
                      also("--sasl-plain",
                           "sessions recorded with SASL PLAIN log in with these credentials (USER alone: the password "
                           "from $KWIRE_SASL_PASSWORD); the first mechanism given also logs kwire's own connections in"),
                      login("--sasl-plain")));
  out.push_back(value({pre + "sasl-scram-256"}, "USER:PASSWORD", also("--sasl-scram-256", "the same for SCRAM-SHA-256"),
                      login("--sasl-scram-256")));
  out.push_back(value({pre + "sasl-scram-512"}, "USER:PASSWORD", also("--sasl-scram-512", "the same for SCRAM-SHA-512"),
                      login("--sasl-scram-512")));
  out.push_back(value({pre + "sasl-oauthbearer"}, "TOKEN|@FILE",
                      also("--sasl-oauthbearer", "the same for OAUTHBEARER, with this token"),
                      login("--sasl-oauthbearer")));
  return out;
}

Command replay_table(ReplayArgs& a) {
  replay::ReplayOptions& o = a.o;
  auto text = [](std::string& into) {
    return [&into](const std::string& v, std::string&) { into = v; return true; };
  };
  Command c;
  c.name = "replay";
  c.brief = "replay -r FILE --target HOST:PORT";
  c.summary = "re-send the capture's client sessions to a broker, compare the answers";
  c.usage = {{"kwire replay -r CAPTURE --target HOST:PORT [options]", ""},
             {"kwire replay -r CAPTURE --target BASELINE --candidate CANDIDATE [--secondary BASELINE2] [options]",
              "differential"}};
  c.description = {
      "Re-sends the client sessions of CAPTURE to a broker under test, one connection per recorded connection, "
      "substituting what the broker hands out (member epochs, member ids, producer ids and epochs, fetch sessions, "
      "topic ids), compares every response with the recorded one field by field, and reports the differences.",
      "With --candidate, the same sessions go in step to the baseline (--target) and the candidate, each with its "
      "own learned values: the candidate's answers are judged against the baseline's, field by field. With "
      "--secondary, a second baseline measures noise: a field path is a regression only where the candidate "
      "differs from the baseline clearly more often than the secondary does (--noise-relative, --noise-absolute). "
      "Differences from the capture are reported as drift and do not count."};
  c.options = {
      value({"-r"}, "FILE", "pcap or pcapng capture (- reads standard input)", text(a.file), ValueKind::File),
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
      flag({"--keep-timestamps"},
           "send record timestamps (and ListOffsets' times) as recorded; by default they move by the replay's start "
           "minus the capture's, so that a target does not delete an old capture's records as they arrive",
           [&o] { o.keep_timestamps = true; }),
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
      seconds({"--budget"}, "S",
              "end the whole run after S seconds and report what was done (default: 120 + 4 x the capture's "
              "duration; 0: no bound)",
              true, a.budget),
      flag({"-q"},
           "no progress on stderr (else a line kept up to date on a terminal, one line every 5 s when stderr is "
           "not one)",
           [&a] { a.quiet = true; }),
  };
  std::vector<Option> conn = target_options("", o.targets, o.protocols, o.map, o.tls, o.sasl, a.have_target, nullptr);
  c.options.insert(c.options.begin() + 1, conn.begin(), conn.end());
  for (auto [who, t] : {std::pair{"candidate", &a.candidate}, std::pair{"secondary", &a.secondary}}) {
    bool& have = who == std::string_view("candidate") ? a.have_candidate : a.have_secondary;
    for (auto& opt : target_options(who, t->targets, t->protocols, t->map, t->tls, t->sasl, have, &t->tls_given))
      c.options.push_back(std::move(opt));
  }
  c.options.push_back(percent({"--noise-relative"},
                              "with --secondary: a field's candidate differences are a regression only when they exceed "
                              "the secondary's by more than PCT% of their number (default 20)",
                              a.noise.relative));
  c.options.push_back(percent({"--noise-absolute"},
                              "... and by more than PCT% of the exchanges of that api and version (default 0.03)",
                              a.noise.absolute));
  for (auto& opt : spec_options(a.ps)) c.options.push_back(std::move(opt));
  c.options.push_back(help_flag());
  c.exit = {{"0", "no regression (races between sessions are reported, not counted); differential: the candidate "
                  "adds no regression beyond noise"},
            {"1", "regressions or unanswered requests; differential: a field path where the candidate differs "
                  "from the baseline beyond noise"},
            {"2", "could not run (bad usage, unreadable capture, target unreachable, its TLS handshake or SASL login "
                  "refused), with the reason on stderr"}};
  c.exit_note =
      "SIGINT or SIGTERM (and a spent --budget) end the run early: the text, --report and --junit reports of what was "
      "done are still written, and the exit status is 1.";
  return c;
}

// Writes a report file with `fill`; false (said on stderr) when it cannot be written.
bool write_report(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  std::ofstream f(path);
  if (f) fill(f);
  f.close();
  if (!f) std::cerr << "kwire replay: cannot write " << path << "\n";
  return static_cast<bool>(f);
}

// "out.pcapng" -> "out.candidate.pcapng": each target's own traffic.
std::string with_role(const std::string& path, const std::string& role) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + role;
  return path.substr(0, dot) + "." + role + path.substr(dot);
}

std::string target_text(const std::vector<replay::HostPort>& targets, const std::map<std::string, std::string>& protocols,
                        const std::map<std::string, replay::HostPort>& map) {
  std::string out;
  for (const auto& t : targets) {
    auto p = protocols.find(t.str());
    out += (out.empty() ? "" : ",") + (p == protocols.end() ? "" : p->second + "://") + t.str();
  }
  for (const auto& [from, to] : map) out += ", " + from + "=" + to.str();
  return out;
}

// kwire replay --candidate: the baseline (--target), the candidate and the
// secondary, each replayed by its own engine in step; the verdict is the
// candidate against the baseline beyond the noise the secondary shows.
int differential(ReplayArgs& a, const replay::Recording& rec, const replay::ReportContext& single) {
  std::vector<replay::DiffTarget> targets;
  auto add = [&](const std::string& role, const TargetConn* conn) {
    replay::DiffTarget t;
    t.role = role;
    t.options = a.o;
    if (conn) {
      t.options.targets = conn->targets;
      t.options.target = conn->targets.front();
      t.options.protocols = conn->protocols;
      t.options.map = conn->map;
      if (conn->tls_given) t.options.tls = conn->tls;
      if (!conn->sasl.empty()) t.options.sasl = conn->sasl;
      if (!a.o.record_out.empty()) t.options.record_out = with_role(a.o.record_out, role);
      t.options.progress = false;   // one progress line: the baseline's
    }
    t.target = target_text(t.options.targets, t.options.protocols, t.options.map);
    targets.push_back(std::move(t));
  };
  add("baseline", nullptr);
  add("candidate", &a.candidate);
  if (a.have_secondary) add("secondary", &a.secondary);
  const bool all = replay::run_differential(a.ps, rec, targets);
  replay::DifferentialResult d = replay::analyse(targets, a.noise);
  replay::DiffReportContext ctx;
  ctx.capture = single.capture;
  ctx.timing = single.timing;
  replay::write_differential_text(std::cout, targets, d, ctx);
  auto write = [&](const std::string& path, auto fn) {
    return write_report(path, [&](std::ostream& f) { fn(f, targets, d, ctx); });
  };
  if (!a.report_json.empty() && !write(a.report_json, replay::write_differential_json)) return 2;
  if (!a.junit.empty() && !write(a.junit, replay::write_differential_junit)) return 2;
  if (!all) {
    for (const auto& t : targets)
      if (!t.ran) std::cerr << "kwire replay: the " << t.role << " (" << t.target << "): " << t.error << "\n";
    return 2;
  }
  for (const auto& t : targets)
    if (!t.result.stopped.empty()) {
      std::cerr << "kwire replay: the " << t.role << "'s replay stopped early (" << t.result.stopped
                << "); the reports hold what was done\n";
      return 1;
    }
  return d.regressions() ? 1 : 0;
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
  o.target = o.targets.front();
  if (a.have_secondary && !a.have_candidate) return fail("--secondary needs --candidate (it measures the noise of a differential replay)");
  for (const auto* t : {&a.candidate, &a.secondary})
    if (t->tls.insecure)
      std::cerr << "kwire replay: WARNING: --tls-insecure: a target's certificate is not checked; anyone between kwire "
                   "and it can read and answer this replay\n";
  if (o.tls.insecure)
    std::cerr << "kwire replay: WARNING: --tls-insecure: the target's certificate is not checked; anyone between kwire "
                 "and the target can read and answer this replay\n";
  if (a.default_ignores) o.compare.ignore = replay::default_ignore_rules();
  for (auto& r : a.extra_ignores) o.compare.ignore.push_back(std::move(r));
  o.progress = !a.quiet;
  o.progress_lines = !isatty(2);
  o.warn = [](const std::string& w) { std::cerr << "kwire replay: WARNING: " << w << "\n"; };
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
  if (a.have_candidate) {
    const int rc = differential(a, rec, ctx);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return rc;
  }
  bool ran = replay::run_replay(ps, rec, o, result, error);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (!ran) {
    std::cerr << "kwire replay: " << error << "\n";
    return 2;
  }
  replay::write_text_report(std::cout, result, ctx);
  auto write = [&](const std::string& path, auto fn) {
    return write_report(path, [&](std::ostream& f) { fn(f, result, ctx); });
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
