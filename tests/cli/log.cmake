# headroom-cli log: engine start-up logs of the corpus (tests/data/engine-logs, written out as
# plain log files at configure time), damaged copies (CRLF, ANSI), and input that is no log.
set(_logs ${PROJECT_SOURCE_DIR}/tests/data/engine-logs)
set(_scratch ${CMAKE_CURRENT_BINARY_DIR}/scratch/logs)
file(MAKE_DIRECTORY ${_scratch})

# Writes the verbatim lines of corpus case `id` to ${_scratch}/id.log.
function(headroom_corpus_log id)
  file(READ ${_logs}/${id}.json _json)
  string(JSON _n LENGTH "${_json}" log)
  math(EXPR _last "${_n} - 1")
  set(_text "")
  foreach(i RANGE ${_last})
    string(JSON _line GET "${_json}" log ${i})
    string(APPEND _text "${_line}\n")
  endforeach()
  file(WRITE ${_scratch}/${id}.log "${_text}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_logs}/${id}.json)
endfunction()

headroom_corpus_log(vllm-0.19-llama-3.1-8b-h100-ctx8192)
headroom_corpus_log(sglang-0.4.3-qwq-32b-4xl4-tp4)
set(_vllm ${_scratch}/vllm-0.19-llama-3.1-8b-h100-ctx8192.log)

# The 0.19 log of Llama-3.1-8B on an H100: the plan predicts what the vLLM unit predicts (475,840
# tokens, -0.04 %, on 2026-12-01; docs/accuracy.md follows it), the calibration gives the printed
# 476,016 exactly; at 32k x 16 users the pool is the same 29,751
# blocks (the micro-batch is), room for 14 users.
headroom_cli_sh_test(cli_log_vllm
  "${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 --context 32768 --users 16"
  "This log is from vLLM \\(version not printed; the lines are V1's\\); 10 of 10 lines were understood.*weights +[0-9.]+ GiB +14.99 GiB.*GPU KV cache size \\(tokens\\): the log 476,016, the plan [0-9,]+ \\([-+][0-9.]+ %\\), calibrated 476,016 \\(exact\\).*at context 32,768 and 16 users: 29,751 blocks \\(476,016 tokens\\), room for 14 users.*leaves 2.00 GiB free: 0.95 \\([0-9,]+ tokens of KV\\); besides 0.95 x 79.19 GiB the engine holds cuda_context 0.51 GiB, cuda_graphs 0.91 GiB")
# The same log from standard input with Windows line ends and colours.
headroom_cli_sh_test(cli_log_stdin_crlf_ansi
  "sed 's/^/\\x1b[32m/; s/$/\\x1b[0m\\r/' ${_vllm} | ${HEADROOM_CLI} log - -m llama-3.1-8b -w bf16 --kv-dtype bf16"
  "10 of 10 lines were understood.*calibrated 476,016 \\(exact\\)")
headroom_cli_sh_test(cli_log_sglang
  "${HEADROOM_CLI} log ${_scratch}/sglang-0.4.3-qwq-32b-4xl4-tp4.log -m qwen2.5-32b -w bf16 --kv-dtype bf16 -c l4 2>&1; echo \"exit code $?\""
  "This log is from SGLang.*max_total_num_tokens: the log 46,611.*calibrated 46,611 \\(exact\\).*exit code 0")
headroom_cli_sh_test(cli_log_save
  "rm -f ${_scratch}/cal.json && ${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -o ${_scratch}/cal.json >/dev/null && cat ${_scratch}/cal.json"
  "\"schema_version\": 1,\n  \"card\": \"79.19 GiB\",.*\"engine\": \"vllm\",.*\"ubatch_tokens\": 8192,\n  \"measured\": {\n    \"activation_peak_bytes\": [0-9]+")
# A version newer than the rules headroom read: compared with the newest, saying so, and naming
# the lines understood.
headroom_cli_sh_test(cli_log_unknown_version
  "(echo 'INFO 04-22 01:35:29 [api_server.py:1] vLLM API server version 0.99.0'; cat ${_vllm}) | ${HEADROOM_CLI} log - -m llama-3.1-8b -w bf16 2>&1; echo \"exit code $?\""
  "This log is from vLLM 0.99.0; 11 of 11 lines were understood.\nLines understood: 1-11\n.*This log is from vLLM 0.99.0, newer than the rules headroom read \\(vLLM [v0-9.]+\\): compared with the rules of vLLM.*calibrated 476,016 \\(exact\\).*exit code 0")
file(WRITE ${_scratch}/not-a-log.txt "hello\nworld\n")
headroom_cli_sh_test(cli_log_unknown
  "${HEADROOM_CLI} log ${_scratch}/not-a-log.txt 2>&1; echo \"exit code $?\""
  "not-a-log.txt: This log is from an engine not recognised; 0 of 2 lines were understood. Expected the start-up lines.*exit code 1")
headroom_cli_sh_test(cli_log_missing
  "${HEADROOM_CLI} log ${_scratch}/absent.log 2>&1; echo \"exit code $?\""
  "cannot read .*absent.log.*exit code 1")
# The model the log names cannot be read offline: its base model's profile stands in, saying so;
# a name no profile matches is an error asking for -m.
headroom_cli_sh_test(cli_log_model_by_name
  "env -i HOME=/nonexistent HF_HUB_OFFLINE=1 ${HEADROOM_CLI} log ${_vllm} 2>&1; echo \"exit code $?\""
  "The log names meta-llama/Llama-3.1-8B-Instruct, which cannot be read here \\(.*\\); planned with the profile llama-3.1-8b.*calibrated 476,016 \\(exact\\).*exit code 0")
headroom_cli_sh_test(cli_log_no_model
  "sed 's|meta-llama/Llama-3.1-8B-Instruct|no-org/no-model|g' ${_vllm} | env -i HOME=/nonexistent HF_HUB_OFFLINE=1 ${HEADROOM_CLI} log - 2>&1; echo \"exit code $?\""
  "no-org/no-model.*the model the log names; give another with -m.*exit code 1")

# A calibration saved by `log --save` is the card's profile overlay: later plans on that card
# and engine use it and name it; --calibration FILE picks one; --calibration none turns it off.
set(_up ${_scratch}/user-profiles)
headroom_cli_sh_test(cli_log_calibrated_plan
  "rm -rf ${_up} && HEADROOM_USER_PROFILES=${_up} ${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save >/dev/null && ls ${_up}/calibrations && HEADROOM_USER_PROFILES=${_up} ${HEADROOM_CLI} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm --context 8192 && HEADROOM_USER_PROFILES=${_up} ${HEADROOM_CLI} plan -m llama-3.1-8b -w bf16 -c h100-sxm --engine vllm --calibration none | grep -c 'calibrated by'"
  "h100-sxm.vllm.llama-3.1-8b.json\n.*calibrated by vllm on h100-sxm from vllm-0.19-llama-3.1-8b-h100-ctx8192.log \\([0-9a-f]+\\): activation peak [0-9.]+ GiB measured at a micro-batch of 8192 tokens.*\n0\n?$")
# `table` names the calibration it applies (issue 14 review: it applied one silently).
headroom_cli_sh_test(cli_log_calibrated_table
  "rm -rf ${_up}-t && HEADROOM_USER_PROFILES=${_up}-t ${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save >/dev/null && HEADROOM_USER_PROFILES=${_up}-t ${HEADROOM_CLI} table -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm --context 8192"
  "What fits:.*h100-sxm: .*\n  calibrated by vllm on h100-sxm from vllm-0.19-llama-3.1-8b-h100-ctx8192.log \\([0-9a-f]+\\): activation peak")
# `frontier` names the calibration it applies too (review 14: it changed the frontier silently).
headroom_cli_sh_test(cli_log_calibrated_frontier
  "rm -rf ${_up}-f && HEADROOM_USER_PROFILES=${_up}-f ${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save >/dev/null && HEADROOM_USER_PROFILES=${_up}-f ${HEADROOM_CLI} frontier -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm"
  "resident tokens \\(fits\\).*\n  calibrated by vllm on h100-sxm from vllm-0.19-llama-3.1-8b-h100-ctx8192.log \\([0-9a-f]+\\): activation peak")
# The overlay is found in whichever user folder the faces are given: XDG_CONFIG_HOME/headroom/profiles
# (no HEADROOM_USER_PROFILES), and --user-profiles DIR for both the save and the plan.
set(_xdg ${_scratch}/xdg)
headroom_cli_sh_test(cli_log_calibration_xdg
  "rm -rf ${_xdg} && env -i HOME=/nonexistent XDG_CONFIG_HOME=${_xdg} ${HEADROOM_CLI} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save >/dev/null && ls ${_xdg}/headroom/profiles/calibrations && env -i HOME=/nonexistent XDG_CONFIG_HOME=${_xdg} ${HEADROOM_CLI} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm | grep -c 'calibrated by vllm on h100-sxm'"
  "^h100-sxm.vllm.llama-3.1-8b.json\n1\n$")
set(_dirup ${_scratch}/dir-profiles)
headroom_cli_sh_test(cli_log_calibration_user_profiles_option
  "rm -rf ${_dirup} && env -i HOME=/nonexistent ${HEADROOM_CLI} --user-profiles ${_dirup} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save | grep -c 'Saved the calibration to ${_dirup}/calibrations/h100-sxm.vllm.llama-3.1-8b.json' && env -i HOME=/nonexistent ${HEADROOM_CLI} --user-profiles ${_dirup} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm | grep -c 'calibrated by vllm on h100-sxm' && env -i HOME=/nonexistent ${HEADROOM_CLI} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm | grep -c 'calibrated by'"
  "^1\n1\n0\n$")
headroom_cli_sh_test(cli_plan_calibration_file
  "${HEADROOM_CLI} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c 79.19GiB --engine vllm --calibration ${_scratch}/cal.json --json"
  "calibrated by vllm on 79.19 GiB from vllm-0.19-llama-3.1-8b-h100-ctx8192.log")
headroom_cli_sh_test(cli_plan_calibration_wrong_engine
  "${HEADROOM_CLI} plan -m llama-3.1-8b -c 79.19GiB --engine sglang --calibration ${_scratch}/cal.json 2>&1; echo \"exit code $?\""
  "cal.json: a calibration of vllm, the plan's engine is sglang.*exit code 1")
set_tests_properties(cli_plan_calibration_file cli_plan_calibration_wrong_engine PROPERTIES DEPENDS cli_log_save)
# A pipe is read to its end (issue 14 review: `log <(cmd)` was refused): process substitution,
# and a FIFO whose writer comes later; a FIFO whose writer never writes nor closes stops after
# --read-timeout, never hangs; a device is still refused.
headroom_cli_sh_test(cli_log_process_substitution
  "bash -c '${HEADROOM_CLI} log <(cat ${_vllm}) -m llama-3.1-8b -w bf16 --kv-dtype bf16' 2>&1; echo \"exit code $?\""
  "10 of 10 lines were understood.*calibrated 476,016 \\(exact\\).*exit code 0")
headroom_cli_sh_test(cli_log_fifo
  "rm -f ${_scratch}/fifo.log && mkfifo ${_scratch}/fifo.log && (sleep 1; cat ${_vllm} > ${_scratch}/fifo.log) & timeout 20 ${HEADROOM_CLI} log ${_scratch}/fifo.log -m llama-3.1-8b -w bf16 --kv-dtype bf16 2>&1; echo \"exit code $?\""
  "10 of 10 lines were understood.*calibrated 476,016 \\(exact\\).*exit code 0")
headroom_cli_sh_test(cli_log_fifo_silent_writer
  "rm -f ${_scratch}/fifo2.log && mkfifo ${_scratch}/fifo2.log && (sleep 3 > ${_scratch}/fifo2.log 2>/dev/null &) ; timeout 20 ${HEADROOM_CLI} log ${_scratch}/fifo2.log --read-timeout 1 2>&1; echo \"exit code $?\""
  "fifo2.log: no data for 1 s after 0 bytes, and the writer has not closed it.*exit code 1")
headroom_cli_sh_test(cli_log_device_refused
  "timeout 10 ${HEADROOM_CLI} log /dev/zero 2>&1; echo \"exit code $?\""
  "cannot read /dev/zero: .*not a regular file.*a log is read from a regular file or a pipe.*exit code 1")

# A card given as a size finds the calibration saved from the log's own total (review: `-c
# 79.19GiB` found none); a plan on another card says why none matched; another model takes only
# the model-independent terms and says so.
set(_sz ${_scratch}/size-profiles)
headroom_cli_sh_test(cli_log_calibration_card_as_size
  "rm -rf ${_sz} && ${HEADROOM_CLI} --user-profiles ${_sz} log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 --save >/dev/null && ${HEADROOM_CLI} --user-profiles ${_sz} plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c 79.19GiB --engine vllm --set gpu-memory-utilization=0.95 --context 8192 && ${HEADROOM_CLI} --user-profiles ${_sz} plan -m llama-3.1-8b -w bf16 -c 80GiB --engine vllm && ${HEADROOM_CLI} --user-profiles ${_sz} plan -m qwen2.5-7b -w bf16 -c 79.19GiB --engine vllm"
  "calibrated by vllm on 79.19 GiB from vllm-0.19-llama-3.1-8b-h100-ctx8192.log \\([0-9a-f]+\\): activation peak.*no saved vllm calibration matches this card \\(80.00 GiB\\): 79.19_GiB.vllm.llama-3.1-8b.json was measured on a card of 79.19 GiB.*measured with llama-3.1-8b, this plan is for qwen2.5-7b\\): only its model-independent terms apply")
# A failed analysis is not saved and leaves the good calibration as it was.
headroom_cli_sh_test(cli_log_failed_not_saved
  "rm -rf ${_sz}2 && ${HEADROOM_CLI} --user-profiles ${_sz}2 log ${_vllm} -m llama-3.1-8b -w bf16 --kv-dtype bf16 --save >/dev/null && cp ${_sz}2/calibrations/79.19_GiB.vllm.llama-3.1-8b.json ${_scratch}/good.json && head -5 ${_vllm} | ${HEADROOM_CLI} --user-profiles ${_sz}2 log - -m llama-3.1-8b -w bf16 --kv-dtype bf16 --save 2>&1 | tail -1; cmp ${_scratch}/good.json ${_sz}2/calibrations/79.19_GiB.vllm.llama-3.1-8b.json && echo kept"
  "calibration not saved \\(any saved one is kept as it was\\): the log prints no KV figure: nothing was calibrated\nkept\n$")
# A TP log that prints no TP size: --tp gives it, and the output says what was read and what was
# given or assumed; --set gives a setting the log lacks in the engine's spelling.
headroom_corpus_log(vllm-0.19-llama-3.1-8b-h100-tp2)
headroom_corpus_log(tensorrt-llm-0.13-qwen1.5-7b-a100-40gb)
headroom_cli_sh_test(cli_log_tp_given
  "${HEADROOM_CLI} log ${_scratch}/vllm-0.19-llama-3.1-8b-h100-tp2.log -m llama-3.1-8b -w bf16 --kv-dtype bf16 --tp 2 2>&1; echo \"exit code $?\""
  "Read from the log: .*max-model-len=.*\nGiven: tensor parallel 2\n.*calibrated [0-9,]+ \\(exact\\).*exit code 0")
headroom_cli_sh_test(cli_log_set_and_assumed
  "${HEADROOM_CLI} log ${_scratch}/tensorrt-llm-0.13-qwen1.5-7b-a100-40gb.log -m llama-2-7b -w fp16 --set max_batch_size=8 2>&1; echo \"exit code $?\""
  "the lines are 0.x C++ runtime's.*Read from the log: no setting\nGiven: max_batch_size=8\nAssumed \\(neither printed nor given; the engine's defaults\\): .*tokens_per_block=64.*tp_size=1 \\(the log prints no TP size: set it if the engine ran on more GPUs\\).*KV cache blocks: the log 631.*calibrated 631 \\(exact\\).*exit code 0")
