// The llama.cpp oracle: writes GGUF files with real model shapes (zero weights, sparse on disk),
// loads them with real llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binaries, no download), creates
// a context for each grid point and records what llama.cpp itself prints and allocates:
//   llama_context: n_ctx / n_ctx_seq / n_batch / n_ubatch,
//   llama_kv_cache: size = ... MiB (N cells, L layers, S/T seqs), K (type) ..., V (type) ...,
//   CPU KV buffer size, CPU compute buffer size, CPU output buffer size,
//   the exact bytes of the context's memory breakdown (KV + compute, as llama_context::memory_breakdown
//   sums them), and every refusal (the error llama.cpp logs when it will not create the context).
//
// Usage: node oracle.mjs OUT.json [--subset] [--workdir DIR]
//   --subset: a few grid points per model (the live re-check of the CTest test, seconds).
// The context is created through the addon (llama_context_params as given: n_ctx, n_batch = n_ubatch,
// n_seq_max, flash_attn_type, type_k, type_v, swa_full), not through LlamaContext, whose JS layer
// pads and rescales the sizes.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";

const args = process.argv.slice(2);
const outPath = args.find(a => !a.startsWith("--"));
const subset = args.includes("--subset");
const workdirArg = args.indexOf("--workdir");
const workdir = workdirArg >= 0 ? args[workdirArg + 1] : fs.mkdtempSync(path.join(os.tmpdir(), "headroom-oracle-"));
if (!outPath) {
    console.error("usage: node oracle.mjs OUT.json [--subset] [--workdir DIR]");
    process.exit(2);
}

// ---------------------------------------------------------------- GGUF writer (docs/gguf.md, v3)
const GGUF_TYPE = {u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9};
const GGML = {F32: 0, F16: 1, Q4_0: 2, Q8_0: 8};
// F32 weights: no CPU repack buffer (AMX, AVX2 Q4_0) copies them at load, so loading stays fast.
const WEIGHT_TYPE = GGML.F32;

function ggufBytes(kvs, tensors, alignment = 32) {
    const parts = [];
    const u32 = v => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
    const u64 = v => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
    const f32 = v => { const b = Buffer.alloc(4); b.writeFloatLE(v); parts.push(b); };
    const str = s => { const b = Buffer.from(s, "utf8"); u64(b.length); parts.push(b); };
    parts.push(Buffer.from("GGUF"));
    u32(3);
    u64(tensors.length);
    u64(kvs.length);
    for (const [key, type, value] of kvs) {
        str(key);
        u32(type === "strings" ? GGUF_TYPE.array : GGUF_TYPE[type]);
        if (type === "u32") u32(value);
        else if (type === "f32") f32(value);
        else if (type === "string") str(value);
        else if (type === "bool") parts.push(Buffer.from([value ? 1 : 0]));
        else if (type === "strings") { u32(GGUF_TYPE.string); u64(value.length); for (const v of value) str(v); }
        else throw new Error("kv type " + type);
    }
    let offset = 0;
    for (const t of tensors) {
        str(t.name);
        u32(t.dims.length);
        for (const d of t.dims) u64(d);
        u32(t.type);
        u64(offset);
        t.offset = offset;
        offset += Math.ceil(t.bytes / alignment) * alignment;
    }
    const header = Buffer.concat(parts);
    const dataStart = Math.ceil(header.length / alignment) * alignment;
    return {header, total: dataStart + offset};
}

function tensorBytes(dims, type) {
    const n = dims.reduce((a, b) => a * b, 1);
    if (type === GGML.F32) return n * 4;
    if (type === GGML.F16) return n * 2;
    throw new Error("type " + type);
}

// A byte-level BPE vocabulary of n tokens: the 256 GPT-2 byte characters, then placeholders.
function vocabTokens(n) {
    const bytes = [];
    for (let b = 33; b <= 126; ++b) bytes.push(b);
    for (let b = 161; b <= 172; ++b) bytes.push(b);
    for (let b = 174; b <= 255; ++b) bytes.push(b);
    const chars = bytes.map(b => String.fromCodePoint(b));
    let extra = 0;
    for (let b = 0; b < 256; ++b)
        if (!bytes.includes(b)) chars.push(String.fromCodePoint(256 + extra++));
    const out = chars.slice(0, n);
    for (let i = out.length; i < n; ++i) out.push(`<t${i}>`);
    return out;
}

// One decoder-only model in llama.cpp's tensor names; weights F16, norms and biases F32.
function writeModel(file, m) {
    const kvs = [
        ["general.architecture", "string", m.arch],
        ["general.name", "string", m.id],
        ["general.alignment", "u32", 32],
        [`${m.arch}.block_count`, "u32", m.layers],
        [`${m.arch}.context_length`, "u32", m.context],
        [`${m.arch}.embedding_length`, "u32", m.hidden],
        [`${m.arch}.feed_forward_length`, "u32", m.ffn],
        [`${m.arch}.attention.head_count`, "u32", m.heads],
        [`${m.arch}.attention.head_count_kv`, "u32", m.kvHeads],
        [`${m.arch}.attention.layer_norm_rms_epsilon`, "f32", 1e-6],
        [`${m.arch}.rope.freq_base`, "f32", 10000],
        [`${m.arch}.vocab_size`, "u32", m.vocab],
        ["tokenizer.ggml.model", "string", "gpt2"],
        ["tokenizer.ggml.pre", "string", "default"],
        ["tokenizer.ggml.tokens", "strings", vocabTokens(m.vocab)],
        ["tokenizer.ggml.merges", "strings", []],
    ];
    if (m.headDim !== m.hidden / m.heads) {
        kvs.push([`${m.arch}.attention.key_length`, "u32", m.headDim]);
        kvs.push([`${m.arch}.attention.value_length`, "u32", m.headDim]);
    }
    if (m.slidingWindow) {
        kvs.push([`${m.arch}.attention.sliding_window`, "u32", m.slidingWindow]);
    }
    const T = [];
    const add = (name, dims, type) => T.push({name, dims, type, bytes: tensorBytes(dims, type)});
    const q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    add("token_embd.weight", [m.hidden, m.vocab], WEIGHT_TYPE);
    add("output_norm.weight", [m.hidden], GGML.F32);
    if (!m.tied) add("output.weight", [m.hidden, m.vocab], WEIGHT_TYPE);
    for (let i = 0; i < m.layers; ++i) {
        const b = `blk.${i}.`;
        add(b + "attn_norm.weight", [m.hidden], GGML.F32);
        add(b + "attn_q.weight", [m.hidden, q], WEIGHT_TYPE);
        add(b + "attn_k.weight", [m.hidden, kv], WEIGHT_TYPE);
        add(b + "attn_v.weight", [m.hidden, kv], WEIGHT_TYPE);
        if (m.qkvBias) {
            add(b + "attn_q.bias", [q], GGML.F32);
            add(b + "attn_k.bias", [kv], GGML.F32);
            add(b + "attn_v.bias", [kv], GGML.F32);
        }
        if (m.arch === "gemma3") {
            add(b + "attn_q_norm.weight", [m.headDim], GGML.F32);
            add(b + "attn_k_norm.weight", [m.headDim], GGML.F32);
            add(b + "post_attention_norm.weight", [m.hidden], GGML.F32);
            add(b + "post_ffw_norm.weight", [m.hidden], GGML.F32);
        }
        add(b + "attn_output.weight", [q, m.hidden], WEIGHT_TYPE);
        add(b + "ffn_norm.weight", [m.hidden], GGML.F32);
        add(b + "ffn_gate.weight", [m.hidden, m.ffn], WEIGHT_TYPE);
        add(b + "ffn_up.weight", [m.hidden, m.ffn], WEIGHT_TYPE);
        add(b + "ffn_down.weight", [m.ffn, m.hidden], WEIGHT_TYPE);
    }
    const {header, total} = ggufBytes(kvs, T);
    const fd = fs.openSync(file, "w");
    fs.writeSync(fd, header);
    fs.ftruncateSync(fd, total); // zero weights, sparse on disk
    fs.closeSync(fd);
    return {tensorBytes: T.reduce((a, t) => a + t.bytes, 0), fileBytes: total};
}

// ---------------------------------------------------------------- models (real shapes)
// Shapes from each model's config.json on the Hugging Face hub.
const MODELS = [
    {id: "qwen2.5-0.5b", arch: "qwen2", layers: 24, hidden: 896, heads: 14, kvHeads: 2, headDim: 64, ffn: 4864,
        vocab: 151936, context: 32768, tied: true, qkvBias: true},
    {id: "tinyllama-1.1b", arch: "llama", layers: 22, hidden: 2048, heads: 32, kvHeads: 4, headDim: 64, ffn: 5632,
        vocab: 32000, context: 2048, tied: false, qkvBias: false},
    // MHA with head dim 80 (StableLM-3B / Phi-2 class): a 32-value block does not divide it.
    {id: "mha-hd80-3b", arch: "llama", layers: 4, hidden: 2560, heads: 32, kvHeads: 32, headDim: 80, ffn: 6912,
        vocab: 50304, context: 4096, tied: false, qkvBias: false},
    // Gemma-3-1B: 5 sliding-window layers (window 512) to 1 global layer.
    {id: "gemma3-1b", arch: "gemma3", layers: 26, hidden: 1152, heads: 4, kvHeads: 1, headDim: 256, ffn: 6912,
        vocab: 262144, context: 32768, tied: true, qkvBias: false, slidingWindow: 512},
];

// ---------------------------------------------------------------- the grid
// The live subset: a few points of the recorded grid (compare.mjs matches them by their settings).
const SUBSET = [
    {model: "qwen2.5-0.5b", n_ctx: 4096, n_seq_max: 1, n_ubatch: 512, flash_attn: true, type_k: "f16", type_v: "f16"},
    {model: "qwen2.5-0.5b", n_ctx: 512, n_seq_max: 8, n_ubatch: 512, flash_attn: false, type_k: "f16", type_v: "f16"},
    {model: "qwen2.5-0.5b", n_ctx: 800, n_seq_max: 8, n_ubatch: 1024, flash_attn: true, type_k: "q8_0", type_v: "q8_0"},
    {model: "qwen2.5-0.5b", n_ctx: 2048, n_seq_max: 1, n_ubatch: 512, flash_attn: false, type_k: "f16", type_v: "q4_0"},
    {model: "mha-hd80-3b", n_ctx: 1024, n_seq_max: 1, n_ubatch: 512, flash_attn: true, type_k: "q4_0", type_v: "f16"},
];

function grid(model) {
    const all = fullGrid(model);
    if (!subset)
        return all;
    return all.filter(p => SUBSET.some(q => q.model === model.id &&
        Object.keys(q).every(k => k === "model" || q[k] === p[k]) && !p.swa_full));
}

function fullGrid(model) {
    const points = [];
    const push = (ctx, seqs, ubatch, fa, k, v, swaFull = false) =>
        points.push({n_ctx: ctx, n_seq_max: seqs, n_ubatch: ubatch, flash_attn: fa, type_k: k, type_v: v, swa_full: swaFull});
    if (model.id === "qwen2.5-0.5b") {
        for (const ctx of [512, 4096, 32768])
            for (const seqs of [1, 3, 8])
                for (const ub of [128, 512, 2048])
                    for (const fa of [true, false])
                        push(ctx, seqs, ub, fa, "f16", "f16");
        for (const [k, v] of [["q8_0", "q8_0"], ["q4_0", "q4_0"], ["q8_0", "f16"], ["f16", "q4_0"], ["q4_0", "q8_0"]])
            for (const fa of [true, false])
                for (const [ctx, seqs, ub] of [[2048, 1, 512], [16384, 4, 256], [800, 8, 1024]])
                    push(ctx, seqs, ub, fa, k, v);
        push(100, 1, 512, true, "f16", "f16");
        push(800, 8, 512, true, "f16", "f16");
        push(1000, 3, 512, false, "f16", "f16");
    } else if (model.id === "tinyllama-1.1b") {
        for (const ctx of [512, 2048, 8192])
            for (const seqs of [1, 4])
                for (const ub of [128, 512, 2048])
                    for (const fa of [true, false])
                        push(ctx, seqs, ub, fa, "f16", "f16");
        push(2048, 2, 512, true, "q8_0", "q8_0");
        push(2048, 2, 512, true, "q4_0", "f16");
    } else if (model.id === "mha-hd80-3b") {
        push(1024, 1, 512, true, "f16", "f16");
        push(1024, 1, 512, false, "f16", "f16");
        push(1024, 1, 512, true, "q8_0", "q8_0");
        push(1024, 1, 512, true, "q4_0", "f16");
        push(1024, 1, 512, true, "f16", "q4_0");
        push(1024, 1, 512, false, "q8_0", "f16");
    } else if (model.id === "gemma3-1b") {
        for (const [ctx, seqs, ub] of [[4096, 1, 512], [32768, 1, 512], [8192, 4, 256], [2048, 2, 2048]])
            for (const swaFull of [false, true])
                for (const fa of [true, false])
                    push(ctx, seqs, ub, fa, "f16", "f16", swaFull);
    }
    return points;
}

// ---------------------------------------------------------------- log parsing
function parseLog(lines) {
    const out = {};
    const num = (re) => { for (const l of lines) { const m = l.match(re); if (m) return m; } return null; };
    const all = (re) => lines.map(l => l.match(re)).filter(Boolean);
    for (const key of ["n_ctx", "n_ctx_seq", "n_batch", "n_ubatch"]) {
        const m = num(new RegExp(`llama_context: ${key}\\s+= (\\d+)`));
        if (m) out[key] = Number(m[1]);
    }
    out.kv_caches = all(/llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)\/(\d+) seqs\), K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB/)
        .map(m => ({size_mib: m[1], cells: Number(m[2]), layers: Number(m[3]), seqs: Number(m[4]), streams: Number(m[5]),
            type_k: m[6], k_mib: m[7], type_v: m[8], v_mib: m[9]}));
    out.kv_buffers_mib = all(/llama_kv_cache: +(\S+) KV buffer size = +([\d.]+) MiB/).map(m => ({buffer: m[1], mib: m[2]}));
    const outBuf = num(/llama_context: +(\S+) +output buffer size = +([\d.]+) MiB/);
    if (outBuf) out.output_buffer_mib = outBuf[2];
    out.compute_buffers_mib = all(/sched_reserve: +(\S+) compute buffer size = +([\d.]+) MiB/).map(m => ({buffer: m[1], mib: m[2]}));
    const model = all(/load_tensors: +(\S+) model buffer size = +([\d.]+) MiB/).map(m => ({buffer: m[1], mib: m[2]}));
    if (model.length) out.model_buffers_mib = model;
    const errors = lines.filter(l => /llama_init_from_model: .*(requires|does not divide)|failed to|error/i.test(l));
    if (errors.length) out.errors = errors.map(l => l.trim());
    return out;
}

// ---------------------------------------------------------------- run
let logLines = [];
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
    logLevel: LlamaLogLevel.debug, logger: (level, message) => {
        const lines = message.split("\n");
        logLines.push(...lines);
        if (process.env.ORACLE_LOG) fs.appendFileSync(process.env.ORACLE_LOG, lines.map(l => l + "\n").join(""));
    }});
// The addon delivers its log lines through the event loop: let them arrive before parsing.
const flushLogs = () => new Promise(resolve => setTimeout(resolve, 50));
const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(fs.readFileSync(path.join(here, "node_modules", "node-llama-cpp", "package.json"), "utf8"));
const typeIds = {f16: GGML.F16, f32: GGML.F32, q8_0: GGML.Q8_0, q4_0: GGML.Q4_0};

const result = {
    source: "tests/llamacpp/oracle.mjs: real llama.cpp through node-llama-cpp prebuilt CPU binaries",
    node_llama_cpp: pkg.version,
    llama_cpp: {repo: llama.llamaCppRelease.repo, release: llama.llamaCppRelease.release,
        note: "node-llama-cpp ships llama.cpp as a squashed source bundle (llama/gitRelease.bundle); it reports the release tag, not an upstream commit"},
    build: llama.buildType,
    date: new Date().toISOString().slice(0, 10),
    models: [],
};

for (const m of MODELS) {
    const points = grid(m);
    if (points.length === 0) continue;
    const file = path.join(workdir, m.id + ".gguf");
    const t0 = Date.now();
    const written = writeModel(file, m);
    const tWritten = Date.now();
    logLines = [];
    const model = await llama.loadModel({modelPath: file, gpuLayers: 0, useMmap: true, lazyMode: true, ignoreMemorySafetyChecks: true});
    await flushLogs();
    const loadLog = parseLog(logLines);
    process.stderr.write(`${m.id}: written in ${tWritten - t0} ms, loaded in ${Date.now() - tWritten} ms\n`);
    const entry = {id: m.id, shape: {...m}, tensor_bytes: written.tensorBytes, model_buffers_mib: loadLog.model_buffers_mib, runs: []};
    for (const p of points) {
        logLines = [];
        const ctx = new llama._bindings.AddonContext(model._model, {
            contextSize: p.n_ctx, batchSize: p.n_ubatch, sequences: p.n_seq_max, flashAttention: p.flash_attn,
            threads: 1, kvCacheKeyType: typeIds[p.type_k], kvCacheValueType: typeIds[p.type_v], swaFullCache: p.swa_full,
        });
        let loaded = false;
        let thrown = null;
        try {
            loaded = await ctx.init();
        } catch (e) {
            thrown = String(e && e.message ? e.message : e);
        }
        await flushLogs();
        const run = {settings: p, ...parseLog(logLines), created: !!loaded};
        if (thrown) run.thrown = thrown;
        if (loaded) {
            const b = ctx.getMemoryBreakdown();
            run.memory_breakdown_cpu_bytes = b.cpuRam; // KV (context) + compute, llama_context::memory_breakdown
            await ctx.dispose();
        }
        entry.runs.push(run);
        process.stderr.write(`${m.id} ctx=${p.n_ctx} seqs=${p.n_seq_max} ub=${p.n_ubatch} fa=${p.flash_attn} ${p.type_k}/${p.type_v}${p.swa_full ? " swa_full" : ""}: ${loaded ? "ok" : "refused"}\n`);
    }
    await model.dispose();
    fs.rmSync(file);
    result.models.push(entry);
}
fs.writeFileSync(outPath, JSON.stringify(result, null, 1) + "\n");
await llama.dispose();
