// Compares a live oracle run (oracle.mjs --subset) with the recorded grid: every figure llama.cpp
// printed or allocated at a live grid point must equal the recorded one.
// Usage: node compare.mjs LIVE.json RECORDED.json
import fs from "node:fs";

const [livePath, recordedPath] = process.argv.slice(2);
const live = JSON.parse(fs.readFileSync(livePath, "utf8"));
const recorded = JSON.parse(fs.readFileSync(recordedPath, "utf8"));
const FIELDS = ["created", "n_ctx", "n_ctx_seq", "n_batch", "n_ubatch", "kv_caches", "kv_buffers_mib",
    "output_buffer_mib", "compute_buffers_mib", "memory_breakdown_cpu_bytes", "errors"];
const key = s => JSON.stringify(s);
let compared = 0;
const problems = [];
for (const model of live.models) {
    const rec = recorded.models.find(m => m.id === model.id);
    if (!rec) { problems.push(`${model.id}: not in the recorded grid`); continue; }
    for (const run of model.runs) {
        const r = rec.runs.find(x => key(x.settings) === key(run.settings));
        if (!r) { problems.push(`${model.id} ${key(run.settings)}: not in the recorded grid`); continue; }
        ++compared;
        for (const f of FIELDS)
            if (key(run[f]) !== key(r[f]))
                problems.push(`${model.id} ${key(run.settings)} ${f}: live ${key(run[f])}, recorded ${key(r[f])}`);
    }
}
console.log(`live llama.cpp ${live.llama_cpp.release} (node-llama-cpp ${live.node_llama_cpp}) against the grid recorded with ` +
    `${recorded.llama_cpp.release} (node-llama-cpp ${recorded.node_llama_cpp}): ${compared} points compared, ${problems.length} differences`);
for (const p of problems) console.log("  " + p);
process.exit(problems.length === 0 && compared > 0 ? 0 : 1);
