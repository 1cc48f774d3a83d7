#pragma once
// One declaration per option: each command lists its options once, as a table
// of Option, and that table drives the parsing, `--help`, the man pages and the
// bash completion (cli/generate.cpp). Nothing about an option is written twice.
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kwire::cli {

// What a shell offers for an option's value. Words: the choices of an
// argument spelt "a|b|c" (lower-case words), checked by the parser too.
enum class ValueKind { Flag, Text, File, Dir, Iface, Words };

struct Option {
  std::vector<std::string> names;  // {"-h", "--help"}: the first is the one errors name
  std::string arg;                 // the value's metavariable ("FILE"); "" for a flag
  std::string help;                // one paragraph; printed wrapped
  // Stores the value ("" for a flag); false with the reason in error. The
  // parser has already checked a Words value against its choices.
  std::function<bool(const std::string& value, std::string& error)> set;
  ValueKind kind = ValueKind::Text;  // Text unless a helper below says otherwise
  bool early = false;                // applied before every other option (specs for -Y, --api)
  bool required = false;             // the command cannot run without it

  std::string tag() const;                       // "-h, --help" / "-r FILE"
  std::vector<std::string> choices() const;      // Words: "text|json" -> {text, json}
};

// A flag: set() runs when it is given.
Option flag(std::vector<std::string> names, std::string help, std::function<void()> on);
// An option with a value of the given kind (File, Dir, Iface, Text; Words is
// taken from arg when it reads "a|b|c").
Option value(std::vector<std::string> names, std::string arg, std::string help,
             std::function<bool(const std::string&, std::string&)> set, ValueKind kind = ValueKind::Text);
// A whole number in [lo, hi] into out; the error names the option, the value and the range.
Option count(std::vector<std::string> names, std::string arg, std::string help, long long lo, long long hi,
             std::function<void(long long)> set);

struct Command {
  std::string name;     // "decode"; "" for kwire itself
  std::string brief;    // how kwire --help shows it: "decode -r FILE"
  std::string summary;  // one line: kwire --help, and the man page's NAME
  // The usage forms, each with what it does ("" when there is one form).
  std::vector<std::pair<std::string, std::string>> usage;
  std::vector<std::string> description;  // paragraphs before the options
  // kwire itself: its commands, as {brief, summary}, listed before its options.
  std::vector<std::pair<std::string, std::string>> commands;
  std::vector<Option> options;
  // After the options. A paragraph whose lines start with two spaces is kept
  // line for line (a sample of output); others are wrapped.
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> exit;  // {"0", "decoded"}, ...
  std::string exit_note;                                  // a paragraph after the exit codes
  // Operands that are not options (kwire specs NAME); without it they are errors.
  std::string operand;  // its name in errors and help ("NAME")
  std::function<bool(const std::string&, std::string&)> set_operand;
  std::shared_ptr<void> keep;  // what the setters write into, when the table outlives its command
};

// Parses args against c's options: early ones first, the others in order.
// Returns -1 when the command should run; else the exit status, after
// printing the help (0) or the error (2, "kwire NAME: ..." on stderr).
int parse(const Command& c, const std::vector<std::string>& args);

// The help as `kwire NAME --help` prints it.
void print_help(const Command& c, std::ostream& out);
// Text wrapped to width columns, the first line at first_indent and the rest
// at indent (both counted from column 0; the first line's indent is not written).
std::string wrap(const std::string& text, size_t first_col, size_t indent, size_t width);

// Every command's table, in kwire --help's order; the first is kwire itself.
std::vector<Command> all_commands();

// A command's table for help and generation, bound to values of its own that
// live as long as the table does.
template <class Args>
Command detached(Command (*table)(Args&)) {
  auto a = std::make_shared<Args>();
  Command c = table(*a);
  c.keep = a;
  return c;
}

// The tables of the commands (cli/*_command.cpp), not bound to a run.
Command decode_cli();
Command record_cli();
Command replay_cli();
Command streams_cli();
Command latency_cli();
Command monitor_cli();
Command specs_cli();

// `kwire --generate man DIR` and `kwire --generate complete-bash`.
int generate_command(const std::vector<std::string>& args);

}  // namespace kwire::cli
