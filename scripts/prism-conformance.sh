#!/usr/bin/env bash
# GitHub OpenAPI conformance: runs Replan's GitHub client through Stoplight Prism (proxy mode,
# GitHub's published OpenAPI description) in front of the fake GitHub of the integration tests,
# and fails on any violation Prism reports about a request (tests/all/github/prism.rs lists each
# with method, path and message; the fake's answer violations are listed apart).
#
# Installs, pinned, into target/tools/prism (or $REPLAN_PRISM_DIR), reused on the next run:
#   - @stoplight/prism-cli 5.14.2 with the dependency tree of .ci/prism/package-lock.json
#     (npm ci). 5.14.2 is the last release that runs on Node 20 (5.15 and later need Node 24).
#   - @octokit/openapi 23.0.2, of which only generated/api.github.com.json (13 MB, the
#     description of api.github.com with references; the dereferenced variant is 73 MB) is kept,
#     its tarball checked against the pinned sha512.
# .ci/packaging.sh calls this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

openapi_version="23.0.2"
openapi_sha512="pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg=="
dir="${REPLAN_PRISM_DIR:-target/tools/prism}"
started=$SECONDS

if ! command -v npm >/dev/null; then
  echo "npm is missing: installing Debian's nodejs and npm"
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
prism="$dir/node_modules/.bin/prism"
if ! cmp -s .ci/prism/package-lock.json "$dir/package-lock.json" || [ ! -x "$prism" ]; then
  cp .ci/prism/package.json .ci/prism/package-lock.json "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "prism $("$prism" --version)"

spec="$dir/api.github.com-$openapi_version.json"
if [ ! -s "$spec" ]; then
  pack="$(mktemp -d)"
  trap 'rm -rf "$pack"' EXIT
  (cd "$pack" && npm pack "@octokit/openapi@$openapi_version" --silent >/dev/null)
  tarball="$pack/octokit-openapi-$openapi_version.tgz"
  actual="$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$openapi_sha512" ]; then
    echo "error: @octokit/openapi@$openapi_version has sha512 $actual, pinned $openapi_sha512" >&2
    exit 1
  fi
  tar -xzf "$tarball" -C "$pack" package/generated/api.github.com.json
  mv "$pack/package/generated/api.github.com.json" "$spec"
fi
echo "GitHub's OpenAPI description: @octokit/openapi $openapi_version, $(basename "$spec")"
echo "installed in $((SECONDS - started)) s"

export REPLAN_PRISM="$prism"
export REPLAN_PRISM_SPEC="$spec"
cargo test --locked --test all -- --exact --nocapture \
  github::prism::github_client_requests_conform_to_githubs_openapi_description
echo "GitHub OpenAPI conformance: 0 request violations, $((SECONDS - started)) s in all"
