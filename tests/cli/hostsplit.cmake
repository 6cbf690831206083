# Partial plans with every layer on the GPU and the host-only card (issue 11, review S1): llama.cpp
# --n-cpu-moe / --no-kv-offload put experts or the KV cache in host memory (the GPU side checked
# against the GPU, the host side against --host-ram, the verdict "partial"), and `-c cpu` plans
# llama.cpp on the CPU alone. Figures: tests/core/tst_hosttensors.cpp and tst_cpuonly.cpp.
set(_cli $<TARGET_FILE:headroom-cli>)

# Qwen3-30B-A3B q4_k on an RTX 4060, -ngl 99 --n-cpu-moe 48: 48 x 324 MiB of experts on the host,
# the dense part (701.73 MiB) and 3 GiB of KV on the GPU. Before: "does not fit: weights 16.04 > 6.79 GiB".
add_test(NAME cli_plan_host_experts COMMAND ${_cli} plan -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --offload 99 --set n-cpu-moe=48)
set_tests_properties(cli_plan_host_experts PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "CUDA0 model buffer size = 701\\.73 MiB.*= on the GPU +4,586,971,136.*verdict +partial offload\n +placement +partial\n.*partial offload: 49/49 layers on the GPU with routed experts 15\\.19 GiB in host memory")
add_test(NAME cli_plan_host_experts_gpu_over COMMAND ${_cli} plan -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --offload 99 --set n-cpu-moe=20)
set_tests_properties(cli_plan_host_experts_gpu_over PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "does not fit: -ngl 49 --n-cpu-moe 20 puts 12\\.84 GiB on the GPU \\(weights 9\\.54 GiB, KV 3\\.00 GiB")
add_test(NAME cli_flags_host_experts COMMAND ${_cli} flags -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --offload 99 --set n-cpu-moe=48)
set_tests_properties(cli_flags_host_experts PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "llama-server -m [^ ]+ -c 32768 -np 4 -ngl 49 --n-cpu-moe 48 ")
# --no-kv-offload: 1,792 MiB of KV on the host, the weights on the GPU.
add_test(NAME cli_plan_no_kv_offload COMMAND ${_cli} plan -m qwen2.5-7b -w q4_k_m -c rtx-4060 --engine llama.cpp --set no-kv-offload=true)
set_tests_properties(cli_plan_no_kv_offload PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "KV cache \\(--no-kv-offload\\) +1,879,048,192.*partial offload: 29/29 layers on the GPU with the KV cache 1\\.75 GiB in host memory, 2\\.17 GiB there in all")
add_test(NAME cli_flags_no_kv_offload COMMAND ${_cli} flags -m qwen2.5-7b -w q4_k_m -c rtx-4060 --engine llama.cpp --set no-kv-offload=true)
set_tests_properties(cli_flags_no_kv_offload PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION " -ngl 29 --no-kv-offload ")
add_test(NAME cli_table_host_tensors COMMAND ${_cli} table -m qwen2.5-7b -w q4_k_m -c cpu -c rtx-4060 --engine llama.cpp --set no-kv-offload=true)
set_tests_properties(cli_table_host_tensors PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\"N \\(CPU only: X RAM\\)\" runs on the host alone.*8,192 \\(CPU only: 9\\.32 GiB RAM\\) +8,192 \\(partial: 29/29 layers, KV on CPU, 2\\.17 GiB RAM\\)")

# The host-only card: Qwen2.5-7B Q4_K_M on the CPU, every buffer the CPU's.
add_test(NAME cli_plan_cpu COMMAND ${_cli} plan -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp)
set_tests_properties(cli_plan_cpu PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "no GPU: all 29 layers on the CPU.*CPU_Mapped model buffer size = 4460\\.45 MiB.*CPU KV buffer size = 1792\\.00 MiB.*verdict +CPU only\n +placement +CPU only\n.*CPU only: no GPU, all 29 layers on the host, 9\\.32 GiB in host memory"
  FAIL_REGULAR_EXPRESSION "CUDA|cuda_context|fit_margin")
add_test(NAME cli_plan_cpu_host_ram COMMAND ${_cli} plan -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp --host-ram 8GiB)
set_tests_properties(cli_plan_cpu_host_ram PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "does not fit: CPU only: no GPU, all 29 layers on the host, 9\\.32 GiB in host memory: more than the 8\\.00 GiB of host memory \\(--host-ram\\)")
# The corpus' CPU case (llama.cpp#5137, build 1971, -ngl 0, n_ctx 512) planned on the host-only card:
# "CPU buffer size = 11712.97 MiB" within 0.05 % (11,700-11,719 MiB), KV 64.00 MiB exact.
add_test(NAME cli_plan_cpu_mixtral_b1971 COMMAND ${_cli} plan -m mixtral-8x7b -w gguf-iq2_xxs-b1971 -c cpu --engine llama.cpp@b1971 --context 512 --users 1 --no-flash-attention)
set_tests_properties(cli_plan_cpu_mixtral_b1971 PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "CPU_Mapped model buffer size = 117(0[0-9]|1[0-9])\\.[0-9][0-9] MiB.*CPU KV buffer size = 64\\.00 MiB")
add_test(NAME cli_flags_cpu COMMAND ${_cli} flags -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp)
set_tests_properties(cli_flags_cpu PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "-c 32768 -np 4 -ngl 0 .*no layer on the GPU: llama.cpp on the CPU")
add_test(NAME cli_plan_cpu_vllm COMMAND ${_cli} plan -m qwen2.5-7b -c cpu --engine vllm)
set_tests_properties(cli_plan_cpu_vllm PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "why +the engine is not planned without a GPU\n +does not fit: vLLM needs a GPU: .*--engine llama.cpp")
add_test(NAME cli_error_cpu_offload COMMAND sh -c "${_cli} plan -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp --offload 10 2>&1; echo \"exit code $?\"")
set_tests_properties(cli_error_cpu_offload PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "--offload 10 with --card cpu: the host-only card has no GPU.*exit code 1")
# --offload none on a GPU card: no CUDA0 model or KV buffer line (llama.cpp allocates none at -ngl 0).
add_test(NAME cli_plan_offload_none_gpu COMMAND ${_cli} plan -m qwen2.5-7b -w q4_k_m -c rtx-4060 --engine llama.cpp --offload none)
set_tests_properties(cli_plan_offload_none_gpu PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "offloaded 0/29 layers to GPU" FAIL_REGULAR_EXPRESSION "CUDA0 (model|KV) buffer")
# Its verdict is the CPU-only state, as the placement says, and nothing binds: the user chose it
# (issue 11 review, S2: "verdict partial offload" beside "placement CPU only" before).
add_test(NAME cli_plan_offload_none_verdict COMMAND ${_cli} plan -m qwen2.5-7b -w q4_k_m -c rtx-4060 --engine llama.cpp --offload none)
set_tests_properties(cli_plan_offload_none_verdict PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "verdict +CPU only\n +placement +CPU only\n +[^\n]+\n  CPU only \\(0/29 layers on the GPU\\)"
  FAIL_REGULAR_EXPRESSION "partial offload|binding limit")
add_test(NAME cli_flags_host_experts_gpu_over COMMAND ${_cli} flags -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --offload 99 --set n-cpu-moe=20)
set_tests_properties(cli_flags_host_experts_gpu_over PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "^# nothing to launch: .*--n-cpu-moe 20 puts 12\\.84 GiB on the GPU")
# The report prints the same verdict and the host's bill alone (no device bill) for the host-only card.
add_test(NAME cli_report_cpu COMMAND ${_cli} report -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp -f md)
set_tests_properties(cli_report_cpu PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "8,192 \\(CPU only: 9\\.32 GiB RAM\\).*\nCPU only: no GPU, all 29 layers on the host, 9\\.32 GiB in host memory\n\n\\*\\*Host side: no GPU, all 29 layers on the CPU\\*\\*")
# Its memory row says "no GPU" (no 0 B card, weights or KV budget) and its verdict row core's
# "CPU only" (verdict.h verdictLabel, the JSON verdict's label), not the state id "partial offload".
add_test(NAME cli_report_cpu_rows COMMAND ${_cli} report -m qwen2.5-7b -w q4_k_m -c cpu --engine llama.cpp -f md)
set_tests_properties(cli_report_cpu_rows PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "\\| Qwen2\\.5-7B · q4_k_m · cpu \\| no GPU \\| - \\| - \\| - \\| - \\| 9\\.32 GiB \\|.*\\| verdict \\| CPU only \\|"
  FAIL_REGULAR_EXPRESSION "verdict \\| partial offload")
# -ot/--override-tensor (src/llama-model.cpp tensor_buft_overrides): "exps=CPU" keeps every routed
# expert on the host, as --n-cpu-moe 48 does; flags passes it on; a bad buffer type is an error.
add_test(NAME cli_plan_override_tensor COMMAND ${_cli} plan -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --offload 99 --set ot=exps=CPU)
set_tests_properties(cli_plan_override_tensor PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "CUDA0 model buffer size = 701\\.73 MiB.*partial offload: 49/49 layers on the GPU with routed experts 15\\.19 GiB in host memory")
add_test(NAME cli_flags_override_tensor COMMAND ${_cli} flags -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --set override-tensor=exps=CPU)
set_tests_properties(cli_flags_override_tensor PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION " -ngl 49 -ot exps=CPU ")
add_test(NAME cli_error_override_tensor COMMAND sh -c "${_cli} plan -m qwen3-30b-a3b -w q4_k -c rtx-4060 --engine llama.cpp --set ot=exps=GPU 2>&1; echo \"exit code $?\"")
set_tests_properties(cli_error_override_tensor PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "override-tensor: unknown buffer type \"GPU\" in \"exps=GPU\": expected CPU or CUDA<N>\nexit code 1")

# --offload for an engine that keeps every layer on the GPU (issue 11, review S2): a note says it is
# not applied; vLLM's names --cpu-offload-gb and the whole GiB of the plan's shortfall (weights
# 17.89 GiB + overheads against the usable 14.01 GiB: 4.72 GiB short). Figures:
# tests/core/tst_offload_unsupported.cpp.
add_test(NAME cli_plan_offload_unsupported_tgi COMMAND ${_cli} plan -m qwen2.5-32b -w int4-g128 -c rtx-4060-ti-16gb --engine tgi --offload 20)
set_tests_properties(cli_plan_offload_unsupported_tgi PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "note: Text Generation Inference keeps every layer on the GPU and has no layer offload: --offload 20 is not applied\n"
  FAIL_REGULAR_EXPRESSION "cpu-offload-gb")
add_test(NAME cli_plan_offload_vllm_hint COMMAND ${_cli} plan -m qwen2.5-32b -w int4-g128 -c rtx-4060-ti-16gb --engine vllm --offload auto)
set_tests_properties(cli_plan_offload_vllm_hint PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "note: vLLM keeps every layer on the GPU and has no layer offload: --offload auto is not applied; vLLM's offload is --cpu-offload-gb \\(weights in pinned host memory, per GPU: --set cpu-offload-gb=N, which Headroom models\\); the weights are 4\\.7[0-9] GiB short: --set cpu-offload-gb=5 would make them fit")
