#!/usr/bin/env bash
# Fan-out wall time (issue 19): a scripted plan of N independent subtasks that each run `sleep 1`,
# once as one whole run (the subtasks one after another) and once as the CI fan-out run locally:
# `replan run --stage plan`, N concurrent `--stage subtask` processes (each in its own clone),
# `--stage join`, sharing one --local-dir and one bare `origin`. The model is the in-process
# scripted provider, so the times are Replan's and the commands'.
#
#   scripts/fanout-bench.sh [N ...]        default: 4 16
#   REPLAN=/path/to/replan                 default: $CARGO_TARGET_DIR or target, debug build
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
replan="${REPLAN:-${CARGO_TARGET_DIR:-$root/target}/debug/replan}"
[ -x "$replan" ] || { echo "error: no replan binary at $replan; run cargo build or set REPLAN" >&2; exit 2; }
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(4 16)

export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset GITHUB_EVENT_NAME GITLAB_CI GITHUB_OUTPUT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# The scenario: the plan, per subtask its `sleep 1` call and the reply after it, then the e2e
# base replies (judge, decisions, review, completion) for everything else.
scenario() {
  local n=$1 ids="" subtasks="" actions="" i
  for i in $(seq 1 "$n"); do
    ids+="${ids:+, }\"task_$i\""
    subtasks+="${subtasks:+, }{\"id\": \"task_$i\", \"description\": \"Sleep $i\", \"dependencies\": [], \"estimated_complexity\": \"low\", \"required_tools\": [\"run_command\"]}"
    actions+="${actions:+, }{\"task_id\": \"task_$i\", \"action_type\": \"tool_call\", \"tool\": \"run_command\", \"purpose\": \"sleep\", \"expected_outcome\": \"slept\"}"
  done
  local no_replan='{"replan_needed": false, "confidence": 0.9, "reasoning": "all good", "replan_type": "none", "issues_found": [], "recommended_actions": [], "clarification_needed": false, "clarification_questions": []}'
  echo "mode: matched"
  echo "steps:"
  echo "  - when: { contains: \"Produce the planning phases\" }"
  echo "    reply: '{\"phase\": \"planning\", \"goal_understanding\": {\"main_objective\": \"Sleep\", \"success_criteria\": [\"slept\"], \"constraints\": []}, \"task_decomposition\": {\"reasoning\": \"independent\", \"subtasks\": [$subtasks]}, \"action_plan\": {\"execution_order\": [$ids], \"actions\": [$actions]}, \"self_check\": {\"goal_understanding\": {\"ok\": true, \"notes\": \"\"}, \"task_decomposition\": {\"ok\": true, \"notes\": \"\"}, \"action_plan\": {\"ok\": true, \"notes\": \"\"}}, \"comment\": \"ok\", \"replan_decision\": $no_replan, \"quality\": {\"score\": 90, \"is_acceptable\": true, \"issues\": [], \"suggestions\": []}}'"
  for i in $(seq 1 "$n"); do
    echo "  - when: { contains: \"exited with status 0\" }"
    echo "    reply: '{\"report\": \"Slept.\", \"replan_decision\": $no_replan, \"verdict\": {\"success\": true, \"shouldContinue\": false, \"shouldReplan\": false, \"reason\": \"done\", \"missingRequirements\": []}, \"reflection\": {\"action_evaluated\": \"sleep\", \"status\": \"success\", \"evaluation\": \"fine\", \"issues_identified\": [], \"plan_revision_needed\": false}}'"
  done
  for i in $(seq 1 "$n"); do
    echo "  - when: { contains: \"Execute subtask \`task_$i\`\" }"
    echo "    tool_calls: [ { name: run_command, arguments: { argv: [sleep, \"1\"] } } ]"
  done
  local base; base="$(sed -n '/strict reviewer of execution plans/,$p' "$root/tests/scenarios/github_e2e_base.yaml")"
  for i in $(seq 1 "$((n + 4))"); do echo "$base"; done
}

# A fresh clone of the bench's origin on main.
clone() { git clone -q "$origin" "$1"; git -C "$1" checkout -q main; }

run() { # workspace dir, args...
  local ws=$1; shift
  "$replan" run --issue 1 --title "Sleep in parallel" --body "Each subtask sleeps." \
    --workspace "$ws" --local-dir "$dir" \
    --set llm.provider=scripted --set "llm.scenario=$work/scenario.yaml" \
    --set 'tools.allowed_commands=["sleep 1"]' --set llm.model=scripted "$@" >"$ws.log" 2>&1 \
    || { echo "error: replan run $* failed, see $ws.log" >&2; tail -20 "$ws.log" >&2; exit 1; }
}

printf '%-4s %-12s %-8s %-10s %-8s %-10s %s\n' N sequential plan subtasks join fan-out ratio
for n in "${counts[@]}"; do
  work="$(mktemp -d)"
  scenario "$n" >"$work/scenario.yaml"
  origin="$work/origin.git"
  git init -q --bare "$origin"
  git -C "$origin" symbolic-ref HEAD refs/heads/main
  git clone -q "$origin" "$work/seed" 2>/dev/null
  git -C "$work/seed" checkout -q -b main
  echo "# bench" >"$work/seed/README.md"
  git -C "$work/seed" add README.md && git -C "$work/seed" commit -qm init && git -C "$work/seed" push -q origin main

  dir="$work/sequential"; clone "$work/whole"
  t=$(now); run "$work/whole"; sequential=$(since "$t")

  dir="$work/fanout"
  clone "$work/plan"
  t0=$(now); run "$work/plan" --stage plan --matrix-out "$work/matrix.json"; plan=$(since "$t0")
  for i in $(seq 1 "$n"); do clone "$work/sub$i"; done
  t=$(now)
  pids=()
  for i in $(seq 1 "$n"); do run "$work/sub$i" --stage subtask --subtask "task_$i" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done
  subtasks=$(since "$t")
  clone "$work/join"
  t=$(now); run "$work/join" --stage join; join=$(since "$t")
  # The clones are a CI runner's checkouts, not the fan-out's time: the sum of the three stages.
  fanout=$(awk -v a="$plan" -v b="$subtasks" -v c="$join" 'BEGIN { printf "%.2f", a + b + c }')
  grep -q '"status":"completed"' "$dir/planning_history/issues/1.jsonl" \
    || { echo "error: the fan-out of $n did not complete; see $work" >&2; exit 1; }
  ratio=$(awk -v s="$sequential" -v f="$fanout" 'BEGIN { printf "%.2f", f / s }')
  printf '%-4s %-12s %-8s %-10s %-8s %-10s %s\n' "$n" "${sequential}s" "${plan}s" "${subtasks}s" "${join}s" "${fanout}s" "$ratio"
  rm -rf "$work"
done
