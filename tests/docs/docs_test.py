#!/usr/bin/env python3
"""The shell examples of README.md and docs/*.md, run and compared with what
the documents show.

A test block is a fenced code block whose first line starts with `$ ` and that
holds at least one line of output. Each `$ ` line is a command (a line ending
in `\\` continues on the next one); the lines up to the next `$ ` line are its
output, stdout and stderr together. Conventions (docs/testing.md, "Examples
that are tested", says the same for writers):

- Commands run with bash in the repository root. `kwire` or `build/kwire` at
  the start of a command or after a `|` is the kwire under test. `/tmp/` in a
  command is a private directory of the test, shown as `/tmp/` in the output.
  tshark runs with the plugin under test in a private HOME (as `nobody` when
  the test runs as root, as tests/wireshark does).
- A line of output that is `...` alone (indented or not) stands for any number
  of lines, none included. Trailing blanks are ignored.
- HTML comment lines right above the opening fence are directives:
    <!-- docs-test: mask REGEX -->   parts of the output that vary from run to
                                     run; what REGEX matches is masked in the
                                     shown and in the actual output alike
    <!-- docs-test: skip REASON -->  the block is not run (a live broker, live
                                     capture...); skips are counted by REASON

A changed output fails with a diff. Relative links and images must point at
files and headings that exist. README.md stays under 300 lines. Before passing, the test checks itself: in
every block that passed, the first and last shown lines, altered or left out,
must make the comparison fail.

usage: docs_test.py KWIRE SOURCE_DIR BUILD_DIR [--only=FILE] [--actual] [--no-plugin]
  --only=FILE   only this document (README.md, docs/decode.md, ...); repeatable
  --actual      print what each command prints now
  --no-plugin   the build has no Wireshark plugin: blocks that run tshark are skipped
"""
import collections
import difflib
import glob
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

ELLIPSIS = "..."
# README.md is read in a few minutes: what kwire is, the two commands, install,
# one short example per command; the rest belongs in docs/.
README_LINES = 300
COMMAND_TIMEOUT = int(os.environ.get("KWIRE_DOCS_TIMEOUT", "120"))
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
# What a tested block may run; anything else (make, a broker, a live capture)
# must be marked skip, so that the test never changes the system.
ALLOWED = {"tshark", "capinfos", "editcap", "head", "tail", "sed", "grep", "cut", "awk", "sort", "uniq", "wc",
           "cat", "tr", "jq", "cmp", "ls"}
KWIRE_CMD = re.compile(r"(^|\|\s*)(?:build/kwire|kwire)(?=\s|$)")


def first_words(cmd):
    """The command word of every part of a pipeline or list."""
    lex = shlex.shlex(cmd.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    words, expect = [], True
    for tok in lex:
        if tok in ("|", "||", "&&", ";", "&", "(", ")", ";;", "\n"):
            expect = True
        elif tok and tok[0] in "<>":
            next(lex, None)  # a redirection: the file after it is no command
        elif expect:
            if re.match(r"^\w+=", tok):
                continue  # VAR=value before the command
            words.append(tok)
            expect = False
    return words


class Block:
    def __init__(self, doc, line, lines, directives):
        self.doc, self.line, self.lines = doc, line, lines
        self.masks = [re.compile(arg) for kind, arg in directives if kind == "mask"]
        self.skip = next((arg for kind, arg in directives if kind == "skip"), None)
        self.bad = [f"unknown directive '{kind}'" for kind, _ in directives if kind not in ("mask", "skip")]
        self.steps = []  # (command, shown output lines)
        i = 0
        while i < len(lines):
            cmd = lines[i][2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd + "\n" + lines[i]
            out = []
            i += 1
            while i < len(lines) and not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
            self.steps.append((cmd, out))

    def where(self):
        return f"{self.doc}:{self.line}"


def blocks_of(path, rel):
    """Every fenced block of `path` that starts with `$ ` and shows output."""
    text = open(path, encoding="utf-8").read().split("\n")
    found = []
    i = 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m.group(1)), m.group(2)
        start = i
        body = []
        i += 1
        while i < len(text):
            close = FENCE.match(text[i])
            if close and close.group(2).startswith(fence[0] * len(fence)) and not close.group(3).strip():
                break
            line = text[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        i += 1
        if not body or not body[0].startswith("$ "):
            continue
        if all(l.startswith("$ ") or l.endswith("\\") or not l.strip() for l in body):
            continue  # commands without output: a listing, not a test
        directives = []
        j = start - 1
        while j >= 0 and DIRECTIVE.match(text[j]):
            d = DIRECTIVE.match(text[j])
            directives.insert(0, (d.group(1), d.group(2)))
            j -= 1
        found.append(Block(rel, start + 1, body, directives))
    return found


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor for a heading."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def prose_lines(path):
    """The lines of a Markdown file outside fenced blocks, inline code removed."""
    out, fenced = [], None
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = FENCE.match(line)
        if m and (fenced is None or m.group(2).startswith(fenced)):
            fenced = None if fenced else m.group(2)
            continue
        if fenced is None:
            out.append((n, re.sub(r"`[^`]*`", "", line) if not line.lstrip().startswith("#") else line))
    return out


def anchors(path):
    seen, result = collections.Counter(), set()
    for _, line in prose_lines(path):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            a = slug(m.group(1))
            result.add(a if not seen[a] else f"{a}-{seen[a]}")
            seen[a] += 1
    return result


def check_links(path, rel):
    """Relative links and images of a document that point nowhere."""
    bad, count = [], 0
    for n, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            count += 1
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                bad.append(f"{rel}:{n}: link to {target}: {os.path.relpath(dest, os.path.dirname(path))} does not exist")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{rel}:{n}: link to {target}: no heading #{anchor} in {os.path.basename(dest)}")
    return bad, count


def mask(lines, masks):
    out = []
    for l in lines:
        l = l.rstrip()
        if l.strip() != ELLIPSIS:
            for m in masks:
                l = m.sub("{masked}", l)
        out.append(l)
    return out


def matches(shown, actual):
    """Whether the shown lines (with `...` lines) match the actual lines."""
    n, m = len(shown), len(actual)
    # reach[j]: shown[:i] can match actual[:j]
    reach = [True] + [False] * m
    for i in range(n):
        nxt = [False] * (m + 1)
        if shown[i].strip() == ELLIPSIS:
            seen = False
            for j in range(m + 1):
                seen = seen or reach[j]
                nxt[j] = seen
        else:
            for j in range(m):
                if reach[j] and actual[j] == shown[i]:
                    nxt[j + 1] = True
        reach = nxt
    return reach[m]


def expected_for_diff(shown, actual):
    """The shown lines with each `...` replaced by the actual lines it most
    likely stands for, so that a diff shows only what really changed."""
    out, j = [], 0
    for i, line in enumerate(shown):
        if line.strip() != ELLIPSIS:
            out.append(line)
            if j < len(actual) and actual[j] == line:
                j += 1
            else:  # further down (lines were added), or changed
                j = next((k + 1 for k in range(j, len(actual)) if actual[k] == line), j + 1)
            continue
        nxt = next((s for s in shown[i + 1:] if s.strip() != ELLIPSIS), None)
        k = len(actual) if nxt is None else next((k for k in range(j, len(actual)) if actual[k] == nxt), None)
        if k is None:
            out.append(line)
        else:
            out += actual[j:k]
            j = k
    return out


def compare(block, step, shown, actual):
    """None if the shown output matches, else a message with a diff."""
    s, a = mask(shown, block.masks), mask(actual, block.masks)
    while a and not a[-1].strip():
        a.pop()
    while s and not s[-1].strip():
        s.pop()
    if matches(s, a):
        return None
    diff = difflib.unified_diff(expected_for_diff(s, a), a, "shown in " + block.where(), "actual output", lineterm="", n=2)
    return f"{block.where()}: the output of `{step}` differs from the document:\n" + "\n".join(diff)


class Runner:
    def __init__(self, kwire, source, build):
        self.kwire, self.source, self.build = os.path.abspath(kwire), os.path.abspath(source), build
        self.work = tempfile.mkdtemp(prefix="kwire-docs-")
        os.chmod(self.work, 0o755)
        self.tmp = os.path.join(self.work, "tmp")
        os.makedirs(self.tmp)
        os.chmod(self.tmp, 0o1777)
        self.bin = os.path.join(self.work, "bin")
        os.makedirs(self.bin)
        self.tshark_ready = None

    def setup_tshark(self):
        """A `tshark` first in PATH: the real one with the plugin under test in
        a private HOME, as `nobody` when running as root (root's tshark ignores
        personal plugin folders)."""
        if self.tshark_ready is not None:
            return self.tshark_ready
        real = shutil.which("tshark")
        plugin = os.path.join(self.build, "wireshark", "kwire.so")
        if not real:
            self.tshark_ready = "tshark is not installed (tools/install-deps installs it)"
            return self.tshark_ready
        if not os.path.exists(plugin):
            self.tshark_ready = f"{plugin} is missing: build the kwire-plugin target"
            return self.tshark_ready
        first = subprocess.run([real, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        version = ".".join(first.split()[2].split(".")[:2])
        home = os.path.join(self.work, "home")
        d = os.path.join(home, ".local/lib/wireshark/plugins", version, "epan")
        os.makedirs(d)
        shutil.copy(plugin, os.path.join(d, "kwire.so"))
        wrapper = os.path.join(self.bin, "tshark")
        as_nobody = os.geteuid() == 0
        prefix = "setpriv --reuid=nobody --regid=nogroup --clear-groups " if as_nobody else ""
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nHOME="{home}" exec {prefix}"{real}" "$@"\n')
        os.chmod(wrapper, 0o755)
        if as_nobody:
            if not shutil.which("setpriv"):
                self.tshark_ready = "setpriv (util-linux) is needed to run tshark as nobody"
                return self.tshark_ready
            subprocess.run(["chown", "-R", "nobody", home], check=True)
            probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                    "test", "-r", os.path.join(self.source, "captures", "demo.pcapng")])
            if probe.returncode != 0:
                # nobody cannot read the tree: tshark reads a copy of captures/
                self.cwd_for_tshark = os.path.join(self.work, "tree")
                shutil.copytree(os.path.join(self.source, "captures"), os.path.join(self.cwd_for_tshark, "captures"))
                for root, dirs, files in os.walk(self.work):
                    for x in dirs + files:
                        os.chmod(os.path.join(root, x), os.stat(os.path.join(root, x)).st_mode | stat.S_IROTH | stat.S_IXOTH)
        self.tshark_ready = ""
        return self.tshark_ready

    cwd_for_tshark = None

    def run(self, cmd):
        cmd = cmd.replace("/tmp/", self.tmp + "/")
        cmd = "\n".join(KWIRE_CMD.sub(lambda m: m.group(1) + self.kwire, part) for part in cmd.split("\n"))
        cwd = self.source
        if re.search(r"(^|[|;&(]\s*)tshark\b", cmd):
            problem = self.setup_tshark()
            if problem:
                return None, problem
            cwd = self.cwd_for_tshark or cwd
        env = dict(os.environ, LC_ALL="C.UTF-8", PATH=self.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        env.pop("SSLKEYLOGFILE", None)
        bad = [w for w in first_words(cmd) if w not in ALLOWED and w != self.kwire]
        if bad:
            return None, (f"`{bad[0]}` is not a command the docs test runs (allowed: kwire, {', '.join(sorted(ALLOWED))}); "
                          "mark the block <!-- docs-test: skip REASON -->")
        p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            stdout, _ = p.communicate(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return None, f"no end after {COMMAND_TIMEOUT} s (a live example? mark it <!-- docs-test: skip REASON -->)"
        out = stdout.decode("utf-8", errors="replace").replace(self.tmp + "/", "/tmp/").replace(self.tmp, "/tmp")
        return out.split("\n"), None

    def cleanup(self):
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    args = [a for a in sys.argv[1:] if a and not a.startswith("--")]
    opts = [a for a in sys.argv[1:] if a.startswith("--")]
    if len(args) < 3:
        print(__doc__)
        sys.exit(2)
    kwire, source, build = args[0], args[1], args[2]
    only = [a.split("=", 1)[1] for a in opts if a.startswith("--only=")]
    show_actual = "--actual" in opts
    no_plugin = "--no-plugin" in opts  # a build without the Wireshark plugin (KWIRE_WIRESHARK=OFF)
    docs = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    if only:
        docs = [d for d in docs if os.path.relpath(d, source) in only]
    blocks = []
    for path in docs:
        blocks += blocks_of(path, os.path.relpath(path, source))

    runner = Runner(kwire, source, build)
    failures, skipped, passed, masked, commands = [], collections.Counter(), [], 0, 0
    links = 0
    for path in docs:
        bad, n = check_links(path, os.path.relpath(path, source))
        failures += bad
        links += n
    if not only and not blocks:
        failures.append("no examples with output found in README.md and docs/*.md")
    readme = os.path.join(source, "README.md")
    if readme in docs:
        with open(readme, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines >= README_LINES:
            failures.append(f"README.md: {lines} lines, the front page stays under {README_LINES}: move the "
                            "detail to a guide in docs/ and link to it")
    try:
        for b in blocks:
            if b.bad:
                failures.append(f"{b.where()}: " + "; ".join(b.bad))
                continue
            if b.skip is not None:
                skipped[b.skip or "(no reason given)"] += 1
                continue
            if no_plugin and any("tshark" in first_words(cmd) for cmd, _ in b.steps):
                skipped["needs the Wireshark plugin, not built here (KWIRE_WIRESHARK=OFF)"] += 1
                continue
            ok = True
            results = []
            for cmd, shown in b.steps:
                actual, problem = runner.run(cmd)
                commands += 1
                if problem:
                    failures.append(f"{b.where()}: cannot run `{cmd}`: {problem}")
                    ok = False
                    break
                if show_actual:
                    print(f"--- {b.where()}: $ {cmd}\n" + "\n".join(actual))
                msg = compare(b, cmd, shown, actual)
                results.append((cmd, shown, actual))
                if msg:
                    failures.append(msg)
                    ok = False
            if ok:
                passed.append((b, results))
                masked += 1 if b.masks else 0

        # Self-check: in every block that passed, altering its first or last
        # shown line, or leaving it out, must fail the comparison (a mask that
        # swallows whole lines fails here too).
        if passed:
            checked = 0
            for b, results in passed:
                for cmd, shown, actual in results:
                    literal = [i for i, l in enumerate(shown) if l.strip() and l.strip() != ELLIPSIS]
                    for i in sorted({literal[0], literal[-1]} if literal else ()):
                        changed = list(shown)
                        changed[i] = changed[i] + " (altered)"
                        if compare(b, cmd, changed, actual) is None:
                            failures.append(f"self-check: {b.where()}: `{cmd}` still matches with a shown line "
                                            f"altered to {changed[i]!r}")
                        near = [shown[k].strip() for k in (i - 1, i + 1) if 0 <= k < len(shown)]
                        if ELLIPSIS not in near and shown[i].strip() not in near and \
                                compare(b, cmd, shown[:i] + shown[i + 1:], actual) is None:
                            failures.append(f"self-check: {b.where()}: `{cmd}` still matches without the shown "
                                            f"line {shown[i]!r}")
                    checked += 1 if literal else 0
            if not any(f.startswith("self-check") for f in failures):
                print(f"self-check: the outputs of {checked} commands, each with a shown line altered or left "
                      "out, no longer match")
    finally:
        runner.cleanup()

    print(f"docs: {len(blocks)} blocks with output in {len(docs)} documents: "
          f"{len(passed)} passed ({masked} of them with masks), "
          f"{len(blocks) - len(passed) - sum(skipped.values())} failed, {sum(skipped.values())} skipped; "
          f"{commands} commands run; {links} relative links checked")
    for reason, n in sorted(skipped.items()):
        print(f"  skipped {n}: {reason}")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
