#!/usr/bin/env bash
# Release builds side by side (issue 40): size, .tar.gz size (as the release workflow packs it),
# and, interleaved run after run so every build sees the same machine, the wall time and peak RSS
# of `replan --version` (start-up; wall includes GNU time, which reads the peak RSS) and of `replan demo` (a whole cycle: scripted model, local forge
# and history, real git). Medians and ranges.
#
#   scripts/build-compare.sh NAME=BINARY [NAME=BINARY ...]
#   RUNS=15     runs of each command per binary
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 NAME=BINARY [NAME=BINARY ...]" >&2; exit 2; }
runs="${RUNS:-15}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| build | binary bytes | .tar.gz bytes |"
echo "| --- | ---: | ---: |"
for spec in "$@"; do
  name="${spec%%=*}" binary="${spec#*=}"
  [ -x "$binary" ] || { echo "error: $binary is not an executable" >&2; exit 2; }
  mkdir -p "$work/$name" && cp "$binary" "$work/$name/replan"
  packed=$(tar -czf - -C "$work/$name" replan | wc -c)
  echo "| $name | $(stat -c %s "$binary") | $packed |"
done
echo

python3 - "$runs" "$work" "$@" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
runs, work, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
builds = [(s.split("=", 1)[0], s.split("=", 1)[1]) for s in specs]
commands = {"--version": ["--version"], "demo": ["demo"]}
results = {(b, c): ([], []) for b, _ in builds for c in commands}
env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "RUST_LOG": "off",
       "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
for i in range(runs):
    for name, binary in builds:
        for cname, args in commands.items():
            d = tempfile.mkdtemp(dir=work)
            argv = [binary] + args + (["--dir", d + "/demo"] if cname == "demo" else [])
            # Peak RSS from GNU time, whose own small process is what forks: the rusage of a
            # child forked from Python would count Python's pages from before the exec.
            rss_file = os.path.join(d, "rss")
            start = time.perf_counter()
            status = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, env=env, cwd=d)
            wall = (time.perf_counter() - start) * 1e3
            if status != 0:
                sys.exit(f"error: {name} {cname} exited with {status}")
            results[(name, cname)][0].append(wall)
            results[(name, cname)][1].append(int(open(rss_file).read().split()[-1]) / 1024)
fmt = lambda v: f"{statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"
print(f"| build | command | runs | wall ms, median (range) | peak RSS MiB, median (range) |")
print("| --- | --- | ---: | ---: | ---: |")
for cname in commands:
    for name, _ in builds:
        walls, rss = results[(name, cname)]
        print(f"| {name} | `{cname}` | {runs} | {fmt(walls)} | {fmt(rss)} |")
PY
