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
        # vLLM refuses the GGUF's own q4_0 weights ("nothing to launch", launchflags.cpp), so its
        # command is asked for bf16: what is checked here is only how the file's name is quoted.
        weights=q4_0; [ "$engine" = vllm ] && weights=bf16
        out=$("$cli" flags --engine $engine -m "./$name" -w $weights -c rtx-4090) || { echo "name $n $engine: flags failed"; continue; }
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
  calibrations_folder) # review 13.2: bad files in calibrations/ are skipped, one warning each; the good one applies
    total=$(sed -n 's/.*"total_bytes": *\([0-9]*\).*/\1/p' "$src/profiles/cards/rtx-4090.json")
    mkdir -p up/calibrations
    printf '{"schema_version": 1, "card": "rtx-4090", "card_total_bytes": %s, "engine": "vllm", "engine_version": "", "model": "llama-3.1-8b", "log": "serve.log", "log_hash": "0123", "ubatch_tokens": 0, "measured": {"activation_peak_bytes": 3221225472}, "model_independent": {}}\n' \
      "$total" > up/calibrations/z-good.json
    printf '{"schema_version": 1,' > up/calibrations/a-invalid.json
    mkfifo up/calibrations/b-fifo.json
    ln -s /dev/zero up/calibrations/c-zero.json
    { printf '{"schema_version": 1, "measured": '; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; printf '}'; } > up/calibrations/d-deep.json
    # three plans, one warning per bad file (not one per plan)
    bounded "$cli" --user-profiles up table -m llama-3.1-8b -w int4-g128 fp16 bf16 -c rtx-4090 --engine vllm 2>&1 | grep -E 'warning|exit code'
    bounded "$cli" --user-profiles up plan -m llama-3.1-8b -c rtx-4090 --engine vllm 2>&1 | grep -E 'warning|calibrated by|exit code' | cut -c1-120 ;;
  log_save_names)      # review 13.1: log --save on a log whose file name is not UTF-8 (aborted: type_error 316)
    cp "$4/../scratch/logs/vllm-0.19-llama-3.1-8b-h100-ctx8192.log" "serve$(printf '\377\033[2J').log"
    bounded "$cli" --user-profiles up log ./serve*.log -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --save > out.txt 2>&1
    grep -E 'Saved|exit code' out.txt | cut -c1-60
    grep -h '"log"' up/calibrations/*.json
    bounded "$cli" --user-profiles up plan -m llama-3.1-8b -w bf16 --kv-dtype bf16 -c h100-sxm --engine vllm >> out.txt 2>&1
    grep -o 'calibrated by vllm on h100-sxm from [^ ]*' out.txt
    echo "raw control bytes: $(tr -d '\n' < out.txt | tr -dc '\000-\037\177' | wc -c)" ;;
  echoes)              # review 13.5: ESC, BEL, a newline and 0xff through every echo of a name or value
    bad=$(printf 'x\033[2J\007\377\nz')
    # raw NAME CMD...: runs CMD (bounded) and prints NAME, how many raw control bytes (< 0x20 but
    # the line ends, 0x7f) its stdout and stderr held, and whether it echoed the value escaped
    raw() {
      name=$1; shift
      bounded "$@" > "raw-$name.out" 2>&1
      echo "$name: raw $(grep -v '^bound: ' "raw-$name.out" | tr -d '\n' | tr -dc '\000-\037\177' | wc -c)," \
           "escaped $(grep -c 'x\\x1b\[2J\\x07' "raw-$name.out")"
    }
    raw card "$cli" plan -m llama-3.1-8b -c "$bad"
    raw engine "$cli" plan -m llama-3.1-8b -c rtx-4090 --engine "$bad"
    raw weights "$cli" plan -m llama-3.1-8b -c rtx-4090 -w "$bad"
    raw set-key "$cli" plan -m llama-3.1-8b -c rtx-4090 --engine vllm --set "$bad=1"
    raw set-value "$cli" plan -m llama-3.1-8b -c rtx-4090 --engine vllm --set "max-num-seqs=$bad"
    raw device "$cli" probe --device "$bad" -m llama-3.1-8b
    raw output "$cli" report -m llama-3.1-8b -c rtx-4090 -f md -o "o$bad.md"
    raw log-missing "$cli" log "no$bad.log"
    printf '{"title": "\033\377' > "bad$bad.json"
    raw check-parse "$cli" report --check "bad$bad.json"
    raw probes-parse "$cli" report -m llama-3.1-8b -c rtx-4090 --probes "bad$bad.json" -o p.json
    raw speed-parse "$cli" report -m llama-3.1-8b -c rtx-4090 --speed "bad$bad.json" -o p.json
    "$cli" report -m llama-3.1-8b -c rtx-4090 -o "good$bad.json" 2>/dev/null
    raw check-name "$cli" report --check "good$bad.json"
    # store names: a hub folder, an Ollama manifest, an LM Studio file
    hub="home/.cache/huggingface/hub/models--ev$(printf '\033[2J')il--x$(printf '\007')y"
    mkdir -p "$hub/snapshots/abc" "$hub/refs" && printf abc > "$hub/refs/main" && printf '{}' > "$hub/snapshots/abc/config.json"
    man=home/.ollama/models/manifests/registry.ollama.ai/library/evil
    mkdir -p "$man" home/.ollama/models/blobs && printf '{"schemaVersion": 2, "layers": []}' > "$man/tag$(printf '\033[31m\377')"
    "$gen" names home/.lmstudio/models/pub/repo >/dev/null && mv home/.lmstudio/models/pub/repo/llama.gguf "home/.lmstudio/models/pub/repo/n$(printf '\033[2J\007').gguf"
    raw local-stores env HOME="$scratch/home" "$cli" models --local
    grep -o -E 'ev\\x1b\[2Jil/x\\x07y|evil:tag\\x1b\[31m|n\\x1b\[2J\\x07\.gguf' raw-local-stores.out | sort -u ;;
  card_size)           # review 13.7: one largest card size (1024TiB) for --card, reports and user card profiles
    bounded "$cli" plan -m llama-3.1-8b -c 1024TiB 2>&1 | grep -E '^Card|exit code'
    bounded "$cli" plan -m llama-3.1-8b -c 1025TiB 2>&1
    bounded "$cli" report -m llama-3.1-8b -c 16000000TiB -o r.json 2>&1
    mkdir -p up/cards
    sed 's/"id": "rtx-4090"/"id": "huge-card"/; s/"total_bytes": [0-9]*/"total_bytes": 9223372036854775808/' \
      "$src/profiles/cards/rtx-4090.json" > up/cards/huge-card.json
    bounded "$cli" --user-profiles up cards 2>&1 | grep -E 'warning|exit code' ;;
  title)               # review 13.6: --title that is not UTF-8 names the option; escapes never reach a document raw
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 --title "$(printf 'ab\377c')" -o t.json 2>&1
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 --title "$(printf 'x\033]0;pwn\007\033[2J')" -f md -o t.md 2>&1
    head -1 t.md
    echo "raw control bytes in t.md: $(tr -d '\n' < t.md | tr -dc '\000-\037\177' | wc -c)" ;;
  special_files)       # review 13.8: FIFOs, devices, folders named like profiles or shards are warned about, not skipped silently
    mkdir -p up/models up/cards model home/.lmstudio/models/pub/repo
    mkfifo up/models/fifo.json && ln -s /dev/zero up/cards/zero.json && mkdir up/models/dir.json
    bounded "$cli" --user-profiles up models 2>&1 | grep -E 'warning|exit code'
    printf '{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":256,"max_position_embeddings":2048,"torch_dtype":"bfloat16"}' > model/config.json
    mkfifo model/model.safetensors
    bounded "$cli" inspect model 2>&1 | grep -E 'FIFO|exit code'
    mkfifo home/.lmstudio/models/pub/repo/f.gguf && ln -s /dev/zero home/.lmstudio/models/pub/repo/z.gguf
    bounded env HOME="$scratch/home" "$cli" models --local 2>&1 | grep -E 'pub/repo|exit code' ;;
  messages)            # review 13.9: byte offsets and file errors say what happened, once
    "$gen" names . || exit 1
    head -c 3 llama.gguf > t3.gguf
    bounded "$cli" inspect t3.gguf 2>&1
    mkdir cfg && printf '{"a": 1,\n "b": }' > cfg/config.json
    bounded "$cli" inspect cfg/config.json 2>&1 | cut -c1-60
    ln -s nowhere/x.json dangling.json
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 -o dangling.json 2>&1
    ln -s loop1 loop2 && ln -s loop2 loop1
    bounded "$cli" inspect loop1 2>&1
    bounded "$cli" plan -m ./loop1 -c rtx-4090 2>&1
    bounded "$cli" report -m llama-3.1-8b -c rtx-4090 -o loop1 2>&1 ;;
  check_nofetch)       # review 13.4: report --check reads and fetches nothing the report names without --allow-fetch
    "$cli" report -m llama-3.1-8b -c rtx-4090 -o r.json 2>/dev/null
    sed 's#"llama-3.1-8b"#"http://127.0.0.1:9/x.gguf"#g' r.json > remote.json
    bounded "$cli" report --check remote.json 2>&1
    bounded "$cli" report --check remote.json --allow-fetch 2>&1 | cut -c1-60 ;;
  *) echo "unknown case $case_name"; exit 1 ;;
esac
