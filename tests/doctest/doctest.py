#!/usr/bin/python3
"""Executable docs: runs the documented shell blocks as a reader would.

Fenced blocks whose info string is exactly `sh` are commands a reader is
meant to run; `text` (or a language name) is output, config or code. This
runner takes the `sh` blocks of named sections of README.md, in a fresh
scratch copy of the source tree, one line at a time, with ports it chooses
itself (8080 and 9901 in the docs and in the scratch etc/weft.conf become
free ports). What a command must print comes from the scenario below, not
from the docs' comments, and a command that fails, or prints something
else, fails the run naming FILE:LINE of the documented command. A doc change
that breaks a command therefore breaks the build.

  doctest.py --tree SRC [--scenario NAME[,NAME...]] [--doc REL=FILE] [--prebuilt BUILD]
  doctest.py --tree SRC --lint      every fence in README.md and docs/*.md has an info string

--doc replaces a documentation file by another (the self-test breaks a
command in a copy); --prebuilt links an existing build's weft binary into
the scratch tree instead of building it (for scenarios that do not run
packaging/run.sh, which builds).
"""
import argparse
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class DocFailure(Exception):
    pass


def free_port(_taken=set()):
    """A free port below the kernel's ephemeral range. A port the kernel
    chose (bind to 0) and this process released stays in that range, where
    the next test's `listen = "127.0.0.1:0"` or any outgoing connection may
    be given it before the documented server binds it; below the range only
    another explicit choice like this one can take it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    rng = random.Random(os.getpid() ^ int(time.time() * 1e6))
    for _ in range(200):
        port = rng.randrange(10000, max(low, 10001))
        if port in _taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        _taken.add(port)
        return port
    raise RuntimeError(f"no free port in 10000-{low - 1} after 200 tries")


def sh_blocks(path, heading):
    """The `sh` blocks under a `## heading` (up to the next heading of that level or above):
    a list of blocks, each a list of (line number, command) with continuations joined."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, inside, fence, level = [], False, None, 0
    for i, line in enumerate(lines, 1):
        m = re.match(r"^(#+) (.*)$", line)
        if fence is None and m:
            if inside and len(m.group(1)) <= level:
                break
            if m.group(2).strip() == heading:
                inside, level = True, len(m.group(1))
            continue
        if not inside:
            continue
        if fence is None and line.startswith("```"):
            fence = line[3:].strip()
            if fence == "sh":
                blocks.append([])
            continue
        if fence is not None and line.startswith("```"):
            fence = None
            continue
        if fence == "sh":
            cur = blocks[-1]
            if cur and cur[-1][1].endswith("\\"):
                cur[-1] = (cur[-1][0], cur[-1][1][:-1] + " " + line.strip())
            elif line.strip() and not line.strip().startswith("#"):
                cur.append((i, line))
            elif cur and line.startswith(" ") and line.strip().startswith("#"):
                pass  # a comment continued under the previous command
    if not inside:
        raise DocFailure(f"{path}: no section '{heading}'")
    return blocks


def lint(tree):
    bad = []
    for path in [os.path.join(tree, "README.md")] + sorted(glob.glob(os.path.join(tree, "docs", "*.md"))):
        fence = None
        for i, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("```"):
                if fence is None:
                    fence = line[3:].strip()
                    if fence == "":
                        bad.append(f"{os.path.relpath(path, tree)}:{i}: a fence without an info string "
                                   "(```sh for commands to run, ```text for output and snippets)")
                else:
                    fence = None
    return bad


class Runner:
    def __init__(self, tree, docs, log):
        self.tree = tree        # the scratch copy
        self.docs = docs        # REL -> path of the file to read blocks from
        self.log = log
        self.port = free_port()
        self.admin = free_port()
        self.dev_port = free_port()
        self.dev_admin = free_port()
        self.background = []    # (name, Popen, log path)
        self.env = dict(os.environ)
        for var in ("WEFT_PLUGIN_PATH", "PORT", "WEFT_CONF", "NOTIFY_SOCKET"):
            self.env.pop(var, None)
        self.env["EDITOR"] = os.path.join(tree, ".doctest-editor")

    def say(self, msg):
        print(msg, file=self.log, flush=True)

    def ports(self, text):
        return text.replace("8080", str(self.port)).replace("9901", str(self.admin))

    def editor(self, script):
        """$EDITOR for the next edit: a script doing what the reader would type."""
        path = self.env["EDITOR"]
        with open(path, "w") as f:
            f.write("#!/bin/sh\nset -eu\n" + script + "\n")
        os.chmod(path, 0o755)

    def run(self, where, cmd, expect=None, timeout=120, retry_s=0):
        """Runs one documented command; `expect`: text its output must contain."""
        cmd = self.ports(cmd)
        self.say(f"$ {cmd}    [{where}]")
        deadline = time.time() + retry_s
        while True:
            p = subprocess.run(["/bin/sh", "-c", cmd], cwd=self.tree, env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout)
            out = p.stdout.decode(errors="replace")
            ok = p.returncode == 0 and (expect is None or expect in out)
            if ok or time.time() >= deadline:
                break
            time.sleep(0.2)
        self.say(out.rstrip())
        if p.returncode != 0:
            raise DocFailure(f"{where}: `{cmd}` exited with status {p.returncode}:\n{out}")
        if expect is not None and expect not in out:
            raise DocFailure(f"{where}: `{cmd}` printed no '{expect}':\n{out}")
        return out

    def start(self, where, cmd, ready, timeout=600):
        """A documented command that keeps running (a server): started, then
        waited for until its output shows `ready`."""
        cmd = self.ports(cmd)
        self.say(f"$ {cmd} &    [{where}]")
        logpath = os.path.join(self.tree, f".doctest-{len(self.background)}.log")
        logf = open(logpath, "wb")
        p = subprocess.Popen(["/bin/sh", "-c", "exec " + cmd], cwd=self.tree, env=self.env, stdout=logf,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.background.append((where, p, logpath))
        deadline = time.time() + timeout
        while True:
            text = open(logpath, encoding="utf-8", errors="replace").read()
            if re.search(ready, text):
                return p
            if p.poll() is not None:
                raise DocFailure(f"{where}: `{cmd}` exited with status {p.returncode} before it served:\n{text}")
            if time.time() > deadline:
                raise DocFailure(f"{where}: `{cmd}` did not print /{ready}/ within {timeout} s:\n{text}")
            time.sleep(0.2)

    def stop(self, p, timeout=60):
        for where, q, logpath in self.background:
            if q is p:
                break
        os.kill(p.pid, signal.SIGTERM)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise DocFailure(f"{where}: did not stop within {timeout} s of SIGTERM")
        self.background = [b for b in self.background if b[1] is not p]
        self.say(open(logpath, encoding="utf-8", errors="replace").read().rstrip())
        if rc != 0:
            raise DocFailure(f"{where}: exited with status {rc} after SIGTERM")

    def cleanup(self):
        for where, p, logpath in self.background:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(30)
            except Exception:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.say(f"--- {where} (stopped by the runner):\n" +
                     open(logpath, encoding="utf-8", errors="replace").read().rstrip())
        self.background = []

    def blocks(self, rel, heading):
        path = self.docs.get(rel, os.path.join(self.tree, rel))
        return [[(f"{rel}:{n}", cmd.strip()) for n, cmd in b] for b in sh_blocks(path, heading)]


def take(block, pattern, where_doc):
    """The block's command matching `pattern` (each is run exactly once, in order)."""
    while block:
        where, cmd = block.pop(0)
        if re.search(pattern, cmd):
            return where, cmd
        raise DocFailure(f"{where}: expected a command matching /{pattern}/ here, found `{cmd}` "
                         f"(update the scenario in tests/doctest/doctest.py with the docs)")
    raise DocFailure(f"{where_doc}: no command matching /{pattern}/ (the scenario expects it)")


def done(block, where_doc):
    if block:
        where, cmd = block[0]
        raise DocFailure(f"{where}: `{cmd}` is not run by the doc test (update tests/doctest/doctest.py)")


# ---- scenarios ----------------------------------------------------------------

def quickstart(r):
    """README's quick start, server part: run.sh builds and serves; the curls answer."""
    doc = "README.md"
    b1, b2 = r.blocks(doc, "Quick start (Debian 12 or 13)")[:2]
    where, cmd = take(b1, r"^packaging/run\.sh", doc)
    r.server = r.start(where, cmd.split("#")[0].strip(), r"info\s+listening on http://")
    take(b1, r"^packaging/test\.sh", doc)  # the suite itself: not run from inside the suite
    done(b1, doc)
    for pattern, want in ((r"/hello\b", "hello"), (r"/coroutine/delay", "Ping_1"), (r"/pool/cpu", "Hello_1")):
        where, cmd = take(b2, pattern, doc)
        r.run(where, cmd, want)
    done(b2, doc)


def operator(r):
    """README's operator loop against the quick start's server: edit, reload, check."""
    doc = "README.md"
    (b,) = r.blocks(doc, "Operator's loop: edit, reload, check")[:1]
    r.editor("sed -i 's|^routes = (|routes = (\\n  { path = \"/doctest\"; plugin = \"hello\"; dispatch = \"reactive\"; "
             "options = { greeting = \"edited\"; }; },|' \"$1\"")
    where, cmd = take(b, r"^\$EDITOR etc/weft\.conf", doc)
    r.run(where, cmd)
    where, cmd = take(b, r"weft reload -c etc/weft\.conf", doc)
    r.run(where, cmd, "asked pid")
    where, cmd = take(b, r"/status", doc)
    r.run(where, cmd, '"generation": 2', retry_s=10)
    r.run(f"{doc} (the edit)", "curl -s localhost:8080/doctest", "edited", retry_s=10)
    done(b, doc)


def author(r):
    """README's plugin author's loop: new-plugin, weft dev with an edit, then
    make + drop-in (greeter.so and greeter.routes) into the quick start's server."""
    doc = "README.md"
    b1, b2 = r.blocks(doc, "Plugin author's loop: scaffold, save, refresh")[:2]
    where, cmd = take(b1, r"weft new-plugin greeter \S*plugins-dev", doc)
    r.run(where, cmd, "greeter.routes")
    # The docs' way to move weft dev's ports: plugins-dev/weft.dev.conf.
    with open(os.path.join(r.tree, "plugins-dev", "weft.dev.conf"), "w") as f:
        f.write(f'listen = ["127.0.0.1:{r.dev_port}"];\nadmin = {{ listen = "127.0.0.1:{r.dev_admin}"; }};\n')
    where, cmd = take(b1, r"weft dev plugins-dev", doc)
    dev = r.start(where, cmd.split("#")[0].strip(), r"generation \d+ serving|dev: built greeter")
    url = f"http://127.0.0.1:{r.dev_port}/greeter"
    r.run(f"{where} (serves /greeter)", f"curl -s {url}", "Hello from greeter", retry_s=60)
    r.editor("sed -i 's/Hello from/Edited in/' \"$1\"")
    where, cmd = take(b1, r"^\$EDITOR plugins-dev/greeter/greeter\.c", doc)
    r.run(where, cmd)
    r.run(f"{where} (rebuilt and swapped in)", f"curl -s {url}", "Edited in greeter", retry_s=60)
    done(b1, doc)
    r.stop(dev)
    where, cmd = take(b2, r"^make -C plugins-dev/greeter$", doc)
    r.run(where, cmd)
    where, cmd = take(b2, r"make -C plugins-dev/greeter install PLUGIN_DIR=", doc)
    r.run(where, cmd)
    where, cmd = take(b2, r"/greeter", doc)
    # The server reloads within a second of the two files landing.
    r.run(where, cmd, "Edited in greeter", retry_s=10)
    done(b2, doc)


def stop_server(r):
    r.stop(r.server)


SCENARIOS = {"quickstart": quickstart, "operator": operator, "author": author}
NEEDS_SERVER = {"operator", "author"}


def scratch_copy(src, dst):
    """What git tracks or would track: no build trees, no .git."""
    files = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           stdout=subprocess.PIPE, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        s = os.path.join(src, rel)
        if not os.path.isfile(s):
            continue  # deleted in the work tree
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True)
    ap.add_argument("--scenario", default="quickstart,operator,author")
    ap.add_argument("--doc", action="append", default=[])
    ap.add_argument("--prebuilt")
    ap.add_argument("--lint", action="store_true")
    a = ap.parse_args()
    if a.lint:
        bad = lint(a.tree)
        print("\n".join(bad) if bad else "every fence has an info string")
        return 1 if bad else 0
    names = a.scenario.split(",")
    for n in names:
        if n not in SCENARIOS:
            print(f"doctest: no scenario {n} (have {', '.join(SCENARIOS)})", file=sys.stderr)
            return 2
    # The server comes from the quick start; nothing builds it otherwise.
    with_server = "quickstart" in names
    if not with_server and NEEDS_SERVER & set(names) - {"author"}:
        print("doctest: operator needs quickstart", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="weft-doctest-")
    os.chmod(scratch, 0o755)  # weft refuses plugins under group-writable directories
    r = None
    try:
        scratch_copy(a.tree, scratch)
        docs = dict(d.split("=", 1) for d in a.doc)
        r = Runner(scratch, docs, sys.stdout)
        with open(os.path.join(scratch, "etc", "weft.conf")) as f:
            conf = f.read()
        with open(os.path.join(scratch, "etc", "weft.conf"), "w") as f:
            f.write(r.ports(conf))
        if a.prebuilt:
            if with_server:
                print("doctest: --prebuilt cannot be used with quickstart (run.sh builds)", file=sys.stderr)
                return 2
            os.makedirs(os.path.join(scratch, "build", "server"))
            os.symlink(os.path.join(a.prebuilt, "server", "weft"), os.path.join(scratch, "build", "server", "weft"))
        r.say(f"doctest: scratch tree {scratch}; ports {r.port} (8080), {r.admin} (9901), weft dev {r.dev_port}")
        for n in names:
            r.say(f"=== {n}: {SCENARIOS[n].__doc__.strip()}")
            SCENARIOS[n](r)
            r.say(f"PASS: {n}")
        if with_server:
            stop_server(r)
        return 0
    except DocFailure as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    finally:
        if r is not None:
            r.cleanup()
        subprocess.run(["rm", "-rf", scratch])


if __name__ == "__main__":
    sys.exit(main())
