# Hostile input through the CLI (issue 13): tests/cli/hostile.sh runs each case under a time and
# memory bound (timeout 20 s, ulimit -v 2 GiB; CTest's TIMEOUT 60 s on top); the hostile files are
# written by hostile-gen (tests/hostilefiles.h), none is committed.
add_executable(hostile-gen hostilegen.cpp)
target_link_libraries(hostile-gen PRIVATE headroom_formats headroom_test_support)

set(_hostile_render "")
if(TARGET headroom-render)
  set(_hostile_render $<TARGET_FILE:headroom-render>)
endif()

# Adds test cli_hostile_<case>; its output must match `regex` (and never `fail_regex`, if given).
function(headroom_hostile_test case regex)
  add_test(NAME cli_hostile_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hostile.sh ${case} $<TARGET_FILE:headroom-cli> $<TARGET_FILE:hostile-gen>
                   ${CMAKE_CURRENT_BINARY_DIR}/hostile ${PROJECT_SOURCE_DIR} "${_hostile_render}")
  set_tests_properties(cli_hostile_${case} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}" TIMEOUT 60 LABELS "cli;hostile")
  if(ARGC GREATER 2)
    set_tests_properties(cli_hostile_${case} PROPERTIES FAIL_REGULAR_EXPRESSION "${ARGV2}")
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
headroom_hostile_test(render_leftovers "(SKIPPED: no headroom-render|exit code 0\nTMPDIR entries: 0\n.*exit code 1\ncannot access)")
