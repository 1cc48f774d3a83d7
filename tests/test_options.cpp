// The option model (cli/options.hpp) on a table of its own, and every
// command's table through the kwire binary: what --help, the man pages and
// the completion show is what the parser takes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <climits>
#include <iostream>
#include <regex>
#include <sstream>

#include "cli/options.hpp"
#include "test_support.hpp"

namespace kwire::cli {
namespace {

struct Seen {
  std::vector<std::string> order;  // what was set, in the order it was set
  long long n = -1;
  std::string name;
};

Command table(Seen& s) {
  Command c;
  c.name = "try";
  c.usage = {{"kwire try [options] NAME", ""}};
  c.options = {
      value({"--early"}, "X", "applied first", [&s](const std::string& v, std::string&) {
        s.order.push_back("early=" + v);
        return true;
      }),
      flag({"-a", "--all"}, "a flag with two names", [&s] { s.order.push_back("all"); }),
      value({"-T"}, "text|json", "a choice", [&s](const std::string& v, std::string&) {
        s.order.push_back("T=" + v);
        return true;
      }),
      count({"-n"}, "N", "a bounded count", 1, 10, [&s](long long n) { s.n = n; }),
      count({"-m"}, "N", "an unbounded count", 0, LLONG_MAX, [&s](long long n) { s.n = n; }),
      value({"--fail"}, "V", "always refuses", [](const std::string& v, std::string& error) {
        error = "--fail refuses " + v;
        return false;
      }),
      value({"-r"}, "FILE", "a file", [&s](const std::string& v, std::string&) {
        s.order.push_back("r=" + v);
        return true;
      }, ValueKind::File),
  };
  c.options[0].early = true;
  Option help{{"-h", "--help"}, "", "this help", nullptr};
  help.kind = ValueKind::Flag;
  c.options.push_back(help);
  c.set_operand = [&s](const std::string& v, std::string& error) {
    if (!s.name.empty()) {
      error = "one NAME only";
      return false;
    }
    s.name = v;
    return true;
  };
  return c;
}

// parse() with stderr and stdout captured.
struct Run {
  int rc;
  std::string out, err;
};
Run run(const Command& c, std::vector<std::string> args) {
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int rc = parse(c, args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {rc, out.str(), err.str()};
}

TEST(Options, KindsComeFromTheTable) {
  Seen s;
  const Command c = table(s);
  EXPECT_EQ(c.options[1].kind, ValueKind::Flag);
  EXPECT_EQ(c.options[2].kind, ValueKind::Words);
  EXPECT_EQ(c.options[2].choices(), (std::vector<std::string>{"text", "json"}));
  EXPECT_EQ(c.options[6].kind, ValueKind::File);
  EXPECT_EQ(c.options[1].tag(), "-a, --all");
  EXPECT_EQ(c.options[6].tag(), "-r FILE");
  // "duration:S|filesize:KB" names no words to choose from: it is text.
  EXPECT_EQ(value({"-a"}, "duration:S|filesize:KB", "", nullptr).kind, ValueKind::Text);
}

TEST(Options, EarlyOptionsFirstThenTheRestInOrder) {
  Seen s;
  const Command c = table(s);
  auto r = run(c, {"-T", "json", "NAME1", "--all", "--early", "1", "-r", "-", "-n", "10"});
  EXPECT_EQ(r.rc, -1) << r.err;
  EXPECT_EQ(s.order, (std::vector<std::string>{"early=1", "T=json", "all", "r=-"}));
  EXPECT_EQ(s.n, 10);
  EXPECT_EQ(s.name, "NAME1");
}

TEST(Options, ErrorsNameTheOptionTheValueAndWhatIsExpected) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"-T", "xml"}, "kwire try: -T is text or json, not xml\n"},
      {{"-n", "11"}, "kwire try: -n takes a whole number from 1 to 10, not '11'\n"},
      {{"-n", "0"}, "kwire try: -n takes a whole number from 1 to 10, not '0'\n"},
      {{"-n", "3x"}, "kwire try: -n takes a whole number from 1 to 10, not '3x'\n"},
      {{"-m", "-1"}, "kwire try: -m takes a whole number 0 or more, not '-1'\n"},
      {{"-m", "+1"}, "kwire try: -m takes a whole number 0 or more, not '+1'\n"},
      {{"-r"}, "kwire try: -r needs FILE\n"},
      {{"--early"}, "kwire try: --early needs X\n"},
      {{"--fail", "v"}, "kwire try: --fail refuses v\n"},
      {{"--bogus"}, "kwire try: unknown option --bogus ('kwire try --help' lists them)\n"},
      {{"a", "b"}, "kwire try: one NAME only\n"},
  };
  for (const auto& k : cases) {
    Seen s;
    auto r = run(table(s), k.args);
    EXPECT_EQ(r.rc, 2) << k.err;
    EXPECT_EQ(r.err, k.err);
    EXPECT_EQ(r.out, "");
  }
  // The largest count a long long holds, and one past it.
  Seen s;
  EXPECT_EQ(run(table(s), {"-m", "9223372036854775807"}).rc, -1);
  EXPECT_EQ(s.n, LLONG_MAX);
  EXPECT_EQ(run(table(s), {"-m", "9223372036854775808"}).rc, 2);
}

TEST(Options, ValuesThatLookLikeOptionsAreValues) {
  Seen s;
  auto r = run(table(s), {"-r", "--all", "--early", "-T"});
  EXPECT_EQ(r.rc, -1) << r.err;
  EXPECT_EQ(s.order, (std::vector<std::string>{"early=-T", "r=--all"}));
}

TEST(Options, HelpIsTheTable) {
  Seen s;
  const Command c = table(s);
  auto r = run(c, {"-n", "2", "--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err, "");
  // Every option, under its tag, in table order, descriptions in one column.
  std::vector<std::string> tags;
  std::regex item("^  (-\\S.*?)  +(\\S.*)$");
  std::istringstream lines(r.out);
  std::string line;
  size_t col = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, item)) continue;
    tags.push_back(m[1]);
    if (col == 0) col = m.position(2);
    EXPECT_EQ(static_cast<size_t>(m.position(2)), col) << line;
  }
  EXPECT_EQ(tags, (std::vector<std::string>{"--early X", "-a, --all", "-T text|json", "-n N", "-m N", "--fail V",
                                            "-r FILE", "-h, --help"}));
  EXPECT_TRUE(r.out.starts_with("usage: kwire try [options] NAME\n")) << r.out;
}

TEST(Options, WrapKeepsWordsWholeAndIndents) {
  EXPECT_EQ(wrap("aaa bbb ccc", 0, 2, 7), "aaa bbb\n  ccc");
  EXPECT_EQ(wrap("a  b", 5, 5, 80), "a b");
  EXPECT_EQ(wrap("averyveryverylongword x", 0, 1, 5), "averyveryverylongword\n x");
}

// Every command's --help, as the binary prints it, lists each option its
// parser takes exactly once, and a flag the table declares parses.
TEST(Options, EveryCommandHelpListsItsTableOnce) {
  for (const char* cmd : {"decode", "record", "monitor", "replay", "streams", "latency", "specs"}) {
    auto r = test::kwire_cmd(std::string(cmd) + " --help");
    ASSERT_EQ(WEXITSTATUS(r.status), 0) << cmd;
    std::map<std::string, int> seen;
    std::regex item("^  (-[^ ,]+)(?:, (-[^ ,]+))?");
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, item)) continue;
      ++seen[m[1]];
      if (m[2].matched) ++seen[m[2]];
    }
    EXPECT_GT(seen.size(), 4u) << cmd;
    for (const auto& [name, n] : seen) EXPECT_EQ(n, 1) << cmd << " " << name;
    EXPECT_EQ(seen.count("-h"), 1u) << cmd;
    EXPECT_EQ(seen.count("--spec-dir"), 1u) << cmd;
  }
}

TEST(Options, CommandErrorsSayWhatIsExpected) {
  const std::string demo = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  struct Case {
    std::string args, err;
  };
  const std::vector<Case> cases = {
      {"decode -r " + demo + " -T xml", "kwire decode: -T is text, json or fields, not xml\n"},
      {"decode -r " + demo + " -c x", "kwire decode: -c takes a whole number 0 or more, not 'x'\n"},
      {"latency -r " + demo + " -T fields", "kwire latency: -T is text or json, not fields\n"},
      {"streams -r " + demo + " -T xml", "kwire streams: -T is text or json, not xml\n"},
      {"record -r " + demo + " -w /dev/null -s 10", "kwire record: -s takes a whole number from 64 to 262144, not '10'\n"},
      {"record -r " + demo + " -w /dev/null -V", "kwire record: -V is an option of --decode's output: give --decode too\n"},
      {"specs -v", "kwire specs: -v needs VERSION\n"},
      {"latency -T json", "kwire latency: -r FILE is required ('kwire latency --help' lists the options)\n"},
      {"specs Produce Fetch", "kwire specs: one NAME at a time, not Produce and Fetch\n"},
      {"replay --timing slow", "kwire replay: --timing is recorded or fast, not slow\n"},
      {"decode --overlay nope -r " + demo, ""},  // named below: the shipped overlays follow
  };
  for (const auto& k : cases) {
    auto r = test::kwire_cmd(k.args);
    EXPECT_EQ(WEXITSTATUS(r.status), 2) << k.args;
    if (!k.err.empty()) {
      EXPECT_EQ(r.err, k.err) << k.args;
    }
  }
  auto r = test::kwire_cmd("decode --overlay nope -r " + demo);
  EXPECT_TRUE(r.err.starts_with("kwire decode: no overlay named nope (shipped: ")) << r.err;
  // --decode's output options apply wherever --decode stands.
  r = test::kwire_cmd("record -r " + demo + " -w /dev/null --api Produce -T json -c 0 --decode");
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.err;
}

}  // namespace
}  // namespace kwire::cli
