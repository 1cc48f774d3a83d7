#!/usr/bin/env python3
"""kwire's man pages and bash completion, made from the --help of a built kwire.

Usage: kwire_docs.py --kwire PATH [--man-dir DIR] [--completion FILE]
                     [--list-options COMMAND]

The build (cmake/KwireInstall.cmake) runs this on the kwire it has just
linked, so the help text the binary prints is the one source: `kwire --help`
names the commands, `kwire COMMAND --help` gives a command's synopsis,
description, options and exit status. A man page or a completion can
therefore not offer an option the binary lacks, nor miss one it has.

--man-dir DIR writes kwire.1 and kwire-COMMAND.1 per command, each also
gzipped as Debian installs them (gzip -9n: no name, no time stamp); earlier
pages there are removed first, so a dropped command leaves no page behind.
--completion FILE writes the bash completion: the commands, each command's
options, and for an option's value files (FILE, CAPTURE), directories (DIR),
interfaces (IFACE) or the words it lists (-T text|json|fields).
--list-options COMMAND prints the option names parsed from that command's help,
one a line ("" for kwire itself).

The help follows one layout, which the parser below relies on: "usage: ..."
lines (more forms indented under the first), "exit status: ..." up to a blank
line, option items "  -x ARG   description" with continuation lines indented
to the description column, "commands:" / "options:" headings, and prose.
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import time
from collections import Counter

# ---- Reading the help --------------------------------------------------------


class Item:
    """An option ("-r FILE") or, in kwire's own help, a command ("decode -r FILE")."""

    def __init__(self, tag):
        self.tag = tag
        self.desc = []

    def names(self):
        """The option names: "-h, --help" is -h and --help; "--overlay NAME,
        --spec-dir DIR" is --overlay and --spec-dir."""
        return [alt.split(" ", 1)[0] for alt in split_alternatives(self.tag)]

    def description(self):
        return " ".join(self.desc)


def split_alternatives(tag):
    """ "-h, --help" -> ["-h", "--help"]; a comma inside a metavariable
    (--api NAME|KEY,..) does not split."""
    return re.split(r",\s+(?=-)", tag)


class Help:
    def __init__(self, command):
        self.command = command        # "" for kwire itself
        self.summary = ""             # kwire's own first line, after "kwire X.Y.Z: "
        self.synopsis = []            # (form, what it does or "")
        self.blocks = []              # ("para", text) / ("lines", [lines]) in order
        self.items = []               # options
        self.commands = []            # kwire's own help: the commands
        self.exit_status = ""
        self.prose_first = False      # prose before the first item: it describes the command


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def description_column(lines):
    """Where the descriptions of a help's items start: the most common column
    after an item's tag and two or more spaces, or of an item's continuation."""
    cols = Counter()
    for i, line in enumerate(lines):
        if indent_of(line) == 2 and line.strip():
            m = re.search(r"\S\s{2,}(?=\S)", line[2:])
            if m:
                cols[2 + m.end()] += 1
            if i + 1 < len(lines) and indent_of(lines[i + 1]) > 2 and lines[i + 1].strip():
                cols[indent_of(lines[i + 1])] += 1
    return cols.most_common(1)[0][0] if cols else None


def split_item(line, col):
    """An item line into (tag, description start or None). The tag ends at two
    or more spaces, or at one space where it fills the column exactly
    ("  --rename-group PREFIX prefix every group id" in kwire replay)."""
    body = line[2:]
    m = re.search(r"\s{2,}(?=\S)", body)
    start = 2 + m.start() if m else None
    if m and (col is None or start <= col):
        return line[2:start], 2 + m.end()
    if (col and len(line) > col and line[col - 1] == " " and line[col] != " "
            and (m is None or " " in line[col:start])):
        return line[2:col - 1].rstrip(), col
    if m:
        return line[2:start], 2 + m.end()
    return line[2:].rstrip(), None


def parse(text, command):
    h = Help(command)
    lines = text.rstrip("\n").split("\n")
    col = description_column(lines)
    state = "prose"
    para = []
    pre = []
    first_item_block = None       # how many prose blocks came before the first item

    def flush():
        if para:
            h.blocks.append(("para", " ".join(para)))
            para.clear()
        if pre:
            h.blocks.append(("lines", list(pre)))
            pre.clear()

    for n, line in enumerate(lines):
        stripped = line.strip()
        if n == 0 and not command:
            m = re.match(r"kwire \S+: (.+)$", line)
            if m:
                h.summary = m.group(1)
                continue
        if line.startswith("usage: "):
            flush()
            h.synopsis.append(line[len("usage: "):])
            state = "usage"
            continue
        if state == "usage" and line.startswith(" " * len("usage: ")) and stripped.startswith("kwire"):
            h.synopsis.append(stripped)
            continue
        if line.lower().startswith("exit status:"):
            flush()
            h.exit_status = line[len("exit status:"):].strip()
            state = "exit"
            continue
        if state == "exit" and stripped:
            h.exit_status += " " + stripped
            continue
        if not stripped:
            flush()
            state = "prose"
            continue
        if re.fullmatch(r"[a-z]+:", line):       # "commands:", "options:"
            flush()
            state = "commands" if line == "commands:" else "options"
            continue
        ind = indent_of(line)
        if ind == 2 and (line[2] == "-" or state == "commands"):
            flush()
            if first_item_block is None:
                first_item_block = len(h.blocks)
            tag, start = split_item(line, col)
            item = Item(tag)
            if start is not None:
                item.desc.append(line[start:].strip())
            if state == "commands" and line[2] != "-":
                h.commands.append(item)
            else:
                h.items.append(item)
                state = "options"
            continue
        if state in ("commands", "options") and ind > 2 and (h.commands if state == "commands" else h.items):
            (h.commands if state == "commands" else h.items)[-1].desc.append(stripped)
            continue
        if ind >= 2:
            # Indented lines in prose (kwire record's statistics line and its
            # gloss): a new line at the block's indent; deeper ones, and those
            # inside an open parenthesis, continue it.
            if para:
                h.blocks.append(("para", " ".join(para)))
                para.clear()
            if pre and (ind > 2 or pre[-1].count("(") > pre[-1].count(")")):
                pre[-1] += " " + stripped
            else:
                pre.append(stripped)
            state = "prose"
            continue
        if pre:
            h.blocks.append(("lines", list(pre)))
            pre.clear()
        para.append(stripped)
        state = "prose"
    flush()
    h.prose_first = first_item_block is not None and first_item_block > 0
    # "kwire specs NAME [-v VERSION] [options]  wire layout of a message"
    h.synopsis = [split_form(s) for s in h.synopsis]
    return h


def split_form(s):
    m = re.search(r"\s{2,}(?=\S)", s)
    return (s[:m.start()], s[m.end():]) if m else (s.strip(), "")


def run_help(kwire, command):
    args = [kwire] + ([command] if command else []) + ["--help"]
    env = dict(os.environ, LC_ALL="C", ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"kwire_docs.py: {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def read_all(kwire):
    """kwire's own help and that of each command it lists, in its order."""
    top = parse(run_help(kwire, ""), "")
    commands = []
    for item in top.commands:
        name = item.tag.split()[0]
        commands.append(parse(run_help(kwire, name), name))
    if not commands:
        sys.exit("kwire_docs.py: kwire --help lists no commands")
    for c in commands:
        if not c.items:
            sys.exit(f"kwire_docs.py: found no options in kwire {c.command} --help")
    return top, commands


def version_of(kwire):
    out = subprocess.run([kwire, "--version"], capture_output=True, text=True,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0")).stdout.split()
    return out[1] if len(out) > 1 else ""


def summary_of(top, command):
    for item in top.commands:
        if item.tag.split()[0] == command:
            return item.description()
    return ""


# ---- Man pages -----------------------------------------------------------------


def esc(s):
    """Text for roff: backslashes printed, and every - an ASCII hyphen-minus
    (\\-), so options can be copied out of the rendered page."""
    return s.replace("\\", "\\e").replace("-", "\\-")


def line_out(s):
    """A text line that roff does not take for a request."""
    return "\\&" + s if s[:1] in (".", "'") else s


def fonts(s, rules):
    """s with each match of the (regex, font) rules in that font, the rest roman."""
    out, pos = [], 0
    pattern = "|".join(f"({r})" for r, _ in rules)
    for m in re.finditer(pattern, s):
        out.append(esc(s[pos:m.start()]))
        font = rules[m.lastindex - 1][1]
        out.append(f"\\f{font}{esc(m.group(0))}\\fR")
        pos = m.end()
    out.append(esc(s[pos:]))
    return "".join(out)


OPTION = r"(?<![\w-])--?[A-Za-z][\w-]*"


def tag_roff(tag):
    """ "-r FILE" as \\fB-r\\fR \\fIFILE\\fR: names bold, placeholders (FILE,
    HOST:PORT) italic, literal words (json, recorded) bold."""
    parts = []
    for alt in split_alternatives(tag):
        name, _, arg = alt.partition(" ")
        s = f"\\fB{esc(name)}\\fR"
        if arg:
            s += " " + fonts(arg, [(r"[A-Z][A-Za-z0-9_]*", "I"), (r"[a-z][a-z0-9_]*", "B")])
        parts.append(s)
    return ", ".join(parts)


def synopsis_roff(form, command):
    head = "kwire" + (" " + command if command else "")
    rest = form[len(head):] if form.startswith(head) else form
    return f"\\fB{esc(head)}\\fR" + fonts(rest, [(OPTION, "B"), (r"<\w+>|[A-Za-z][\w]*", "I")])


def sentence(s):
    s = s.strip()
    if not s:
        return s
    s = s[0].upper() + s[1:]
    return s if s.endswith((".", ":")) else s + "."


def exit_items(text):
    """ "0 decoded; 1 the file ...; 2 bad usage" into [("0", "decoded"), ...],
    splitting at the semicolons outside parentheses; None if it is not such a list."""
    parts, depth, cur = [], 0, ""
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == ";" and depth == 0 and re.match(r"\s*\d+ ", text[i + 1:]):
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    parts.append(cur.strip())
    items = []
    for p in parts:
        m = re.match(r"(\d+) (.+)$", p)
        if not m:
            return None
        items.append((m.group(1), m.group(2)))
    return items


def page_name(command):
    return "kwire-" + command if command else "kwire"


def man_page(h, top, all_commands, version, date):
    name = page_name(h.command)
    summary = h.summary if not h.command else summary_of(top, h.command)
    out = [
        f'.\\" Generated by tools/kwire_docs.py from `{"kwire " + h.command if h.command else "kwire"} --help`'
        " of the kwire it documents: edit the help text in cli/, not this page.",
        f'.TH "{name.upper()}" "1" "{date}" "kwire {version}" "User Commands"',
        # Left-adjusted and unhyphenated: options and paths must stay whole.
        ".nh",
        ".ad l",
        ".SH NAME",
        f"{esc(name)} \\- {esc(summary)}",
        ".SH SYNOPSIS",
        ".nf",
    ]
    for form, _ in h.synopsis:
        out.append(synopsis_roff(form, h.command))
    out.append(".fi")

    out.append(".SH DESCRIPTION")
    forms = [(f, d) for f, d in h.synopsis if d]
    if forms:
        for f, d in forms:
            out += [".TP", synopsis_roff(f, h.command), line_out(esc(sentence(d)))]
        out.append(".PP")
    elif not h.prose_first and h.command:
        # Help without a description of its own (kwire decode, kwire record
        # before its closing notes): kwire --help's line for the command.
        out += [line_out(esc(sentence(summary))), ".PP"]
    for kind, body in h.blocks:
        if kind == "para":
            out += [line_out(esc(body)), ".PP"]
        else:
            out.append(".RS")
            for i, ln in enumerate(body):
                if i:
                    out.append(".br")
                out.append(line_out(esc(ln)))
            out += [".RE", ".PP"]
    if out[-1] == ".PP":
        out.pop()

    if not h.command:
        out.append(".SH COMMANDS")
        for item in h.commands:
            cmd, _, args = item.tag.partition(" ")
            tag = f"\\fB{esc(cmd)}\\fR" + (" " + fonts(args, [(OPTION, "B"), (r"[A-Z][\w:]*", "I")]) if args else "")
            out += [".TP", tag, line_out(esc(sentence(item.description()))),
                    f"See \\fB{esc(page_name(cmd))}\\fR(1)."]
    if h.items:
        out.append(".SH OPTIONS")
        for item in h.items:
            out += [".TP", tag_roff(item.tag)]
            if item.desc:
                out.append(line_out(esc(item.description())))

    if h.exit_status:
        out.append(".SH EXIT STATUS")
        items = exit_items(h.exit_status)
        if items:
            for code, what in items:
                out += [".TP", f"\\fB{code}\\fR", line_out(esc(sentence(what)))]
        else:
            out.append(line_out(esc(h.exit_status)))

    out.append(".SH SEE ALSO")
    refs = [page_name(c) for c in all_commands if c != h.command]
    if h.command:
        refs = ["kwire"] + refs
    refs.append("tshark")
    out += [f".BR {esc(r)} (1){',' if i + 1 < len(refs) else ''}" for i, r in enumerate(refs)]
    return "\n".join(out) + "\n"


def write_man(top, commands, version, directory):
    os.makedirs(directory, exist_ok=True)
    for f in os.listdir(directory):
        if re.fullmatch(r"kwire(-[\w-]+)?\.1(\.gz)?", f):
            os.remove(os.path.join(directory, f))
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = time.strftime("%Y-%m-%d", time.gmtime(int(epoch) if epoch else None))
    names = [c.command for c in commands]
    for h in [top] + commands:
        text = man_page(h, top, names, version, date).encode()
        path = os.path.join(directory, page_name(h.command) + ".1")
        with open(path, "wb") as f:
            f.write(text)
        # gzip -9n: no file name, time stamp 0, so the same page gives the same bytes.
        with open(path + ".gz", "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as z:
                z.write(text)


# ---- Bash completion ---------------------------------------------------------


def value_kind(arg):
    """How to complete an option's value, from its metavariable: "file",
    "dir", "iface", a list of words, or None (nothing to offer: a number, a
    filter, a host)."""
    if not arg:
        return None
    first = arg.split()[0]
    if re.search(r"FILE|CAPTURE", first):
        return "file"
    if first == "DIR":
        return "dir"
    if first == "IFACE":
        return "iface"
    words = first.split("|")
    if len(words) > 1 and all(re.fullmatch(r"[a-z]+", w) for w in words):
        return words
    return None


def options_of(h):
    """[(name, kind)] of a command's options, in help order; kind as value_kind,
    or "" for an option without a value."""
    opts = []
    for item in h.items:
        for alt in split_alternatives(item.tag):
            name, _, arg = alt.partition(" ")
            opts.append((name, value_kind(arg) if arg else ""))
    return opts


def shell_words(words):
    return " ".join(words)


def completion(top, commands, version):
    # kwire's own options: those it lists, else those its prose names
    # ("'kwire --version' prints the version"); --help always.
    top_opts = []
    prose = " ".join(b for k, b in top.blocks if k == "para")
    for o in [n for item in top.items for n in item.names()] + ["--help"] + re.findall(r"'kwire (--[\w-]+)'", prose):
        if o not in top_opts:
            top_opts.append(o)
    lines = [
        f"# bash completion for kwire {version}. Generated by tools/kwire_docs.py from the",
        "# --help of the kwire it completes: edit the help text in cli/, not this file.",
        "",
        "# Values of options taking a file or a directory. compopt works only while",
        "# bash completes (not when a test calls _kwire itself), hence 2>/dev/null.",
        "_kwire_files() {",
        "    compopt -o filenames 2>/dev/null",
        "    mapfile -t COMPREPLY < <(compgen -f -- \"$1\")",
        "}",
        "_kwire_dirs() {",
        "    compopt -o filenames 2>/dev/null",
        "    mapfile -t COMPREPLY < <(compgen -d -- \"$1\")",
        "}",
        "# Network interfaces (kwire record -i), as Linux lists them, and libpcap's any.",
        "_kwire_ifaces() {",
        "    local ifs",
        "    ifs=\"any $(command ls /sys/class/net 2>/dev/null)\"",
        "    mapfile -t COMPREPLY < <(compgen -W \"$ifs\" -- \"$1\")",
        "}",
        "",
        "_kwire() {",
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\"",
        "    (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
        "    COMPREPLY=()",
        "    if (( COMP_CWORD == 1 )); then",
        f"        mapfile -t COMPREPLY < <(compgen -W '{shell_words([c.command for c in commands] + top_opts)}' -- \"$cur\")",
        "        return 0",
        "    fi",
        "    case \"${COMP_WORDS[1]}\" in",
    ]
    for h in commands:
        opts = options_of(h)
        lines.append(f"    {h.command})")
        by_kind = {}
        for name, kind in opts:
            if kind != "":
                key = kind if isinstance(kind, str) or kind is None else "words:" + " ".join(kind)
                by_kind.setdefault(key, []).append(name)
        cases = []
        for key, names in by_kind.items():
            pat = "|".join(names)
            if key == "file":
                cases.append(f"        {pat}) _kwire_files \"$cur\"; return 0 ;;")
            elif key == "dir":
                cases.append(f"        {pat}) _kwire_dirs \"$cur\"; return 0 ;;")
            elif key == "iface":
                cases.append(f"        {pat}) _kwire_ifaces \"$cur\"; return 0 ;;")
            elif key is None:
                cases.append(f"        {pat}) return 0 ;;  # a value to type: nothing to offer")
            else:
                words = key[len("words:"):]
                cases.append(f"        {pat}) mapfile -t COMPREPLY < <(compgen -W '{words}' -- \"$cur\"); return 0 ;;")
        if cases:
            lines.append("        case \"$prev\" in")
            lines += cases
            lines.append("        esac")
        names = []
        for name, _ in opts:
            if name not in names:
                names.append(name)
        lines.append(f"        mapfile -t COMPREPLY < <(compgen -W '{shell_words(names)}' -- \"$cur\") ;;")
    lines += [
        "    esac",
        "    return 0",
        "}",
        "complete -F _kwire kwire",
    ]
    return "\n".join(lines) + "\n"


# ---- Main --------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kwire", required=True, help="the kwire binary whose --help to read")
    ap.add_argument("--man-dir", help="write kwire.1, kwire-COMMAND.1 and their .gz here")
    ap.add_argument("--completion", help="write the bash completion to this file")
    ap.add_argument("--list-options", metavar="COMMAND", help="print the options of COMMAND ('' for kwire)")
    a = ap.parse_args()
    top, commands = read_all(a.kwire)
    version = version_of(a.kwire)
    if a.list_options is not None:
        helps = {c.command: c for c in commands}
        h = top if a.list_options == "" else helps.get(a.list_options)
        if h is None:
            sys.exit(f"kwire_docs.py: kwire has no command {a.list_options}")
        for item in h.items:
            for n in item.names():
                print(n)
    if a.man_dir:
        write_man(top, commands, version, a.man_dir)
    if a.completion:
        os.makedirs(os.path.dirname(os.path.abspath(a.completion)), exist_ok=True)
        with open(a.completion, "w") as f:
            f.write(completion(top, commands, version))


if __name__ == "__main__":
    main()
