#!/usr/bin/env python3
"""The `kwire streams --html` page of a committed capture in headless Chromium.

For each capture: the page loads without a console message (Chromium's own
log, --enable-logging=stderr, carries every console.* call and uncaught
exception as INFO:CONSOLE), its script ran to the end (it marks <body>), every
member that sent a StreamsGroupHeartbeat (taken from `kwire decode -T json`,
not from the streams report) has a timeline lane in the DOM, and a screenshot
of the page is not blank (ImageMagick counts its colours).

usage: streams_page_test.py KWIRE SOURCE_DIR CAPTURE...
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Lanes(HTMLParser):
    def __init__(self):
        super().__init__()
        self.lanes, self.ready = set(), False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "g" and "lane" in (a.get("class") or "").split():
            self.lanes.add(a.get("data-member"))
        if tag == "body" and a.get("data-ready") == "1":
            self.ready = True


def chromium(args, profile):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return r, console


def main():
    kwire, source, captures = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not shutil.which("chromium"):
        fail("chromium is not installed (tools/install-deps installs it)")
    work = tempfile.mkdtemp(prefix="kwire-streams-page-")
    try:
        for name in captures:
            cap = os.path.join(source, "captures", name)
            page = os.path.join(work, name + ".html")
            r = subprocess.run([kwire, "streams", "-r", cap, "--html", page], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{name}: kwire streams exited {r.returncode}: {r.stderr}")
            d = subprocess.run([kwire, "decode", "-r", cap, "-T", "json", "--api", "StreamsGroupHeartbeat"],
                               capture_output=True, text=True, check=True)
            members = set()
            for line in d.stdout.splitlines():
                m = json.loads(line)
                if m.get("direction") == "request" and m["body"]["memberId"]:
                    members.add(m["body"]["memberId"])
            if not members:
                fail(f"{name}: no heartbeating members in the decode output")

            r, console = chromium(["--dump-dom", "file://" + page], os.path.join(work, "p1"))
            if r.returncode != 0:
                fail(f"{name}: chromium --dump-dom exited {r.returncode}")
            if console:
                fail(f"{name}: console messages:\n" + "\n".join(console))
            lanes = Lanes()
            lanes.feed(r.stdout)
            if not lanes.ready:
                fail(f"{name}: the page's script did not run to the end")
            if lanes.lanes != members:
                fail(f"{name}: lanes {sorted(lanes.lanes)} != heartbeating members {sorted(members)}")

            shot = os.path.join(work, name + ".png")
            r, console = chromium(["--window-size=1280,1600", "--screenshot=" + shot, "file://" + page],
                                  os.path.join(work, "p2"))
            if console:
                fail(f"{name}: console messages:\n" + "\n".join(console))
            if not os.path.exists(shot):
                fail(f"{name}: no screenshot")
            colours = int(subprocess.run(["identify", "-format", "%k", shot], capture_output=True, text=True,
                                         check=True).stdout)
            if colours < 50:
                fail(f"{name}: the screenshot has only {colours} colours: blank page?")
            print(f"ok {name}: {len(members)} member lanes, no console messages, screenshot {colours} colours")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
