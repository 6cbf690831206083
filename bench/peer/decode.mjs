// llama.cpp's own decode tokens/s of GGUF files (node-llama-cpp 3.21.1, prebuilt CPU binaries, no
// build, no download): per file and thread count, a 8-token prompt then 16 generated tokens one at a
// time, timed from the first generated token to the last; the median of RUNS runs.
//   node decode.mjs RUNS THREADS FILE...   -> one JSON line per (file, threads)
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [runsArg, threadsArg, ...files] = process.argv.slice(2);
const runs = Number(runsArg), threads = Number(threadsArg);
if (!(runs > 0) || !(threads > 0) || files.length === 0) {
    console.error("usage: node decode.mjs RUNS THREADS FILE...");
    process.exit(2);
}
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                              logLevel: LlamaLogLevel.error});
const median = v => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const generated = 16;
for (const file of files) {
    const model = await llama.loadModel({modelPath: file});
    const context = await model.createContext({contextSize: 512, batchSize: 64, threads, sequences: 1});
    const sequence = context.getSequence();
    const rates = [];
    for (let r = 0; r < runs; ++r) {
        await sequence.clearHistory();
        let count = 0, first = 0;
        for await (const token of sequence.evaluate([1, 2, 3, 4, 5, 6, 7, 8])) {
            void token;
            if (++count === 1)
                first = performance.now();
            if (count === generated)
                break;
        }
        rates.push((generated - 1) / ((performance.now() - first) / 1e3));
    }
    console.log(JSON.stringify({file, threads, runs, decode_tokens_per_s: median(rates), all_tokens_per_s: rates}));
    await context.dispose();
    await model.dispose();
}
