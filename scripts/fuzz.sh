#!/usr/bin/env bash
# Runs every fuzz target for N seconds each (default 60): `scripts/fuzz.sh [SECONDS] [TARGET...]`.
# Needs a nightly toolchain (`rustup toolchain install nightly`) and cargo-fuzz
# (`cargo install cargo-fuzz`). Not part of .ci/run. Crashes land in fuzz/artifacts/<target>/;
# minimise one with `cargo +nightly fuzz tmin <target> <file>` and add it as a regression test.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
failed=()
for target in "${targets[@]}"; do
  echo "== $target: ${seconds}s"
  if ! cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048; then
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: crashes in: ${failed[*]} (see fuzz/artifacts/)" >&2
  exit 1
fi
echo "all ${#targets[@]} targets ran ${seconds}s each without a crash"
