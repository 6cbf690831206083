# Hostile input through the CLI (issue 13): tests/cli/hostile.sh runs each case under a time and
# memory bound (timeout 20 s, ulimit -v 2 GiB; CTest's TIMEOUT 60 s on top); the hostile files are
# written by hostile-gen (tests/hostilefiles.h), none is committed.
add_executable(hostile-gen hostilegen.cpp)
target_link_libraries(hostile-gen PRIVATE headroom_formats headroom_test_support)

set(_hostile_render "")
if(TARGET headroom-render)
  set(_hostile_render $<TARGET_FILE:headroom-render>)
endif()

# The same cases again under AddressSanitizer + UndefinedBehaviorSanitizer: headroom-cli-asan is
# the CLI's own sources, the probes (CPU backend only) and the HTTP transport compiled with the
# sanitizers, linked to headroom_core_asan (tests/CMakeLists.txt; kernels stay plain). Its tests
# (cli_hostile_asan_<case>, label asan) fail on any sanitizer report; scripts/sanitize.sh runs them.
if(TARGET headroom_core_asan)
  set(_asan_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1)
  set(_asan_probes_config ${CMAKE_CURRENT_BINARY_DIR}/asan-generated)
  set(_have_cuda ${HEADROOM_HAVE_CUDA})
  set(HEADROOM_HAVE_CUDA 0)
  configure_file(${PROJECT_SOURCE_DIR}/probes/config.h.in ${_asan_probes_config}/headroom/probes/config.h)
  set(HEADROOM_HAVE_CUDA ${_have_cuda})
  find_package(Threads REQUIRED)
  find_package(CURL REQUIRED)
  add_library(headroom_probes_asan STATIC ${HEADROOM_PROBES_SOURCES})
  target_include_directories(headroom_probes_asan PUBLIC ${PROJECT_SOURCE_DIR}/probes/include
                             PRIVATE ${PROJECT_SOURCE_DIR}/probes/src ${_asan_probes_config})
  target_link_libraries(headroom_probes_asan PUBLIC headroom_core_asan PRIVATE headroom_kernels headroom::json Threads::Threads)
  add_library(headroom_remote_asan STATIC ${PROJECT_SOURCE_DIR}/remote/src/curlhttpclient.cpp)
  target_include_directories(headroom_remote_asan PUBLIC ${PROJECT_SOURCE_DIR}/remote/include)
  target_link_libraries(headroom_remote_asan PUBLIC headroom_core_asan PRIVATE CURL::libcurl)
  target_compile_definitions(headroom_remote_asan PRIVATE HEADROOM_VERSION="${PROJECT_VERSION}")
  add_executable(headroom-cli-asan ${HEADROOM_CLI_SOURCES})
  target_include_directories(headroom-cli-asan PRIVATE ${PROJECT_SOURCE_DIR}/cli)
  target_link_libraries(headroom-cli-asan PRIVATE headroom_core_asan headroom_remote_asan headroom_probes_asan headroom::cli11 headroom::json)
  target_compile_definitions(headroom-cli-asan PRIVATE HEADROOM_WITH_PROBES=1)
  foreach(t headroom_probes_asan headroom_remote_asan headroom-cli-asan)
    target_compile_options(${t} PRIVATE ${_asan_flags})
    target_link_options(${t} PRIVATE -fsanitize=address,undefined)
  endforeach()
endif()

# Adds test cli_hostile_<case> (and cli_hostile_asan_<case> on the sanitized CLI); its output must
# match `regex` (and never `fail_regex`, if given).
function(headroom_hostile_test case regex)
  add_test(NAME cli_hostile_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hostile.sh ${case} $<TARGET_FILE:headroom-cli> $<TARGET_FILE:hostile-gen>
                   ${CMAKE_CURRENT_BINARY_DIR}/hostile ${PROJECT_SOURCE_DIR} "${_hostile_render}")
  set_tests_properties(cli_hostile_${case} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}" TIMEOUT 60 LABELS "cli;hostile")
  if(ARGC GREATER 2)
    set_tests_properties(cli_hostile_${case} PROPERTIES FAIL_REGULAR_EXPRESSION "${ARGV2}")
  endif()
  if(TARGET headroom-cli-asan)
    add_test(NAME cli_hostile_asan_${case}
             COMMAND env HOSTILE_SANITIZED=1 sh ${CMAKE_CURRENT_SOURCE_DIR}/hostile.sh ${case} $<TARGET_FILE:headroom-cli-asan>
                     $<TARGET_FILE:hostile-gen> ${CMAKE_CURRENT_BINARY_DIR}/hostile-asan ${PROJECT_SOURCE_DIR} "${_hostile_render}")
    set(_fail "sanitizer report|MEMORY BOUND EXCEEDED")
    if(ARGC GREATER 2)
      set(_fail "${_fail}|${ARGV2}")
    endif()
    set_tests_properties(cli_hostile_asan_${case} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}" FAIL_REGULAR_EXPRESSION "${_fail}"
                         TIMEOUT 180 LABELS "cli;hostile;asan")
  endif()
endfunction()

# class 3: JSON with U+FFFD for the bytes that are not UTF-8; text with no raw ESC (octal 033)
headroom_hostile_test(inspect_names "\"architecture\": \"ll[^\"]+ama\".*exit code 0\n0\n")
headroom_hostile_test(plan_names "\"model\": \"[^\"]*llama-[^\"]*x1b\\[2J\\.gguf\".*exit code 0\n0\n")
# class 4
headroom_hostile_test(user_profiles
  "warning: skipped user profile [^\n]*users/models/deep.json: [^\n]*nested deeper than 64[^\n]*\nheadroom-cli: warning: skipped user profile [^\n]*users/models/long-id.json: /id: string longer than 4096[^\n]*\n.*llama-3.1-8b .*exit code 0")
# class 5
headroom_hostile_test(check_special
  "cannot read /dev/zero: not a regular file[^\n]*\n.*exit code 1\n.*cannot read fifo.json: not a regular file.*exit code 1\n.*fifo: not a regular file.*exit code 1\n")
headroom_hostile_test(check_deep "deep.json: report: nested deeper than 64 levels \\(at byte 82\\).*exit code 1")
# class 6
headroom_hostile_test(output_special
  "/dev/null is a character device, not a regular file: not replaced.*exit code 1\n/dev/null is still a device\n.*out.fifo is a FIFO, not a regular file: not replaced.*exit code 1\nout.fifo is still a FIFO\n.*exit code 0\nmode 600")
# class 7
headroom_hostile_test(flags_injection
  "llama-server -m '\\./a\\$\\(touch pwned\\)`touch pwned2`\\.gguf' -c [0-9]+.*\n\\[-m\\]\n\\[\\./a\\$\\(touch pwned\\)`touch pwned2`\\.gguf\\]\ncannot access 'pwned'[^\n]*\ncannot access 'pwned2'")
# class 8
headroom_hostile_test(render_leftovers "(SKIPPED: no headroom-render|exit code 0\nTMPDIR entries: 0\nbeside the output: 0\n.*exit code 1\ncannot access)")

# scripts/fuzz.sh fails on a finding or any non-zero exit of a fuzzer, naming the target and the
# crash file (fake fuzzers, 1 s each: tests/cli/fuzzscript.sh; nothing is built).
add_test(NAME fuzz_script_reports_crash
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzzscript.sh ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/fuzzscript)
set_tests_properties(fuzz_script_reports_crash PROPERTIES TIMEOUT 120 LABELS "cli;hostile" PASS_REGULAR_EXPRESSION
  "fuzz.sh exit code 1\nfuzz: FAILED fuzz_gguf \\(exit 1\\): crash file [^\n]*/fuzz-artifacts/fuzz_gguf/crash-da39a3ee [^\n]*\nfuzz: FAILED fuzz_hfconfig \\(exit 77\\): no crash file written[^\n]*\nfuzz: 2 of 3 targets failed: fuzz_gguf fuzz_hfconfig\ncrash file kept\nclean fuzz.sh exit code 0")
# class 7, round trip: for file names with spaces, quotes, $(...), backquotes, a newline, a tab,
# bytes that are not UTF-8, escape sequences, the printed llama-server and vllm lines run through
# sh and bash (stubs in PATH) hand the engine the exact bytes of the path, and run nothing else.
headroom_hostile_test(flags_roundtrip "name 1 llama.cpp sh: same bytes\n.*name 9 vllm bash: same bytes\ncannot access 'pwned'"
  "DIFFERENT|raw control byte|flags failed")
# sweep: `models --local` on store folders named with bytes that are not UTF-8 and escapes (the
# JSON listing aborted on them; the table printed them raw)
headroom_hostile_test(local_names "\"name\": \"pub\\\\\\\\x1b\\[2J/repo[^/\"]+/m\\\\\\\\x1b\\]0;x\\\\\\\\x07[^\"]*\".*exit code 0\n0\n")

# Review 13 (session 3), each with its hostile files made by the case itself:
# 1: log --save on a log whose name is not UTF-8 (aborted: type_error 316); the plan names it escaped
headroom_hostile_test(log_save_names
  "Saved the calibration to up/calibrations/h100-sxm.vllm.llama\nexit code 0\n  \"log\": \"serve[^\"]+\\\\\\\\x1b\\[2J\\.log\",\ncalibrated by vllm on h100-sxm from serve[^ ]+\\\\x1b\\[2J\\.log\nraw control bytes: 0\n")
# 2: one bad file in calibrations/ (not JSON, a FIFO, a link to /dev/zero, 100,000 deep) is one
# warning naming it, once for three plans; the good calibration still applies
headroom_hostile_test(calibrations_folder
  "warning: skipped calibration: up/calibrations/a-invalid.json: at byte 21: invalid JSON[^\n]*\nheadroom-cli: warning: skipped calibration: cannot read up/calibrations/b-fifo.json: not a regular file\nheadroom-cli: warning: skipped calibration: cannot read up/calibrations/c-zero.json: not a regular file\nheadroom-cli: warning: skipped calibration: up/calibrations/d-deep.json: at byte 97: JSON nested deeper than 64 levels[^\n]*\nexit code 0\n.*d-deep.json[^\n]*\n  note: calibrated by vllm on rtx-4090 from serve.log \\(0123\\)[^\n]*\nexit code 0")
# 4: report --check on a report naming a URL: not fetched without --allow-fetch, said so; fetched with it
headroom_hostile_test(check_nofetch
  "remote.json: 1 plan\\(s\\) not re-checked:\n  plan 0 \\(model 'http://127.0.0.1:9/x.gguf'\\): not re-checked: the model is no built-in or user profile[^\n]*--allow-fetch\nremote.json: valid \\(report schema 1\\); [^\n]* \\(0 of 1 plans recomputed\\): no drift\n.*exit code 0\nheadroom-cli: remote.json: cannot recompute plan 0: http://1.*exit code 1")
# 5: ESC, BEL, a newline and 0xff in every echoed name and value come out escaped, never raw
headroom_hostile_test(echoes
  "card: raw 0, escaped 1\nengine: raw 0, escaped 1\nweights: raw 0, escaped 1\nset-key: raw 0, escaped 1\nset-value: raw 0, escaped 1\ndevice: raw 0, escaped 1\noutput: raw 0, escaped 1\nlog-missing: raw 0, escaped 1\ncheck-parse: raw 0, escaped 1\nprobes-parse: raw 0, escaped 0\nspeed-parse: raw 0, escaped 0\ncheck-name: raw 0, escaped 1\nlocal-stores: raw 0, escaped 0\nev\\\\x1b\\[2Jil/x\\\\x07y\nevil:tag\\\\x1b\\[31m\nn\\\\x1b\\[2J\\\\x07\\.gguf"
  "raw [1-9]")
# 6: --title that is not UTF-8 names the option and the byte; an escape in it is escaped in Markdown
headroom_hostile_test(title
  "headroom-cli: --title: expected UTF-8 text; byte 2 \\(0xff\\) is not UTF-8\n.*exit code 1\nwrote t.md\n.*exit code 0\n# x\\\\x1b\\]0;pwn\\\\x07\\\\x1b\\[2J\nraw control bytes in t.md: 0")
# 7: the largest card size, one rule for --card, report and user card profiles
headroom_hostile_test(card_size
  "Card      1024TiB, 1.00 PiB total\nexit code 0\nheadroom-cli: card size '1025TiB': 1,126,999,418,470,400 bytes is more than the largest card size, 1024TiB \\(1,125,899,906,842,624 bytes\\)\n.*exit code 1\nheadroom-cli: card size '16000000TiB': [^\n]* is more than the largest card size[^\n]*\n.*exit code 1\nheadroom-cli: warning: skipped user profile up/cards/huge-card.json: /total_bytes: 9,223,372,036,854,775,808 bytes is more than the largest card size, 1024TiB[^\n]*\nexit code 0")
# 8: special files named like profiles, shards or store models are warned about, named
headroom_hostile_test(special_files
  "skipped user profile up/models/dir.json: a folder, not a regular file\n[^\n]*skipped user profile up/models/fifo.json: a FIFO, not a regular file\n[^\n]*skipped user profile up/cards/zero.json: a symbolic link to a character device, not a regular file\nexit code 0\n  - model.safetensors is a FIFO, not a regular file: skipped\nexit code 0\nlm-studio  pub/repo/f.gguf +error.*pub/repo/f.gguf: [^\n]*: not a regular file \\[read-failed\\]\n  pub/repo/z.gguf: [^\n]*: not a regular file \\[read-failed\\]\nexit code 0")
# 9: byte offsets and file errors say what happened, once
headroom_hostile_test(messages
  "t3.gguf: at byte 0: the file ends before the magic: needs 4 bytes, 3 remain \\[truncated\\]\n.*exit code 1\nheadroom-cli: cfg/config.json: at byte 15: invalid JSON.*exit code 1\nheadroom-cli: dangling.json is a symbolic link to nowhere/x.json, which does not exist: not written\n.*exit code 1\nheadroom-cli: loop1: too many levels of symbolic links \\[read-failed\\]\n.*exit code 1\nheadroom-cli: ./loop1: too many levels of symbolic links\n.*exit code 1\nheadroom-cli: cannot resolve the link loop1: Too many levels of symbolic links\n.*exit code 1")
