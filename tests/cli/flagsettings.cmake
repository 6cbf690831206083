# `flags` says what `plan` says and emits back what the user set (issue 9 review: S1-1, S1-2, S2-1).
# Figures: tests/core/tst_launchflags.cpp.
set(_cli $<TARGET_FILE:headroom-cli>)
set(_flags_args -m llama-3.1-8b -c rtx-4090 --users 4 --context 8192)

# S1-1: a format the engine cannot load: nothing to launch, the plan's reason, exit 1 (before: a
# vllm serve / llama-server command and exit 0).
headroom_cli_sh_test(cli_flags_refuses_ggml_on_vllm
  "${HEADROOM_CLI} flags -m llama-3.1-8b -w q4_k -c rtx-4090 --engine vllm 2>&1; echo \"exit code $?\""
  "nothing to launch: llama-3\\.1-8b \\(q4_k\\) on rtx-4090 under [^:]+: does not fit: [^\n]*q4_k[^\n]*\nexit code 1")
headroom_cli_sh_test(cli_flags_refuses_gptq_on_llamacpp
  "${HEADROOM_CLI} flags -m llama-3.1-8b -w gptq-g128 -c rtx-4090 --engine llama.cpp 2>&1; echo \"exit code $?\""
  "nothing to launch: llama-3\\.1-8b \\(gptq-g128\\) on rtx-4090 under [^:]+: does not fit: [^\n]*\nexit code 1")
headroom_cli_sh_test(cli_flags_refuses_awq_on_ollama
  "${HEADROOM_CLI} flags -m llama-3.1-8b -w awq-g128 -c rtx-4090 --engine ollama 2>&1; echo \"exit code $?\""
  "nothing to launch: llama-3\\.1-8b \\(awq-g128\\) on rtx-4090 under [^:]+: does not fit: [^\n]*\nexit code 1")

# S1-2: the applied fraction, in flags and in the report's launch block.
add_test(NAME cli_flags_vllm_fraction_set COMMAND ${_cli} flags ${_flags_args} -w int4-g128 --engine vllm --set gpu-memory-utilization=0.85)
set_tests_properties(cli_flags_vllm_fraction_set PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION " --gpu-memory-utilization 0\\.85 ")
headroom_cli_sh_test(cli_report_vllm_fraction_set
  "${HEADROOM_CLI} report -m llama-3.1-8b -w int4-g128 -c rtx-4090 --engine vllm --set gpu-memory-utilization=0.5 --format json | grep -o '\"command\": \"vllm serve[^\"]*'"
  "--gpu-memory-utilization 0\\.50 ")

# S2-1: every setting the user set comes back in the engine's spelling.
add_test(NAME cli_flags_vllm_settings COMMAND ${_cli} flags ${_flags_args} -w int4-g128 --engine vllm
  --set max-num-batched-tokens=4096 --set block-size=32 --set enforce-eager=true --set swap-space=8
  --set enable-chunked-prefill=true --set kv-cache-memory-bytes=4GiB)
set_tests_properties(cli_flags_vllm_settings PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "--tensor-parallel-size 1 --enforce-eager --swap-space 8 --max-num-batched-tokens 4096 --block-size 32 --enable-chunked-prefill --kv-cache-memory-bytes 4294967296")
add_test(NAME cli_flags_llamacpp_settings COMMAND ${_cli} flags ${_flags_args} -w q4_k --engine llama.cpp
  --set b=4096 --set ub=2048 --set swa-full=true --set kv-unified=true)
set_tests_properties(cli_flags_llamacpp_settings PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  " -b 4096 -ub 2048 --swa-full --kv-unified -ctk f16")
add_test(NAME cli_flags_ollama_overhead COMMAND ${_cli} flags ${_flags_args} -w q4_k --engine ollama --set OLLAMA_GPU_OVERHEAD=1GiB)
set_tests_properties(cli_flags_ollama_overhead PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "OLLAMA_GPU_OVERHEAD=1073741824 [^\n]*ollama serve")
add_test(NAME cli_flags_sglang_cap_set COMMAND ${_cli} flags ${_flags_args} -w int4-g128 --engine sglang --set max-running-requests=32)
set_tests_properties(cli_flags_sglang_cap_set PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "--max-running-requests 32 ")
add_test(NAME cli_flags_trtllm_settings COMMAND ${_cli} flags ${_flags_args} -w int4-g128 --engine tensorrt-llm --set max_batch_size=64 --set max_tokens=20000)
set_tests_properties(cli_flags_trtllm_settings PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "--max_batch_size 64 .*max_tokens: 20000")
