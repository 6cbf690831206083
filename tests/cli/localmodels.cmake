# headroom-cli models --local and -m ORG/NAME through the hub cache, on a home folder built from
# the fixtures by make-stores.sh (env -i: nothing of this machine's own stores leaks in).
set(_fx ${HEADROOM_FIXTURES_DIR})
set(_home ${CMAKE_CURRENT_BINARY_DIR}/scratch/stores-home)
set(_mk ${CMAKE_CURRENT_SOURCE_DIR}/make-stores.sh)
if(EXISTS ${_fx}/hf/Llama-2-7b-hf/config.json AND EXISTS ${_fx}/gguf/stories260K.gguf)
  headroom_cli_sh_test(cli_models_local
    "${_mk} ${_fx} ${_home}-1 && env -i HOME=${_home}-1 ${HEADROOM_CLI} models --local"
    "hf-cache +meta-llama/Llama-2-7b-hf +8cca527612d8 \\(main\\) +safetensors +12.55 GiB +13,476,839,424 +524,288.*\nollama +stories:260k +aaaaaaaaaaaa +gguf +1.12 MiB +1,171,200 +640.*\nlm-studio +ggml-org/stories260K-GGUF/stories260K.gguf +gguf +1.12 MiB +1,171,200 +640.*3 model\\(s\\)")
  headroom_cli_sh_test(cli_models_local_json
    "${_mk} ${_fx} ${_home}-2 && env -i HOME=${_home}-2 ${HEADROOM_CLI} models --local --json"
    "\"store\": \"ollama\",\n *\"name\": \"stories:260k\",.*\"weights_bytes\": 1171200,")
  headroom_cli_sh_test(cli_plan_hub_cache_id
    "${_mk} ${_fx} ${_home}-3 && env -i HOME=${_home}-3 ${HEADROOM_CLI} plan -m meta-llama/Llama-2-7b-hf -c 24GiB --json"
    "\"weights_bytes\": 13476839424")
  # An Ollama model name (issue 14 review: `-m stories:260k` was unknown) resolves through the
  # Ollama store; a name it does not hold says where it looked.
  headroom_cli_sh_test(cli_plan_ollama_name
    "${_mk} ${_fx} ${_home}-4 && env -i HOME=${_home}-4 HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m stories:260k -c 8GiB --json"
    "\"weights_bytes\": 1171200")
  headroom_cli_sh_test(cli_plan_ollama_name_absent
    "${_mk} ${_fx} ${_home}-5 && env -i HOME=${_home}-5 HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m stories:15m -c 8GiB 2>&1; env -i HOME=${_home}-5 OLLAMA_MODELS=/nonexistent/ollama HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m stories:260k 2>&1; echo \"exit code $?\""
    "unknown model 'stories:15m': not a profile id, no such file, and no Ollama model of that name in [^ ]*stores-home-5/.ollama/models \\(OLLAMA_MODELS, else ~/.ollama/models.*\nheadroom-cli: unknown model 'stories:260k': .*no Ollama model of that name in /nonexistent/ollama \\(absent\\).*exit code 1")
  # ORG/NAME:TAG (a GGUF pick as llama.cpp -hf spells it) looks in the hub cache first (review: it
  # went straight to HTTP); HF_HUB_OFFLINE proves no request was needed.
  set(_ggufrepo ${_home}-6/.cache/huggingface/hub/models--ggml-org--stories260K-GGUF)
  headroom_cli_sh_test(cli_plan_hub_cache_gguf_pick
    "${_mk} ${_fx} ${_home}-6 && mkdir -p ${_ggufrepo}/refs ${_ggufrepo}/snapshots/0123456789abcdef0123456789abcdef01234567 && printf 0123456789abcdef0123456789abcdef01234567 > ${_ggufrepo}/refs/main && cp ${_fx}/gguf/stories260K.gguf ${_ggufrepo}/snapshots/0123456789abcdef0123456789abcdef01234567/stories260K-Q8_0.gguf && cp ${_fx}/gguf/stories260K.gguf ${_ggufrepo}/snapshots/0123456789abcdef0123456789abcdef01234567/mmproj-stories260K-Q8_0.gguf && env -i HOME=${_home}-6 HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m ggml-org/stories260K-GGUF:Q8_0 -c 8GiB --json && env -i HOME=${_home}-6 HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m ggml-org/stories260K-GGUF:Q4_K_M -c 8GiB 2>&1; echo \"exit code $?\""
    "\"model\": \"ggml-org/stories260K-GGUF@0123456789abcdef0123456789abcdef01234567:Q8_0\".*\"mmproj\": 1171200.*\"weights_bytes\": 2342400.*holds no GGUF for the preset Q4_K_M: it has mmproj-stories260K-Q8_0.gguf, stories260K-Q8_0.gguf.*exit code 1")
endif()
headroom_cli_sh_test(cli_models_local_no_stores
  "env -i HOME=/nonexistent ${HEADROOM_CLI} models --local; echo \"exit code $?\""
  "0 model\\(s\\). Searched: no store found.*\nexit code 0")
headroom_cli_sh_test(cli_models_local_bad_dir
  "env -i HOME=/nonexistent ${HEADROOM_CLI} models --dir /nonexistent/models 2>&1; echo \"exit code $?\""
  "--dir /nonexistent/models: no such file or folder\nexit code 1")
headroom_cli_sh_test(cli_plan_unknown_repo_id
  "env -i HOME=/nonexistent HF_HUB_OFFLINE=1 ${HEADROOM_CLI} plan -m no-org/no-model 2>&1; echo \"exit code $?\""
  "not in a local Hugging Face hub cache; over HTTP: HF_HUB_OFFLINE is set.*\nexit code 1")

# -m ORG/NAME, hf://ORG/NAME@REV and https://.../FILE.gguf over HTTP (libcurl) from a loopback
# server with Range support and faults (tests/remote/rangeserver.py); about 20 s, no network beyond 127.0.0.1.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND EXISTS ${_fx}/hf/Llama-2-7b-hf/model.safetensors.index.json AND EXISTS ${_fx}/gguf/stories260K.gguf)
  add_test(NAME cli_remote_models
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/remote/remote_cli_test.py ${HEADROOM_CLI} ${_fx}
            ${CMAKE_CURRENT_BINARY_DIR}/scratch/remote)
  set_tests_properties(cli_remote_models PROPERTIES LABELS "cli" TIMEOUT 120)
endif()
