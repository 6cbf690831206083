# headroom-cli inspect: output checked with regular expressions, errors by exit code and stderr.
# Values asserted are published ones (SOURCES.md, peer-expectations.md, BRIEF §1.1).
set(_cli $<TARGET_FILE:headroom-cli>)
set(_fx ${HEADROOM_FIXTURES_DIR})

if(EXISTS ${_fx}/gguf/stories260K.gguf)
  add_test(NAME cli_inspect_gguf_json COMMAND ${_cli} inspect ${_fx}/gguf/stories260K.gguf --json)
  set_tests_properties(cli_inspect_gguf_json PROPERTIES
    PASS_REGULAR_EXPRESSION "\"format\": \"gguf\",\n  \"format_version\": \"3\".*\"tensor_count\": 48,.*\"weights_bytes\": 1171200,")
  add_test(NAME cli_inspect_gguf_text COMMAND ${_cli} inspect ${_fx}/gguf/stories260K.gguf)
  set_tests_properties(cli_inspect_gguf_text PROPERTIES PASS_REGULAR_EXPRESSION "format +gguf 3.*1,171,200 B")
  # Its general.name is "llama", the architecture: the plan names the model by its file instead.
  add_test(NAME cli_plan_gguf_placeholder_name COMMAND ${_cli} table -m ${_fx}/gguf/stories260K.gguf -c rtx-4090)
  set_tests_properties(cli_plan_gguf_placeholder_name PROPERTIES PASS_REGULAR_EXPRESSION "\nstories260K\.gguf +fp32 ")
endif()
if(EXISTS ${_fx}/gguf/ggml-vocab-llama-v1.gguf)
  add_test(NAME cli_inspect_gguf_v1 COMMAND ${_cli} inspect ${_fx}/gguf/ggml-vocab-llama-v1.gguf --json)
  set_tests_properties(cli_inspect_gguf_v1 PROPERTIES PASS_REGULAR_EXPRESSION "\"format_version\": \"1\".*\"tensor_count\": 0,")
endif()
if(EXISTS ${_fx}/hf/Llama-2-7b-hf)
  # @huggingface/gguf: 6,738,415,616 parameters; index total_size 13,476,839,424
  add_test(NAME cli_inspect_directory COMMAND ${_cli} inspect ${_fx}/hf/Llama-2-7b-hf --json)
  set_tests_properties(cli_inspect_directory PROPERTIES
    PASS_REGULAR_EXPRESSION "\"parameters\": 6738415616,.*\"weights_bytes\": 13476839424,")
endif()
if(EXISTS ${_fx}/hf/Meta-Llama-3-8B/config.json)
  # BRIEF §1.1: 32 layers x 8 KV heads x 128 in fp16 = 131,072 B/token
  add_test(NAME cli_inspect_config COMMAND ${_cli} inspect ${_fx}/hf/Meta-Llama-3-8B/config.json --json)
  set_tests_properties(cli_inspect_config PROPERTIES
    PASS_REGULAR_EXPRESSION "\"format\": \"hf-config\".*\"kv_bytes_per_token\": 131072,")
endif()
add_test(NAME cli_inspect_missing_exit COMMAND ${_cli} inspect /nonexistent/model.gguf)
set_tests_properties(cli_inspect_missing_exit PROPERTIES WILL_FAIL TRUE)
add_test(NAME cli_inspect_missing_message COMMAND ${_cli} inspect /nonexistent/model.gguf)
# A data error: the message names the file and the code; no usage text (that is for usage errors).
set_tests_properties(cli_inspect_missing_message PROPERTIES PASS_REGULAR_EXPRESSION "nonexistent/model.gguf: no such file.*\\[file-not-found\\]"
  FAIL_REGULAR_EXPRESSION "Usage")
add_test(NAME cli_inspect_no_path COMMAND ${_cli} inspect)
set_tests_properties(cli_inspect_no_path PROPERTIES WILL_FAIL TRUE)

# Issue 15: a hybrid's recurrent state per sequence, said by inspect. Falcon-H1-1.5B-Instruct's
# config as the engine-log case llama.cpp-b9000-falcon-h1-1.5b-jetson-orin-nano-ctx32768-hybrid
# quotes it (https://huggingface.co/tiiuae/Falcon-H1-1.5B-Instruct/blob/main/config.json): llama.cpp
# printed "RS buffer size = 72.98 MiB" for its one sequence (GeniePod/genie-claw#410).
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/falcon-h1-1.5b/config.json [[{"model_type": "falcon_h1", "hidden_size": 2048,
 "intermediate_size": 4608, "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
 "vocab_size": 65537, "max_position_embeddings": 131072, "tie_word_embeddings": false, "mamba_d_ssm": 3072,
 "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_state": 256, "mamba_n_groups": 1, "mamba_d_conv": 4,
 "mamba_expand": 2, "torch_dtype": "bfloat16"}]])
add_test(NAME cli_inspect_hybrid_state COMMAND ${_cli} inspect ${CMAKE_CURRENT_BINARY_DIR}/falcon-h1-1.5b/config.json)
set_tests_properties(cli_inspect_hybrid_state PROPERTIES PASS_REGULAR_EXPRESSION
  "state +24 recurrent layers, 36.49 MiB a sequence in 16 bits \\(vLLM\\), 72.98 MiB in f32 \\(llama.cpp\\), whatever the context")
