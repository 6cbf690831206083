#!/bin/sh
# scripts/fuzz.sh must fail, naming the target and the crash file, when a fuzzer finds something
# or exits non-zero (issue 13): run it on fake fuzzers (shell scripts that behave as libFuzzer
# does: fuzz_gguf writes a crash file and exits 1, fuzz_hfconfig dies without a report (exit 77),
# fuzz_safetensors runs clean), 1 s each, nothing built. Usage: fuzzscript.sh SOURCE_DIR SCRATCH
set -u
src=$1 scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch/bin" || exit 1
cat > "$scratch/bin/fuzz_gguf" <<'FAKE'
#!/bin/sh
for a; do case $a in -artifact_prefix=*) prefix=${a#-artifact_prefix=} ;; esac; done
printf 'GGUF\377' > "${prefix}crash-da39a3ee"
echo "==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011"
echo "SUMMARY: AddressSanitizer: heap-buffer-overflow ggufreader.cpp:123"
echo "artifact_prefix='$prefix'; Test unit written to ${prefix}crash-da39a3ee"
exit 1
FAKE
cat > "$scratch/bin/fuzz_hfconfig" <<'FAKE'
#!/bin/sh
echo "INFO: Seed: 1"
exit 77
FAKE
cat > "$scratch/bin/fuzz_safetensors" <<'FAKE'
#!/bin/sh
echo "Done 1000 runs in 1 second(s)"
exit 0
FAKE
chmod +x "$scratch"/bin/*
cd "$src" || exit 1
FUZZ_BIN=$scratch/bin FUZZ_WORK=$scratch/fuzzstate FIXTURES=$scratch/none timeout 60 \
  bash scripts/fuzz.sh 1 fuzz_safetensors fuzz_gguf fuzz_hfconfig > "$scratch/out" 2>&1
echo "fuzz.sh exit code $?"
grep '^fuzz:' "$scratch/out"
[ -f "$scratch/fuzzstate/fuzz-artifacts/fuzz_gguf/crash-da39a3ee" ] && echo "crash file kept"
# and a clean run exits 0
FUZZ_BIN=$scratch/bin FUZZ_WORK=$scratch/fuzzstate FIXTURES=$scratch/none timeout 60 \
  bash scripts/fuzz.sh 1 fuzz_safetensors > "$scratch/out-clean" 2>&1
echo "clean fuzz.sh exit code $?"
