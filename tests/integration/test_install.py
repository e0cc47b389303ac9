"""test_install.py: `make install DESTDIR=...` and what it installs.

Runs the build tree's install into a temp DESTDIR and checks:
- the programs (shardstore, shard), libshard.so with shard.h and shard.pc,
  the config file under SYSCONFDIR/shardstore/, the systemd unit and its
  sysusers.d entry, and the manual pages are all there;
- both programs print the version (PACKAGE_VERSION, plus git describe in a
  checkout) and shardstore's --help has every section and option;
- the installed config file loads; a second install keeps an edited copy
  and puts the new one beside it;
- a program builds against the installed header and library, and
  pkg-config reads shard.pc;
- the unit names the installed paths, the dedicated user, the data dir,
  Restart=on-failure, limits, hardening, SIGTERM with a stop timeout longer
  than the server's drain grace, and SIGHUP for reload; when
  systemd-analyze exists, `systemd-analyze verify` accepts it silently.
"""
import configparser
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

BUILDDIR = os.environ.get("SHARD_BUILDDIR", ".")


def make_vars():
    """The installation directories of the build's Makefile, expanded."""
    raw = {}
    with open(os.path.join(BUILDDIR, "Makefile")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z_]+) = (.*)$", line.rstrip("\n"))
            if m:
                raw[m.group(1)] = m.group(2).strip()

    def expand(v):
        for _ in range(10):
            v = re.sub(r"\$\{(\w+)\}|\$\((\w+)\)", lambda m: raw.get(m.group(1) or m.group(2), ""), v)
        return v

    names = ("prefix", "bindir", "libdir", "includedir", "sysconfdir", "mandir", "PACKAGE_VERSION",
             "systemdunitdir", "sysusersdir", "CC", "SAN_CFLAGS")
    return {n: expand(raw.get(n, "")) for n in names}


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def make_install(destdir, target="install"):
    env = dict(os.environ)
    # Not a sub-make of the `make check` that runs this test.
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    r = run(["make", "-s", "-C", BUILDDIR, target, "DESTDIR=" + destdir], env=env)
    if r.returncode != 0:
        raise h.Failure("make install failed:\n%s\n%s" % (r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def unit_file(path):
    """The unit's sections as {section: {key: [values]}} (keys may repeat)."""
    out = {}
    section = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            m = re.match(r"^\[([A-Za-z]+)\]$", line)
            if m:
                section = out.setdefault(m.group(1), {})
                continue
            m = re.match(r"^([A-Za-z]+)=(.*)$", line)
            h.check(section is not None and m, "unit line %d is not Key=value in a section: %r" % (n, line))
            section.setdefault(m.group(1), []).append(m.group(2))
    return out


def test_install():
    v = make_vars()
    tmp = tempfile.mkdtemp(prefix="shard-install-")
    try:
        dest = os.path.join(tmp, "root")
        make_install(dest)
        at = lambda p: dest + p  # noqa: E731
        want = [
            v["bindir"] + "/shardstore",
            v["bindir"] + "/shard",
            v["libdir"] + "/libshard.so",
            v["includedir"] + "/shard.h",
            v["libdir"] + "/pkgconfig/shard.pc",
            v["sysconfdir"] + "/shardstore/shardstore.conf",
            v["systemdunitdir"] + "/shardstore.service",
            v["sysusersdir"] + "/shardstore.conf",
            v["mandir"] + "/man1/shardstore.1",
            v["mandir"] + "/man1/shard.1",
        ]
        missing = [p for p in want if not os.path.exists(at(p))]
        h.eq(missing, [], "files missing after make install")
        for p in want[:2]:
            h.check(os.access(at(p), os.X_OK), "%s is executable" % p)
        for p in want[-2:]:
            with open(at(p)) as f:
                h.check(f.read().startswith(".TH "), "%s is a manual page" % p)

        # Versions and help.
        server = at(v["bindir"] + "/shardstore")
        for prog in (server, at(v["bindir"] + "/shard")):
            r = run([prog, "--version"])
            h.eq(r.returncode, 0, "%s --version" % prog)
            name = os.path.basename(prog)
            h.check(re.match(r"^%s %s( \(git [0-9a-zA-Z.\-]+\))?\n$" % (name, re.escape(v["PACKAGE_VERSION"])),
                             r.stdout), "%s --version: %r" % (name, r.stdout))
        r = run([server, "--help"])
        h.eq(r.returncode, 0, "shardstore --help")
        for word in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "ENVIRONMENT", "FILES",
                     "EXIT STATUS", "--config", "--listen", "--data", "--help", "--version",
                     "SIGTERM", "SIGHUP", "SHARDSTORE_ACCESS_KEY", "/_/console", "/_/metrics"):
            h.check(word in r.stdout, "--help mentions %s" % word)
        r = run([server, "--bogus"])
        h.eq(r.returncode, 2, "an unknown option is a usage error")

        # The installed config loads (it is applied before --version).
        conf = at(v["sysconfdir"] + "/shardstore/shardstore.conf")
        r = run([server, "--config", conf, "--version"])
        h.eq((r.returncode, r.stderr), (0, ""), "the installed config file loads")
        # An edited config survives a second install (of the config only:
        # the rule conf/local.mk adds to install-data).
        with open(conf, "a") as f:
            f.write("\n# edited by the operator\n")
        out = make_install(dest, "install-data-local")
        with open(conf) as f:
            h.check(f.read().endswith("# edited by the operator\n"), "edited config kept")
        h.check(os.path.exists(conf + ".dist"), "new config installed beside it")
        h.check("keeping" in out, "make install says it kept the config")

        # The library, header and pkg-config file are usable.
        # The build's compiler and sanitizer flags: an ASan libshard needs
        # an ASan program.
        cc = v["CC"].split() or ["cc"]
        if shutil.which(cc[0]):
            src = os.path.join(tmp, "use.c")
            with open(src, "w") as f:
                f.write('#include <shard.h>\n#include <stdio.h>\n'
                        'int main(void) { printf("%p\\n", (void *)shard_client_create); return 0; }\n')
            exe = os.path.join(tmp, "use")
            r = run(cc + v["SAN_CFLAGS"].split() + ["-o", exe, src, "-I" + at(v["includedir"]),
                                                   "-L" + at(v["libdir"]), "-lshard"])
            h.eq((r.returncode, r.stderr), (0, ""), "a program builds against the installed libshard")
            r = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=at(v["libdir"])))
            h.eq(r.returncode, 0, "and runs with the installed libshard.so")
        if shutil.which("pkg-config"):
            r = run(["pkg-config", "--modversion", "shard"],
                    env=dict(os.environ, PKG_CONFIG_PATH=at(v["libdir"] + "/pkgconfig")))
            h.eq(r.stdout.strip(), v["PACKAGE_VERSION"], "pkg-config --modversion shard")

        # The systemd unit.
        unit_path = at(v["systemdunitdir"] + "/shardstore.service")
        u = unit_file(unit_path)
        h.eq(sorted(u), ["Install", "Service", "Unit"], "unit sections")
        s = {k: vals[-1] for k, vals in u["Service"].items()}
        h.eq(s.get("User"), "shardstore", "dedicated user")
        h.eq(s.get("ExecStart"), "%s/shardstore --config %s/shardstore/shardstore.conf --data /var/lib/shardstore"
             % (v["bindir"], v["sysconfdir"]), "ExecStart names the installed paths")
        h.eq(s.get("StateDirectory"), "shardstore", "the data dir is the state directory")
        h.eq(s.get("Restart"), "on-failure", "Restart")
        h.check(int(s.get("LimitNOFILE", "0")) >= 8192, "LimitNOFILE")
        for k, want_v in (("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                          ("PrivateTmp", "yes"), ("KillSignal", "SIGTERM")):
            h.eq(s.get(k), want_v, k)
        h.check("/var/lib/shardstore" in s.get("ReadWritePaths", "").split(), "ReadWritePaths")
        h.check(re.search(r"kill -HUP \$MAINPID$", s.get("ExecReload", "")), "ExecReload sends SIGHUP")
        with open(conf) as f:
            grace = int(re.search(r"^shutdown_grace\s*=\s*(\d+)", f.read(), re.M).group(1))
        h.check(int(s.get("TimeoutStopSec", "0")) > grace,
                "TimeoutStopSec %s leaves the %d s drain grace" % (s.get("TimeoutStopSec"), grace))
        h.eq(u["Install"].get("WantedBy"), ["multi-user.target"], "WantedBy")

        analyze = shutil.which("systemd-analyze")
        if analyze:
            # verify wants ExecStart to exist: point it into DESTDIR.
            copy = os.path.join(tmp, "shardstore.service")
            with open(unit_path) as f, open(copy, "w") as g:
                g.write(f.read().replace("ExecStart=" + v["bindir"], "ExecStart=" + at(v["bindir"])))
            r = run([analyze, "verify", copy])
            h.eq((r.returncode, r.stdout + r.stderr), (0, ""), "systemd-analyze verify")
        else:
            print("note: no systemd-analyze here; the unit got the syntax checks only", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    h.main([test_install], shared_server=False)
