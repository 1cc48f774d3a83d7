"""Runs Debian's tshark with kwire's plugin or Lua dissector, as Wireshark
users do, in a private HOME.

tshark run as root ignores personal plugin folders and WIRESHARK_PLUGIN_DIR,
so as root tshark runs as `nobody` (setpriv) with the plugin in that HOME's
personal plugin folder; as another user it runs as that user. Captures and
scripts are copied into the private directory so `nobody` can read them.
A missing prerequisite is an error with a message, never a skip."""
import json
import os
import shutil
import subprocess
import sys
import tempfile


class Failure(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Failure(msg)


class Tshark:
    def __init__(self, plugin=None, lua=None):
        self.tshark = shutil.which("tshark")
        need(self.tshark, "tshark is not installed (tools/install-deps installs it)")
        self.dir = tempfile.mkdtemp(prefix="kwire-tshark-")
        os.chmod(self.dir, 0o755)
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home)
        self.as_nobody = os.geteuid() == 0
        self.lua = None
        version = self.version()
        if plugin:
            need(os.path.exists(plugin), f"{plugin} is missing: build the kwire-plugin target")
            d = os.path.join(self.home, ".local/lib/wireshark/plugins", version, "epan")
            os.makedirs(d)
            shutil.copy(plugin, os.path.join(d, "kwire.so"))
        if lua:
            need(os.path.exists(lua), f"{lua} is missing: build the kwire-lua target")
            self.lua = self.file(lua)
        if self.as_nobody:
            need(shutil.which("setpriv"), "setpriv (util-linux) is needed to run tshark as nobody")
            subprocess.run(["chown", "-R", "nobody", self.dir], check=True)

    def version(self):
        out = subprocess.run([self.tshark, "--version"], capture_output=True, text=True).stdout
        first = out.splitlines()[0]  # "TShark (Wireshark) 4.0.17 (Git ...)"
        v = first.split()[2].split(".")
        return f"{v[0]}.{v[1]}"

    def file(self, path):
        """A copy of `path` that tshark's user can read."""
        dst = os.path.join(self.dir, "in-" + os.path.basename(path))
        if not os.path.exists(dst):
            shutil.copy(path, dst)
            os.chmod(dst, 0o644)
        return dst

    def run(self, args, check=True):
        cmd = [self.tshark] + list(args)
        if self.lua:
            cmd += ["-X", f"lua_script:{self.lua}"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "LC_ALL": "C.UTF-8"}
        if self.as_nobody:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.dir)
        if check and p.returncode != 0:
            raise Failure(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
        return p

    def json(self, capture, extra=()):
        p = self.run(["-r", self.file(capture), "-T", "json"] + list(extra))
        return json.loads(p.stdout, object_pairs_hook=lambda pairs: pairs)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def kwire_json(kwire, capture, extra=()):
    p = subprocess.run([kwire, "decode", "-r", capture, "-T", "json"] + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f"kwire decode -r {capture} exited {p.returncode}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def main(tests):
    """Runs the named test functions; exits 1 on the first failure."""
    try:
        for t in tests:
            t()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
