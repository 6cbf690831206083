# headroom-cli plan | table | frontier | speed | models | cards | formats | engines.
# Figures asserted are BRIEF §1 facts; errors must go to stderr with exit code 1.
set(_cli $<TARGET_FILE:headroom-cli>)

# BRIEF §1.4: 13e9 parameters at int4 (4.125 bits), 1.5 GiB flat reserve, 8 GiB card -> 337 tokens.
add_test(NAME cli_plan_brief_13b COMMAND ${_cli} plan -m llama-2-13b --params 13e9 -w int4-g128 -c 8GiB --reserve 1.5GiB --json)
set_tests_properties(cli_plan_brief_13b PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"kv_bytes_per_token\": 819200,.*\"max_resident_tokens\": 337,.*\"weights_bytes\": 6703125000")
# BRIEF §1.1: 12,288 B/token; the JSON keys the foundation issue names.
add_test(NAME cli_plan_json_keys COMMAND ${_cli} plan -m qwen2.5-0.5b -c 8GiB --context 2048 --users 32 --json)
set_tests_properties(cli_plan_json_keys PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"fits\": true.*\"kv_bytes_per_token\": 12288,.*\"max_context\": [0-9]+,.*\"max_resident_tokens\": [0-9]+,.*\"max_users\": [0-9]+,.*\"parameters\": 494032768,.*\"usable_bytes\": [0-9]+,.*\"weights_bytes\": [0-9]+")
add_test(NAME cli_plan_text COMMAND ${_cli} plan -m llama-3.1-8b -w int4-g128 -c rtx-4090 --users 4)
set_tests_properties(cli_plan_text PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "131,072 B/token.*max context for 4 users")
add_test(NAME cli_table_default COMMAND ${_cli} table)
set_tests_properties(cli_table_default PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "rtx-4060 +rtx-4060-ti-16gb +rtx-4090")
# The same defaults in every command (and the app): no -m plans the default model at int4-g128,
# 4 users x 8,192 tokens; on the 4090 the table's cell and plan's headline are the same 31,152.
add_test(NAME cli_plan_default_model COMMAND ${_cli} plan)
set_tests_properties(cli_plan_default_model PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "Model +llama-3.1-8b .*Weights +int4-g128.*max context per user for 4 users +31,152\n  fits: 4 users x 8,192 tokens")
add_test(NAME cli_table_default_4090 COMMAND ${_cli} table -c rtx-4090)
set_tests_properties(cli_table_default_4090 PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "Llama-3.1-8B +int4-g128 .* 31,152")
add_test(NAME cli_speed_default_model COMMAND ${_cli} speed)
set_tests_properties(cli_speed_default_model PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "llama-3.1-8b")
add_test(NAME cli_flags_default_model COMMAND ${_cli} flags --engine vllm)
set_tests_properties(cli_flags_default_model PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "llama-3.1-8b \\(int4-g128, fp16 KV\\) on rtx-4090: 4 users x 8,192 tokens")
add_test(NAME cli_table_json COMMAND ${_cli} table -m llama-2-7b qwen2.5-0.5b -w fp16 q4_k -c 8GiB 24GB --json)
set_tests_properties(cli_table_json PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "^\\[.*\"card\": \"24GB\"")
add_test(NAME cli_frontier COMMAND ${_cli} frontier -m qwen2.5-0.5b -c 8GiB)
set_tests_properties(cli_frontier PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "users +max context")
# Issue 15: a hybrid's state per sequence does not grow with the context, and the frontier shows it.
# granite-4.0-h-tiny: 36 Mamba-2 layers, 55.37 MiB of f32 state a sequence (llama.cpp's RS buffer
# 221.48 MiB for 4 sequences); 8 users hold 8 x 55.37 = 442.97 MiB, whatever their context.
add_test(NAME cli_frontier_recurrent_state COMMAND ${_cli} frontier -m granite-4.0-h-tiny -w bf16 -c rtx-4090 --engine llama.cpp)
set_tests_properties(cli_frontier_recurrent_state PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "36 recurrent layers keep 55.37 MiB of state per user, whatever the context.*recurrent state.* 8 +[0-9,]+ +[0-9,]+ +442.97 MiB")
add_test(NAME cli_speed COMMAND ${_cli} speed -m llama-3.1-8b -w int4-g128 -c rtx-4090 --acceptance 0.9 --draft-tokens 8 --draft-cost 0.1)
set_tests_properties(cli_speed PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "speed-up 3.40x")
foreach(list models cards formats engines)
  add_test(NAME cli_list_${list} COMMAND ${_cli} ${list})
  set_tests_properties(cli_list_${list} PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "id ")
endforeach()

# Bad input: a message naming what is wrong, exit code 1, never a crash.
foreach(case "unknown_model|plan -m no-such-model|unknown model 'no-such-model'"
             "bad_card|plan -m llama-2-7b -c 12parsecs|unknown card '12parsecs'"
             "bad_format|plan -m llama-2-7b -w int3|unknown weight format 'int3'"
             "bad_kv|plan -m llama-2-7b --kv-dtype q3_k|unknown KV dtype 'q3_k'"
             "bad_engine|plan -m llama-2-7b --engine foo|unknown engine 'foo'"
             "bad_size|plan -m llama-2-7b --reserve lots|expected a size"
             "bad_tp|plan -m llama-2-7b --tp 3|--tp 3 does not divide"
             "engine_and_reserve|plan -m llama-2-7b --engine vllm --reserve 1GiB|excludes"
             "no_command||A subcommand is required"
             "unknown_command|frobnicate|unknown command 'frobnicate'"
             "bad_gguf|inspect /nonexistent/x.gguf|x.gguf"
             "bad_offload|plan -m llama-2-13b --offload most|expected auto, none or a layer count"
             "free_and_used|plan -m llama-2-13b --free 4GiB --used 2GiB|excludes"
             "used_above_total|plan -m llama-2-13b -c rtx-4060 --used 9GiB|is more than the")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 args)
  list(GET parts 2 regex)
  add_test(NAME cli_error_${name} COMMAND sh -c "${_cli} ${args} 2>&1; echo \"exit code $?\"")
  set_tests_properties(cli_error_${name} PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "${regex}.*exit code 1")
endforeach()

# One exit-code rule (cli/commands.h): 0 answered, 1 usage or data error, 3 with --check when a
# plan does not fit as asked. Range errors are one line, not the usage text.
foreach(case "check_fits|plan -m llama-3.1-8b -w int4-g128 -c rtx-4090 --check|verdict +fits.*exit code 0"
             "check_does_not_fit|plan -m llama-3.1-8b -w fp16 -c rtx-4060 --check|verdict +does not fit.*exit code 3"
             "does_not_fit_answers|plan -m llama-3.1-8b -w fp16 -c rtx-4060|verdict +does not fit.*exit code 0"
             "table_check|table -m llama-3.1-8b -w fp16 -c rtx-4060 rtx-4090 --check|no: weights.*exit code 3"
             "flags_nothing_to_launch|flags -m llama-3.1-8b -w fp16 -c rtx-4060 --engine vllm --check|nothing to launch.*exit code 3"
             "speed_does_not_load|speed -m llama-3.1-8b -w fp16 -c rtx-4060|No speed for llama-3.1-8b fp16 on rtx-4060: does not fit: weights.*exit code 0"
             "speed_json_does_not_load|speed -m llama-3.1-8b -w fp16 -c rtx-4060 --json|\"speed_unavailable\": \"no speed: does not fit: weights 14.96 GiB.*\"state\": \"does_not_fit\".*exit code 0"
             "speed_json_loads|speed -m llama-3.1-8b -w int4-g128 -c rtx-4090 --json|\"batching\": \\{.*\"speculative\": \\{.*\"speed\": \\{.*\"tpot_ms\".*\"state\": \"fits\".*exit code 0"
             "plan_json_no_speed_unloaded|plan -m llama-3.1-8b -w fp16 -c rtx-4060 --json|\"speed_unavailable\": \"no speed: does not fit.*exit code 0"
             "vllm_refusal_never_fits|plan -m llama-3.1-8b -w bf16 -c rtx-4090 --users 1 --context 131072|verdict +does not fit\n *why +the engine would refuse to start.*exit code 0"
             "trained_context_state|plan -m llama-2-7b -w int4-g128 -c rtx-4090 --users 4 --context 8192|binding limit +the model's trained context.*max context per user for 4 users +4,096.*exit code 0"
             "users_alone_sane_context|plan -m llama-3.1-8b -w int4-g128 -c rtx-4090 --users 16 --json|\"context_tokens\": 8192,.*exit code 0")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 args)
  list(GET parts 2 regex)
  add_test(NAME cli_exit_${name} COMMAND sh -c "${_cli} ${args} 2>&1; echo \"exit code $?\"")
  set_tests_properties(cli_exit_${name} PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "${regex}")
endforeach()
foreach(case "range_users|plan -m llama-2-7b --users 0|--users: Value 0 not in range[^\n]*see headroom-cli plan --help\\)\nexit code 1\n$"
             "negative_card|plan -m llama-2-7b -c -8GiB|card size '-8GiB': a size must be positive[^\n]*\nexit code 1\n$"
             "reserve_above_card|plan -m llama-2-7b -c rtx-4090 --reserve 30GiB|--reserve 30GiB \\(30.00 GiB\\) leaves nothing of the 23.64 GiB card[^\n]*\nexit code 1\n$"
             "card_size_overflow|plan -m llama-2-7b -c 16777216TiB|card size '16777216TiB': more than 2\\^64 bytes \\(16 EiB\\)\nexit code 1\n$"
             "reserve_overflow|plan -m llama-2-7b --reserve 99999999TiB|--reserve: more than 2\\^64 bytes \\(16 EiB\\), got '99999999TiB'[^\n]*\nexit code 1\n$"
             "negative_reserve|plan -m llama-2-7b --reserve -1GiB|--reserve: a size cannot be negative, got '-1GiB'[^\n]*\nexit code 1\n$"
             "negative_free|plan -m llama-2-7b --free -2GB|--free: a size cannot be negative, got '-2GB'[^\n]*\nexit code 1\n$"
             "negative_budget|probe -m qwen2.5-0.5b --budget -2GiB|--budget: a size cannot be negative, got '-2GiB'[^\n]*\nexit code 1\n$"
             "negative_leave_free|log - --leave-free -1GiB|--leave-free: a size cannot be negative, got '-1GiB'[^\n]*\nexit code 1\n$"
             "report_unknown_extension|report -m llama-2-7b -o ${CMAKE_CURRENT_BINARY_DIR}/scratch/r.txt|-o [^\n]*r.txt: '.txt' names no report format; use -f json, md, csv, html or pdf\nexit code 1\n$")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 args)
  list(GET parts 2 regex)
  add_test(NAME cli_error_${name} COMMAND sh -c "${_cli} ${args} 2>&1; echo \"exit code $?\"")
  set_tests_properties(cli_error_${name} PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "^headroom-cli: ${regex}")
endforeach()
if(HEADROOM_FIXTURES_DIR AND EXISTS ${HEADROOM_FIXTURES_DIR}/gguf/ggml-vocab-phi-3.gguf)
  add_test(NAME cli_error_vocab_only_gguf COMMAND sh -c "${_cli} plan -m ${HEADROOM_FIXTURES_DIR}/gguf/ggml-vocab-phi-3.gguf 2>&1; echo \"exit code $?\"")
  set_tests_properties(cli_error_vocab_only_gguf PROPERTIES LABELS cli
    PASS_REGULAR_EXPRESSION "ggml-vocab-phi-3.gguf: no tensors: a tokenizer/vocabulary-only GGUF holds no weights.*exit code 1")
endif()

# Partial offload (issue 11): --offload N is llama.cpp's -ngl, --free what the device has now.
add_test(NAME cli_plan_offload_n COMMAND ${_cli} plan -m llama-2-13b -w q4_0 -c rtx-4090 --engine llama.cpp --offload 12)
set_tests_properties(cli_plan_offload_n PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "12/41 layers on the GPU")
add_test(NAME cli_plan_free COMMAND ${_cli} plan -m llama-2-13b -w q4_0 -c rtx-4090 --engine llama.cpp --free 6GiB)
set_tests_properties(cli_plan_free PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "other_processes.*partial offload: [0-9]+/41 layers on the GPU")

# Ollama from v0.30 (issue 11, engines/ollamalaunch.h): llama-server without -ngl, --fit places the
# layers: Qwen2.5-32B q4_k on a 16 GB card loads 43 of 65; num_gpu is -ngl; two cards pool.
add_test(NAME cli_plan_ollama_partial COMMAND ${_cli} plan -m qwen2.5-32b -w q4_k -c rtx-4060-ti-16gb --engine ollama)
set_tests_properties(cli_plan_ollama_partial PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "verdict +partial offload.*partial offload: 43/65 layers on the GPU, [0-9.]+ GiB in host memory.*Ollama would print: load_tensors: offloaded 43/65 layers to GPU.*note: llama.cpp --fit: placed -c 16384 -ngl 43;")
set_tests_properties(cli_plan_ollama_partial PROPERTIES FAIL_REGULAR_EXPRESSION "first card only;does not fit")
add_test(NAME cli_table_ollama_partial COMMAND ${_cli} table -m qwen2.5-32b -w q4_k -c rtx-4060-ti-16gb --engine ollama)
set_tests_properties(cli_table_ollama_partial PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "Qwen2.5-32B +q4_k +17.17 GiB +4,096 \\(partial: 43/65 layers, [0-9.]+ GiB RAM\\)")
add_test(NAME cli_plan_ollama_num_gpu COMMAND ${_cli} plan -m qwen2.5-32b -w q4_k -c rtx-4060-ti-16gb --engine ollama --offload 30)
set_tests_properties(cli_plan_ollama_num_gpu PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "partial offload: 30/65 layers on the GPU.*--flash-attn auto \\(on\\) -ngl 30;")
add_test(NAME cli_plan_ollama_two_cards COMMAND ${_cli} plan -m qwen2.5-32b -w q4_k -c rtx-4060-ti-16gb -c rtx-4060-ti-16gb --engine ollama)
set_tests_properties(cli_plan_ollama_two_cards PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "verdict +fits.*note: tensor split: CUDA0 [0-9]+ layers [^;]+, CUDA1 [0-9]+ layers.*gives llama-server all 2 GPUs")

# llama.cpp --fit (issue 11, common/fit.cpp): with -c given (the question's context) the layers move,
# the target per device from fit-target; a MoE moves experts first (-ot); ctx-size=0 keeps the
# trained context, one n_ctx in every line.
add_test(NAME cli_plan_fit_layers COMMAND ${_cli} plan -m llama-2-13b -w q4_0 -c rtx-4090 --engine llama.cpp --free 6GiB)
set_tests_properties(cli_plan_fit_layers PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "note: llama.cpp --fit: placed -c [0-9]+ -ngl 10;")
add_test(NAME cli_plan_fit_target COMMAND ${_cli} plan -m llama-2-13b -w q4_0 -c rtx-4090 --engine llama.cpp --free 6GiB --set fit-target=3072)
set_tests_properties(cli_plan_fit_target PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "fit_margin +3,221,225,472.*note: llama.cpp --fit: placed -c [0-9]+ -ngl 6;")
add_test(NAME cli_plan_fit_moe_experts COMMAND ${_cli} plan -m mixtral-8x7b -w q4_k_m -c rtx-4090 --engine llama.cpp)
set_tests_properties(cli_plan_fit_moe_experts PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "note: llama.cpp --fit: placed -c [0-9]+ -ngl 33 -ot blk[^ ]+exps=CPU")
add_test(NAME cli_plan_ctx_size_zero COMMAND ${_cli} plan -m llama-3.1-8b -w q4_0 -c rtx-4060 --engine llama.cpp --users 1 --set ctx-size=0)
set_tests_properties(cli_plan_ctx_size_zero PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "n_ctx_seq = 131072.*llama_context: n_ctx = 131072.*--fit: placed -c 131072 ")
add_test(NAME cli_error_fit_target_devices COMMAND sh -c "${_cli} plan -m llama-2-13b -w q4_0 -c rtx-4090 --engine llama.cpp --set fit-target=1,2 2>&1; echo \"exit code $?\"")
set_tests_properties(cli_error_fit_target_devices PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "fit-target=1,2 names 2 devices, the plan has 1 .*exit code 1")

# `engines` wraps each setting's description at 100 characters (some ran to 172 on one line).
headroom_cli_sh_test(cli_engines_settings_wrapped
  "${HEADROOM_CLI} engines | sed -n '/settings (--set KEY=VALUE):/,$p' > ${CLI_SCRATCH}/engines.txt; echo \"settings lines $(grep -c . ${CLI_SCRATCH}/engines.txt), over 100: $(awk 'length > 100' ${CLI_SCRATCH}/engines.txt | wc -l)\"; grep -A1 '^  mem-fraction-static' ${CLI_SCRATCH}/engines.txt"
  "settings lines [1-9][0-9]+, over 100: 0\n  mem-fraction-static \\(mem_fraction_static\\): a number; [^\n]+\n      [a-z]")
# Every line of `engines`, the policy table too (one ran to 149 characters), is at most 100 wide.
headroom_cli_sh_test(cli_engines_lines_wrapped
  "${HEADROOM_CLI} engines > ${CLI_SCRATCH}/engines-all.txt; echo \"lines $(grep -c . ${CLI_SCRATCH}/engines-all.txt), over 100: $(awk 'length > 100' ${CLI_SCRATCH}/engines-all.txt | wc -l)\"; grep -A1 '^tensorrt-llm-0 ' ${CLI_SCRATCH}/engines-all.txt"
  "lines [1-9][0-9]+, over 100: 0\ntensorrt-llm-0 +TensorRT-LLM 0.x [^\n]+\n +[a-z(]")
# An engine that cannot load the format prints only the verdict and the reason: no start-up lines,
# no memory bill, no capacity (verdict.h engineCannotRun).
headroom_cli_sh_test(cli_plan_engine_cannot_load_format
  "${HEADROOM_CLI} plan -m llama-3.1-8b -w int4-g128 --engine llama.cpp; echo \"would print, bill, capacity lines: $(${HEADROOM_CLI} plan -m llama-3.1-8b -w int4-g128 --engine llama.cpp | grep -c -e 'would print' -e 'KV cache budget' -e 'max resident tokens')\""
  "verdict +does not fit\n  why +the engine cannot load this weight format\n  does not fit: llama.cpp [^\n]+\n  llama.cpp \\(--fit\\) cannot load int4-g128 weights: it stops at start-up, before printing its buffers\n.*would print, bill, capacity lines: 0")
# The link between the ranks (core/interconnect.h): the card profile's (L40S: pcie, the single-GPU
# non-torch figure), the `interconnect` setting over it (H100 SXM set to network), and a bad value.
add_test(NAME cli_plan_interconnect_card COMMAND ${_cli} plan -m llama-3.1-8b -w bf16 -c l40s --engine vllm --tp 4)
set_tests_properties(cli_plan_interconnect_card PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "interconnect=pcie[^\n]*\n.*non_torch +268,435,456 +256.00 MiB +non-torch increase of the profile run per rank with TP 4, interconnect=pcie \\(the l40s profile's\\)")
add_test(NAME cli_plan_interconnect_set COMMAND ${_cli} plan -m llama-3.1-8b -w bf16 -c h100-sxm --engine sglang --tp 2 --set interconnect=network)
set_tests_properties(cli_plan_interconnect_set PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "distributed_init +139,586,437 +133.12 MiB +torch.distributed \\+ NCCL init per rank, interconnect=network \\(set\\)")
add_test(NAME cli_error_interconnect_value COMMAND sh -c "${_cli} plan -m llama-3.1-8b -w bf16 -c h100-sxm --engine vllm --tp 2 --set interconnect=infiniband 2>&1; echo \"exit code $?\"")
set_tests_properties(cli_error_interconnect_value PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "setting 'interconnect': expected one of nvswitch, nvlink, pcie-p2p, pcie, network, found 'infiniband'.*exit code 1")

# S1-3: llama.cpp before PR #12801 (b4000) caches DeepSeek-V2-Lite's MLA layers per head,
# 276,480 B/token in f16: the header, the capacity (5 users at 8,192 from the 11.78 GiB budget)
# and the KV figure (20 x 8,192 cells = 43,200 MiB) come from that one number, and the table's cell
# is the plan's max context.
add_test(NAME cli_plan_mla_pre12801 COMMAND ${_cli} plan -m deepseek-v2-lite -w q4_k -c rtx-4090 --engine llama.cpp@b4000 --context 8192 --users 20)
set_tests_properties(cli_plan_mla_pre12801 PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "KV cache +fp16, 276,480 B/token.*KV cache budget .* 276,480 B/token.*max users at 8,192 tokens +5\n.*llama_kv_cache: size = 43200.00 MiB")
add_test(NAME cli_table_mla_pre12801 COMMAND ${_cli} table -m deepseek-v2-lite -w q4_k -c rtx-4090 --engine llama.cpp@b4000 --context 8192 --users 20)
set_tests_properties(cli_table_mla_pre12801 PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "DeepSeek-V2-Lite +q4_k +10.48 GiB +2,048 \\(memory\\)")
