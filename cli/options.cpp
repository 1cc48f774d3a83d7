#include "cli/options.hpp"

#include <algorithm>
#include <climits>
#include <iostream>
#include <sstream>

namespace kwire::cli {

namespace {

constexpr size_t kWidth = 90;      // help lines end before this column
constexpr size_t kMaxTagCol = 24;  // descriptions start at most here

bool lower_word(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
}

std::string either(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i)
    s += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return s;
}

std::string name_of(const Command& c) { return c.name.empty() ? "kwire" : "kwire " + c.name; }

// "text|json" -> {text, json}.
std::vector<std::string> split_words(const std::string& arg) {
  std::vector<std::string> words;
  std::stringstream in(arg);
  std::string w;
  while (std::getline(in, w, '|')) words.push_back(w);
  return words;
}

}  // namespace

std::string Option::tag() const {
  std::string t;
  for (const auto& n : names) t += (t.empty() ? "" : ", ") + n;
  return arg.empty() ? t : t + " " + arg;
}

std::vector<std::string> Option::choices() const {
  return kind == ValueKind::Words ? split_words(arg) : std::vector<std::string>{};
}

Option flag(std::vector<std::string> names, std::string help, std::function<void()> on) {
  Option o{std::move(names), "", std::move(help), [on = std::move(on)](const std::string&, std::string&) {
             on();
             return true;
           }};
  o.kind = ValueKind::Flag;
  return o;
}

Option value(std::vector<std::string> names, std::string arg, std::string help,
             std::function<bool(const std::string&, std::string&)> set, ValueKind kind) {
  Option o{std::move(names), std::move(arg), std::move(help), std::move(set)};
  o.kind = kind;
  if (kind == ValueKind::Text) {
    const auto words = split_words(o.arg);
    if (words.size() > 1 && std::all_of(words.begin(), words.end(), lower_word)) o.kind = ValueKind::Words;
  }
  return o;
}

Option count(std::vector<std::string> names, std::string arg, std::string help, long long lo, long long hi,
             std::function<void(long long)> set) {
  const std::string first = names.front();
  return value(std::move(names), std::move(arg), std::move(help),
               [=, set = std::move(set)](const std::string& v, std::string& error) {
                 long long n = 0;
                 size_t used = 0;
                 bool ok = !v.empty() && v[0] != '-' && v[0] != '+';
                 try {
                   if (ok) n = std::stoll(v, &used);
                 } catch (...) {
                   ok = false;
                 }
                 if (!ok || used != v.size() || n < lo || n > hi) {
                   error = first + " takes a whole number " +
                           (hi == LLONG_MAX ? std::to_string(lo) + " or more"
                                            : "from " + std::to_string(lo) + " to " + std::to_string(hi)) +
                           ", not '" + v + "'";
                   return false;
                 }
                 set(n);
                 return true;
               });
}

int parse(const Command& c, const std::vector<std::string>& args) {
  auto fail = [&](const std::string& m) {
    std::cerr << name_of(c) << ": " << m << "\n";
    return 2;
  };
  auto find = [&](const std::string& a) -> const Option* {
    for (const auto& o : c.options)
      if (std::find(o.names.begin(), o.names.end(), a) != o.names.end()) return &o;
    return nullptr;
  };
  std::vector<const Option*> given;
  // Early options first (a -Y filter or an --api list needs the specs an
  // --overlay adds, wherever it stands), then the rest in their order.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      const Option* o = find(a);
      if (!o) {
        if (pass == 0) continue;
        if (a.size() > 1 && a[0] == '-')
          return fail("unknown option " + a + " ('" + name_of(c) + " --help' lists them)");
        if (!c.set_operand) return fail("unexpected argument '" + a + "' ('" + name_of(c) + " --help' lists the options)");
        std::string error;
        if (!c.set_operand(a, error)) return fail(error);
        continue;
      }
      std::string v;
      if (o->kind != ValueKind::Flag) {
        if (i + 1 >= args.size()) return fail(a + " needs " + o->arg);
        v = args[++i];
      }
      if (o->early != (pass == 0)) continue;
      given.push_back(o);
      if (!o->set) {  // -h, --help
        print_help(c, std::cout);
        return 0;
      }
      if (o->kind == ValueKind::Words) {
        const auto words = o->choices();
        if (std::find(words.begin(), words.end(), v) == words.end()) return fail(a + " is " + either(words) + ", not " + v);
      }
      std::string error;
      if (!o->set(v, error)) return fail(error);
    }
  }
  for (const auto& o : c.options)
    if (o.required && std::find(given.begin(), given.end(), &o) == given.end())
      return fail(o.tag() + " is required ('" + name_of(c) + " --help' lists the options)");
  return -1;
}

std::string wrap(const std::string& text, size_t first_col, size_t indent, size_t width) {
  std::string out;
  size_t col = first_col;
  std::stringstream in(text);
  std::string word;
  bool first = true;
  while (in >> word) {
    if (!first && col + 1 + word.size() > width) {
      out += '\n';
      out.append(indent, ' ');
      col = indent;
    } else if (!first) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    first = false;
  }
  return out;
}

namespace {

void print_paragraph(const std::string& p, std::ostream& out) {
  if (p.starts_with("  ")) {
    out << p << "\n";  // kept line for line
  } else {
    out << wrap(p, 0, 0, kWidth) << "\n";
  }
}

}  // namespace

void print_help(const Command& c, std::ostream& out) {
  // "usage: kwire specs [options]      what it does": the descriptions of
  // several forms line up after the longest form.
  size_t form_w = 0;
  for (const auto& [form, what] : c.usage) form_w = std::max(form_w, form.size());
  for (size_t i = 0; i < c.usage.size(); ++i) {
    const auto& [form, what] = c.usage[i];
    out << (i == 0 ? "usage: " : "       ") << form;
    if (!what.empty()) out << std::string(form_w - form.size() + 2, ' ') << what;
    out << "\n";
  }
  for (const auto& p : c.description) out << "\n", print_paragraph(p, out);
  if (!c.commands.empty()) {
    out << "\ncommands:\n";
    size_t w = 0;
    for (const auto& [brief, summary] : c.commands) w = std::max(w, std::min<size_t>(brief.size(), 16));
    const size_t col = 2 + w + 2;
    for (const auto& [brief, summary] : c.commands) {
      out << "  " << brief;
      if (brief.size() > w) out << "\n" << std::string(col, ' ');
      else out << std::string(col - 2 - brief.size(), ' ');
      out << wrap(summary, col, col, kWidth) << "\n";
    }
  }
  if (!c.options.empty()) {
    out << "\noptions:\n";
    size_t w = 0;
    for (const auto& o : c.options)
      if (o.tag().size() + 4 <= kMaxTagCol) w = std::max(w, o.tag().size());
    const size_t col = 2 + w + 2;
    for (const auto& o : c.options) {
      const std::string tag = o.tag();
      out << "  " << tag;
      const size_t start = tag.size() <= w ? col : 2 + tag.size() + 2;
      out << std::string(start - 2 - tag.size(), ' ') << wrap(o.help, start, col, kWidth) << "\n";
    }
  }
  if (!c.notes.empty()) out << "\n";
  for (const auto& p : c.notes) print_paragraph(p, out);
  if (!c.exit.empty()) {
    std::string s = "exit status:";
    for (size_t i = 0; i < c.exit.size(); ++i) s += (i ? "; " : " ") + c.exit[i].first + " " + c.exit[i].second;
    out << "\n" << wrap(s, 0, 0, kWidth) << "\n";
    if (!c.exit_note.empty()) out << wrap(c.exit_note, 0, 0, kWidth) << "\n";
  }
}

}  // namespace kwire::cli
