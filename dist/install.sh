#!/usr/bin/env bash
# Installs the replan binary for this runner: the released static binary, checksum verified and
# kept in the runner's tool cache, or, when no release binary fits this runner, a build from the
# action's own source with `cargo install --locked`.
#
# Everything comes in through the environment (never through text pasted into a script):
#   REPLAN_VERSION           release tag to install (e.g. v1.2.3) [default: from REPLAN_ACTION_REF
#                            when it is a full version tag, else v<version> of the action's Cargo.toml]
#   REPLAN_ACTION_REF        the ref the action was used at (github.action_ref)
#   REPLAN_REPOSITORY        owner/name of the action's repository [default: replan-dev/replan]
#   REPLAN_RELEASE_BASE_URL  where releases live [default: https://github.com/$REPLAN_REPOSITORY/releases/download]
#                            the assets are <base>/<tag>/replan-<target>.tar.gz and <base>/<tag>/SHA256SUMS
#   GITHUB_ACTION_PATH       the action's checked-out source (the fallback builds it)
#   RUNNER_OS, RUNNER_ARCH   pick the target; uname is used outside GitHub Actions
#   RUNNER_TOOL_CACHE        cache root [default: $HOME/.cache/replan-tools]
#   GITHUB_PATH, GITHUB_OUTPUT  optional: the install dir is added to PATH, `path=`, `version=`
#                            and `source=` (release, cache or cargo) are written as step outputs
set -euo pipefail

fail() {
  echo "::error title=replan install::$*" >&2
  exit 1
}

note() {
  echo "replan install: $*" >&2
}

action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

# The version: an explicit one wins; a full version tag as the action ref is the release itself;
# otherwise (a major tag such as v1, a branch or a commit) the action's own Cargo.toml says which
# release its source belongs to.
version="${REPLAN_VERSION:-}"
if [ -z "$version" ]; then
  ref="${REPLAN_ACTION_REF:-}"
  if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$ ]]; then
    version="$ref"
  elif [ -f "$action_path/Cargo.toml" ]; then
    crate_version="$(sed -n 's/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$action_path/Cargo.toml" | head -n 1)"
    [ -n "$crate_version" ] || fail "no version line in $action_path/Cargo.toml; set the action input 'version' (e.g. v1.2.3)"
    version="v$crate_version"
  else
    fail "cannot tell which release to install: set the action input 'version' (e.g. v1.2.3)"
  fi
fi
[[ "$version" =~ ^[A-Za-z0-9._+-]+$ ]] || fail "version '$version' is not a release tag; set the action input 'version' to a tag such as v1.2.3"

os="${RUNNER_OS:-$(uname -s)}"
arch="${RUNNER_ARCH:-$(uname -m)}"
case "$os" in
  Linux | linux) os_part="unknown-linux-musl" ;;
  *) os_part="" ;;
esac
case "$arch" in
  X64 | x86_64 | amd64) arch_part="x86_64"; cache_arch="x64" ;;
  ARM64 | aarch64 | arm64) arch_part="aarch64"; cache_arch="arm64" ;;
  *) arch_part=""; cache_arch="$(printf '%s' "$arch" | tr '[:upper:]' '[:lower:]')" ;;
esac
target=""
if [ -n "$os_part" ] && [ -n "$arch_part" ]; then
  target="${arch_part}-${os_part}"
fi

repository="${REPLAN_REPOSITORY:-}"
[ -n "$repository" ] || repository="replan-dev/replan"
base_url="${REPLAN_RELEASE_BASE_URL:-https://github.com/${repository}/releases/download}"
base_url="${base_url%/}"

cache_root="${RUNNER_TOOL_CACHE:-${HOME:-/tmp}/.cache/replan-tools}"
install_dir="$cache_root/replan/${version#v}/$cache_arch"
exe=""
case "$os" in Windows | MINGW* | MSYS* | CYGWIN*) exe=".exe" ;; esac
binary="$install_dir/replan$exe"

publish() {
  local source="$1"
  if [ -n "${GITHUB_PATH:-}" ]; then
    printf '%s\n' "$install_dir" >>"$GITHUB_PATH"
  fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    {
      printf 'path=%s\n' "$binary"
      printf 'version=%s\n' "$version"
      printf 'source=%s\n' "$source"
    } >>"$GITHUB_OUTPUT"
  fi
  note "replan $version ($source) at $binary"
}

# The tool cache's convention: <tool>/<version>/<arch> plus a sibling <arch>.complete marker,
# written last, so a half-finished install is never taken for a good one.
if [ -x "$binary" ] && [ -f "$install_dir.complete" ]; then
  publish cache
  exit 0
fi

download() {
  local url="$1" out="$2"
  if command -v curl >/dev/null 2>&1; then
    curl --fail --silent --show-error --location --retry 3 --retry-delay 2 --output "$out" "$url"
  elif command -v wget >/dev/null 2>&1; then
    wget --quiet --tries=3 --output-document="$out" "$url"
  else
    fail "neither curl nor wget is installed; install one of them before this action"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  else
    shasum -a 256 "$1" | cut -d ' ' -f 1
  fi
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Moves a finished binary into the cache; a concurrent job that got there first is fine.
install_binary() {
  local from="$1"
  mkdir -p "$(dirname "$install_dir")"
  rm -rf "$install_dir.partial"
  mkdir -p "$install_dir.partial"
  cp "$from" "$install_dir.partial/replan$exe"
  chmod 0755 "$install_dir.partial/replan$exe"
  rm -rf "$install_dir"
  mv "$install_dir.partial" "$install_dir"
  : >"$install_dir.complete"
}

build_from_source() {
  local why="$1"
  note "$why; building replan from the action's source with cargo install --locked"
  command -v cargo >/dev/null 2>&1 \
    || fail "$why, and cargo is not installed: use a Linux x64 or ARM64 runner, or install Rust (e.g. with dtolnay/rust-toolchain) before this action"
  [ -f "$action_path/Cargo.toml" ] || fail "$why, and $action_path has no Cargo.toml to build from"
  cargo install --locked --path "$action_path" --root "$work/cargo-root" --bin replan
  [ -f "$work/cargo-root/bin/replan$exe" ] || fail "cargo install finished but $work/cargo-root/bin/replan$exe is missing"
  install_binary "$work/cargo-root/bin/replan$exe"
  publish cargo
}

if [ -z "$target" ]; then
  build_from_source "no release binary is built for $os/$arch"
  exit 0
fi

asset="replan-${target}.tar.gz"
release_url="$base_url/$version"
if ! download "$release_url/SHA256SUMS" "$work/SHA256SUMS" 2>"$work/sums.err"; then
  build_from_source "no release $version at $release_url ($(tr '\n' ' ' <"$work/sums.err"))"
  exit 0
fi
expected="$(awk -v name="$asset" '{ file = $2; sub(/^\*/, "", file) } file == name { print $1; exit }' "$work/SHA256SUMS")"
if [ -z "$expected" ]; then
  build_from_source "release $version has no $asset in its SHA256SUMS"
  exit 0
fi
download "$release_url/$asset" "$work/$asset" \
  || fail "release $version lists $asset in SHA256SUMS but $release_url/$asset could not be downloaded"

# sha256sum -c reads the expected hash from a file in its own format; the message names both.
printf '%s  %s\n' "$expected" "$asset" >"$work/expected.sha256"
if ! (cd "$work" && sha256sum -c --status expected.sha256) 2>/dev/null; then
  actual="$(sha256_of "$work/$asset")"
  if [ "$actual" != "$expected" ]; then
    fail "checksum mismatch for $asset from $release_url: SHA256SUMS says $expected, the download is $actual; nothing was installed"
  fi
fi

mkdir -p "$work/unpacked"
tar -xzf "$work/$asset" -C "$work/unpacked" \
  || fail "$asset from $release_url is not a readable tar.gz archive"
[ -f "$work/unpacked/replan" ] || fail "$asset from $release_url has no 'replan' at its top level"
install_binary "$work/unpacked/replan"
publish release
