#!/usr/bin/env bash
# The packaging checks (SPEC F13), apart from `cargo test` because they take minutes: installs the
# tools they drive, builds the static musl release binary, then runs the `packaging` test target
# (tests/packaging/: the binary is static and runs in an empty root, the action's install step,
# action.yml, actionlint and shellcheck on the workflows and scripts, the binary and archive size
# limits), and the GitHub OpenAPI
# conformance check (scripts/prism-conformance.sh: Stoplight Prism with GitHub's description in
# front of the fake GitHub, 0 request violations). .ci/run calls this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "::group::packaging tools"
# musl target + musl-gcc, shellcheck, actionlint: the packaging tests use them.
bash .ci/packaging-tools.sh
echo "::endgroup::"

echo "::group::musl build"
# The static release binary the packaging tests check.
cargo build --locked --release --target x86_64-unknown-linux-musl
ls -l "${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/replan"
# The download budget (issue 40): tests/packaging/binary_size.rs fails above 10 MB / 4.5 MB.
tar -czf - -C "${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release" replan | wc -c | xargs echo ".tar.gz bytes:"
echo "::endgroup::"

echo "::group::packaging tests"
cargo test --locked --test packaging
echo "::endgroup::"

echo "::group::GitHub OpenAPI conformance (Prism)"
# Installs pinned Prism and GitHub's description into target/tools/prism (node and npm; Debian's
# when missing), then runs tests/all/github/prism.rs through it.
bash scripts/prism-conformance.sh
echo "::endgroup::"
