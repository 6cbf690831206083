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
