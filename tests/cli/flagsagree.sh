#!/bin/sh
# One answer everywhere (issue 10): for every engine with launch flags, `flags --json` launches the
# plan's own users and context: users = the plan's users; context = the plan's context, or, when it
# does not fit, the plan's max context for those users (max resident tokens for one user), both
# capped at the model's trained context. Usage: flagsagree.sh HEADROOM_CLI
set -u
cli=$1
command -v python3 >/dev/null || { echo "flagsagree: python3 missing, skipped"; exit 0; }
checked=0
failed=0
for engine in vllm sglang tgi tensorrt-llm llama.cpp ollama; do
    for args in "" "--users 8" "--context 4096" "--context 4096 --users 8" "--context 60000 --users 8" \
                "--users 2 -c rtx-4060-ti-16gb" "-m qwen2.5-0.5b -w q4_k_m --users 16" "-m qwen2.5-0.5b -w q4_k_m"; do
        # shellcheck disable=SC2086
        plan=$("$cli" plan --engine "$engine" $args --json 2>&1) || { echo "FAIL $engine [$args]: plan: $plan"; failed=$((failed + 1)); continue; }
        # shellcheck disable=SC2086
        flags=$("$cli" flags --engine "$engine" $args --json 2>&1)
        verdict=$(PLAN=$plan FLAGS=$flags python3 - <<'PY'
import json, os
plan = json.loads(os.environ["PLAN"])
try:
    flags = json.loads(os.environ["FLAGS"])
except ValueError:
    # No flags: only when the plan does not load ("nothing to launch") or the engine refuses the format.
    text = os.environ["FLAGS"]
    print("ok" if not plan["fits"] and ("nothing to launch" in text or "runs GGUF" in text) else "no flags: " + text[:200])
    raise SystemExit
trained = plan.get("model_context_tokens", 0)
most = plan.get("max_context")
if most is None:
    most = plan["max_resident_tokens"]
    if trained:
        most = min(most, trained)
want_ctx = min(plan["context_tokens"], most)
got = (flags["users"], flags["context_tokens"], flags["context_lowered"])
want = (plan["users"], want_ctx, plan["context_tokens"] > want_ctx)
print("ok" if got == want else "flags users/context/lowered %s, plan %s" % (got, want))
PY
)
        checked=$((checked + 1))
        if [ "$verdict" != ok ]; then
            echo "FAIL $engine [$args]: $verdict"
            failed=$((failed + 1))
        fi
    done
done
echo "flags and plan agree: $checked cases, $failed failed"
[ "$failed" -eq 0 ]
