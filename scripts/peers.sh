#!/usr/bin/env bash
# The peers row of BENCHMARKS.md (issue 40): `--version` start-up wall time and peak RSS, and the
# installed size, of Replan's static binary and of the npm CLIs of its peers, measured in one run
# on one machine. Each npm package goes into its own temporary prefix (its size is that prefix:
# the package and all its dependencies, not Node itself, whose size is printed once).
#
#   scripts/peers.sh [REPLAN_BINARY]     default: target/x86_64-unknown-linux-musl/release/replan
#   RUNS=5                               runs per tool (median and range are printed)
#   KEEP=DIR                             install into DIR and keep it (default: a temp dir, removed)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
replan="${1:-${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release/replan}"
runs="${RUNS:-5}"
[ -x "$replan" ] || { echo "error: no replan binary at $replan; build it with cargo build --release --target x86_64-unknown-linux-musl or pass its path" >&2; exit 2; }
command -v npm >/dev/null || { echo "error: npm is needed to install the peers" >&2; exit 2; }
if ! command -v python3 >/dev/null || [ ! -x /usr/bin/time ]; then
  echo "error: python3 and GNU time (/usr/bin/time) are needed to time the runs" >&2; exit 2
fi

if [ -n "${KEEP:-}" ]; then work="$KEEP"; mkdir -p "$work"; else work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT; fi
peers=(@anthropic-ai/claude-code @openai/codex @google/gemini-cli)

# Median and range of `RUNS` runs of a command: wall ms (spawn to exit) and peak RSS MiB of the
# process (GNU time's %M: the largest resident set of the process it ran or of a child that
# process reaped, e.g. a native binary a Node wrapper starts). Wall includes GNU time's start.
measure() {
  python3 - "$runs" "$@" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
runs, argv = int(sys.argv[1]), sys.argv[2:]
walls, rss, version = [], [], ""
rss_file = tempfile.mktemp()
for _ in range(runs):
    # Peak RSS from GNU time, whose own small process is what forks: the rusage of a child
    # forked from Python would count Python's pages from before the exec.
    start = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + argv, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                       env={**os.environ, "NO_UPDATE_NOTIFIER": "1", "CI": "1"})
    walls.append((time.perf_counter() - start) * 1e3)
    rss.append(int(open(rss_file).read().split()[-1]) / 1024)
    out = p.stdout
    version = out.decode(errors="replace").strip().splitlines()[0] if out.strip() else "?"
os.unlink(rss_file)
fmt = lambda v: f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})"
print(f"{fmt(walls)}|{fmt(rss)}|{version}")
PY
}

size_mb() { du -sb "$1" | awk '{ printf "%.1f", $1 / 1e6 }'; }

for pkg in "${peers[@]}"; do
  prefix="$work/$(echo "$pkg" | tr '@/' '__')"
  if [ ! -d "$prefix/node_modules" ]; then
    npm install --silent --no-audit --no-fund --prefix "$prefix" "$pkg" >/dev/null
  fi
done

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "node: $(node --version), its binary $(size_mb "$(readlink -f "$(command -v node)")") MB (not counted below)"
echo
echo "| tool | version | \`--version\` wall ms, median (range) | peak RSS MiB, median (range) | installed MB |"
echo "| --- | --- | ---: | ---: | ---: |"
IFS='|' read -r wall rss version < <(measure "$replan" --version)
echo "| replan (static musl) | $version | $wall | $rss | $(size_mb "$replan") |"
for pkg in "${peers[@]}"; do
  prefix="$work/$(echo "$pkg" | tr '@/' '__')"
  bin="$(find "$prefix/node_modules/.bin/" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | head -1)"
  installed="$(node -p "require('$prefix/node_modules/$pkg/package.json').version")"
  IFS='|' read -r wall rss version < <(measure "$prefix/node_modules/.bin/$bin" --version)
  echo "| \`$pkg\` ($bin) | $installed | $wall | $rss | $(size_mb "$prefix") |"
done
