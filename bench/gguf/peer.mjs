// The peer: @huggingface/gguf parses the same GGUF file (local file, header ranges only).
// Prints one JSON line like bench_gguf_import: median/min wall time over N runs and peak RSS.
//   node peer.mjs FILE [RUNS]
import { gguf } from "@huggingface/gguf";
import { readFileSync } from "node:fs";

const [file, runsArg] = process.argv.slice(2);
const runs = Math.max(1, parseInt(runsArg ?? "20", 10));
const times = [];
let last;
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  last = await gguf(file, { allowLocalFile: true, computeParametersCount: true });
  const t1 = process.hrtime.bigint();
  times.push(Number(t1 - t0) / 1e6);
}
times.sort((a, b) => a - b);
const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
console.log(JSON.stringify({
  tool: "@huggingface/gguf",
  file,
  runs,
  median_ms: +times[Math.floor(times.length / 2)].toFixed(3),
  min_ms: +times[0].toFixed(3),
  peak_rss_kib: hwm ? +hwm[1] : -1,
  tensors: last.tensorInfos.length,
  parameters: last.parameterCount,
}));
