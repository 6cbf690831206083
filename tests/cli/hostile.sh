#!/bin/sh
# CLI regression tests for hostile input (issue 13), one case per run:
#   hostile.sh CASE CLI HOSTILE_GEN SCRATCH SOURCE_DIR [RENDER]
# Every command runs under a time bound (timeout 20 s) and a memory bound (ulimit -v 2 GiB of
# address space); the case prints what CTest's regular expressions check, and "bound: ..." with
# the figures measured (GNU time) when /usr/bin/time is there.
set -u
case_name=$1 cli=$2 gen=$3 scratch=$4/$1 src=$5 render=${6:-}
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
cd "$scratch" || exit 1

# Under the sanitizers (HOSTILE_SANITIZED=1, the CLI built with ASan + UBSan): ASan reserves
# terabytes of address space, so the memory bound is the peak RSS that GNU time measures (2 GiB,
# "MEMORY BOUND EXCEEDED" otherwise) instead of ulimit -v, and the time bound is 60 s; every
# sanitizer report goes to a file of $scratch/sanitizer and is printed at the end as
# "sanitizer report: ..." (CTest's FAIL_REGULAR_EXPRESSION).
sanitized=${HOSTILE_SANITIZED:-0}
if [ "$sanitized" = 1 ]; then
  mkdir -p "$scratch/sanitizer"
  export ASAN_OPTIONS="detect_leaks=1:log_path=$scratch/sanitizer/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:log_path=$scratch/sanitizer/ubsan"
  report_sanitizers() {
    for f in "$scratch"/sanitizer/*; do
      [ -f "$f" ] && { echo "sanitizer report: $f"; cat "$f"; }
    done
  }
  trap report_sanitizers EXIT
fi

# bounded CMD...: runs CMD with the bounds; its exit code is printed as "exit code N".
bounded() {
  if [ "$sanitized" = 1 ]; then
    timeout 60 /usr/bin/time -f "%M" -o "$scratch/.rss" "$@"
    code=$?
    rss=$(tail -1 "$scratch/.rss" 2>/dev/null || echo 0); rm -f "$scratch/.rss"
    echo "bound: ${rss} KiB peak (limits 60 s, 2 GiB RSS under the sanitizers)" >&2
    [ "${rss:-0}" -le 2097152 ] 2>/dev/null || echo "MEMORY BOUND EXCEEDED: ${rss} KiB"
  elif [ -x /usr/bin/time ]; then
    ( ulimit -v 2097152; timeout 20 /usr/bin/time -f "bound: %e s, %M KiB peak (limits 20 s, 2 GiB)" -o "$scratch/.time" "$@" )
    code=$?
  else
    ( ulimit -v 2097152; timeout 20 "$@" )
    code=$?
  fi
  [ -f "$scratch/.time" ] && cat "$scratch/.time" >&2 && rm -f "$scratch/.time"
  echo "exit code $code"
}

case $case_name in
  inspect_names)       # class 3: names that are not UTF-8, control characters
    "$gen" names . || exit 1
    bounded "$cli" inspect ./text-*.gguf --json 2>&1
    bounded "$cli" inspect ./llama-*.gguf 2>&1 | od -An -c | grep -c '033' ;;
  plan_names)
    "$gen" names . || exit 1
    bounded "$cli" plan -m ./llama-*.gguf -c 24GiB --json 2>&1
    bounded "$cli" plan -m ./llama-*.gguf -c 24GiB 2>&1 | od -An -c | grep -c '033' ;;
  user_profiles)       # class 4: a bad user profile is skipped with a warning naming it
    "$gen" profiles users "$src/profiles/models/llama-3.1-8b.json" || exit 1
    HEADROOM_USER_PROFILES=$scratch/users bounded "$cli" models 2>&1 | grep -E 'warning|llama-3.1-8b |exit code' ;;
  check_special)       # class 5: report --check on /dev/zero and a FIFO, inspect on a FIFO
    mkfifo fifo fifo.json
    bounded "$cli" report --check /dev/zero 2>&1
    bounded "$cli" report --check fifo.json 2>&1
    bounded "$cli" inspect fifo 2>&1 ;;
  check_deep)
    { printf '{"schema_version": '; head -c 200000 /dev/zero | tr '\0' '['; printf '1'; head -c 200000 /dev/zero | tr '\0' ']'; printf '}'; } > deep.json
    bounded "$cli" report --check deep.json 2>&1 ;;
  output_special)      # class 6: -o over a device, a FIFO, a 0600 file
    mkfifo out.fifo
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 -o /dev/null 2>&1
    [ -c /dev/null ] && echo "/dev/null is still a device"
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 -f json -o out.fifo 2>&1
    [ -p out.fifo ] && echo "out.fifo is still a FIFO"
    echo old > secret.json && chmod 600 secret.json
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 -o secret.json 2>&1
    echo "mode $(stat -c %a secret.json)" ;;
  flags_injection)     # class 7: a pasted command runs nothing from the file name
    "$gen" names . || exit 1
    cp llama.gguf 'a$(touch pwned)`touch pwned2`.gguf'
    line=$("$cli" flags --engine llama.cpp -m "./a\$(touch pwned)\`touch pwned2\`.gguf" -c rtx-4090 | grep '^llama-server')
    echo "$line"
    # Run the printed line with printf in place of llama-server: the arguments come back literally.
    sh -c "printf '[%s]\n' ${line#llama-server }" | head -2
    ls pwned pwned2 2>&1 | sed 's/.*cannot access/cannot access/' ;;
  flags_roundtrip)     # class 7: the printed command, pasted into sh and bash, gives the engine the file's own name
    "$gen" names . || exit 1
    mkdir stub
    for engine in vllm llama-server; do
      # a stub that writes each argument it was given to a file of its own: args/1, args/2, ...
      printf '#!/bin/sh\nrm -rf %s/args; mkdir %s/args; i=0\nfor a; do i=$((i + 1)); printf "%%s" "$a" > %s/args/$i; done\n' \
        "$scratch" "$scratch" "$scratch" > "stub/$engine"
    done
    chmod +x stub/*
    nl='
'
    n=0
    for name in 'with space.gguf' "it's \"quoted\".gguf" 'a$(touch pwned).gguf' 'b`touch pwned`.gguf' \
                "new${nl}line.gguf" "$(printf 'tab\there.gguf')" "$(printf 'bytes\377\376.gguf')" \
                "$(printf 'esc\033[2J\007.gguf')" '$HOME;*.gguf'; do
      n=$((n + 1))
      cp llama.gguf "./$name"
      printf '%s' "./$name" > expected
      for engine in llama.cpp vllm; do
        # the command: from line 2 of the output up to the blank line before the flag table
        out=$("$cli" flags --engine $engine -m "./$name" -c rtx-4090) || { echo "name $n $engine: flags failed"; continue; }
        cmd=$(printf '%s\n' "$out" | sed -n '2,/^$/p')
        case $cmd in *"$(printf '\033')"*|*"$(printf '\007')"*|*"$(printf '\t')"*) echo "name $n $engine: raw control byte in the command" ;; esac
        for shell in sh bash; do
          command -v $shell >/dev/null || continue
          rm -rf args
          PATH=$scratch/stub:$PATH $shell -c "$cmd"
          # the model is the second argument (llama-server -m PATH; vllm serve PATH)
          if cmp -s args/2 expected; then echo "name $n $engine $shell: same bytes"
          else echo "name $n $engine $shell: DIFFERENT: $(od -An -c args/2 2>&1 | head -2)"; fi
        done
      done
    done
    ls pwned 2>&1 | sed 's/.*cannot access/cannot access/' ;;
  local_names)         # sweep: store folders and files named with bytes that are not UTF-8 and escape sequences
    "$gen" names . || exit 1
    dir="home/.lmstudio/models/pub$(printf '\033[2J')/repo$(printf '\377')"
    mkdir -p "$dir" && cp llama.gguf "$dir/m$(printf '\033]0;x\007').gguf"
    HOME=$scratch/home bounded "$cli" models --local --json 2>&1 | grep -E '"name"|exit code'
    HOME=$scratch/home bounded "$cli" models --local 2>&1 | od -An -c | grep -c '033' ;;
  render_leftovers)    # class 8: no temporary report in TMPDIR; the renderer refuses an orphaned start
    [ -x "$render" ] || { echo "SKIPPED: no headroom-render"; exit 0; }
    mkdir tmp
    TMPDIR=$scratch/tmp bounded env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$cli" report -m llama-3.1-8b -c rtx-4090 --format pdf -o r.pdf 2>&1
    # Count only Headroom's own leftovers: Qt's runtime folder (TMPDIR/runtime-USER, made by the
    # renderer when XDG_RUNTIME_DIR is unset) is not one; a temporary report or a .tmp-* is.
    echo "TMPDIR entries: $(ls -A tmp | grep -v -x 'runtime-.*' | wc -l)"
    echo "beside the output: $(ls -A . | grep -c '\.tmp-')"
    "$cli" report -m llama-3.1-8b -c rtx-4090 -o r.json
    HEADROOM_RENDER_PARENT_PID=1 bounded env -u DISPLAY -u WAYLAND_DISPLAY "$render" --format pdf -o orphan.pdf r.json 2>&1
    ls orphan.pdf 2>&1 | sed 's/.*cannot access/cannot access/' ;;
  *) echo "unknown case $case_name"; exit 1 ;;
esac
