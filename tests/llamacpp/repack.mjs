// The AVX2 repack check (issue 11): writes a TinyLlama-shaped GGUF whose matrices are Q4_0 (zero
// weights, sparse on disk), loads it on the CPU with real llama.cpp (node-llama-cpp 3.21.1 prebuilt
// binaries, no download) and prints the model buffers llama.cpp reports: CPU_Mapped (the file's
// pages) and CPU_REPACK (the interleaved copy ggml-cpu/repack.cpp makes of Q4_0 matrices whose rows
// are a multiple of 8; the embedding stays as mapped; on a CPU with AMX the copy is the "AMX" buffer
// instead, ggml-cpu/amx). Compare the JSON on stdout with the plan's host_repack_bytes for the same
// file: headroom-cli plan -m OUT.gguf --engine llama.cpp --offload none --json.
// Usage: node repack.mjs OUT.gguf
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import fs from "node:fs";

const out = process.argv[2];
if (!out) {
    console.error("usage: node repack.mjs OUT.gguf");
    process.exit(2);
}
const GGUF_TYPE = {u32: 4, f32: 6, string: 8, array: 9};
const Q4_0 = 2, F32 = 0;
const m = {layers: 4, hidden: 2048, heads: 32, kvHeads: 4, ffn: 5632, vocab: 32000};

const parts = [];
const u32 = v => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
const u64 = v => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
const f32 = v => { const b = Buffer.alloc(4); b.writeFloatLE(v); parts.push(b); };
const str = s => { const b = Buffer.from(s, "utf8"); u64(b.length); parts.push(b); };
const tokens = [];
for (let i = 0; i < m.vocab; ++i) tokens.push(i < 94 ? String.fromCodePoint(33 + i) : `<t${i}>`);
const kvs = [
    ["general.architecture", "string", "llama"], ["general.alignment", "u32", 32],
    ["llama.block_count", "u32", m.layers], ["llama.context_length", "u32", 2048],
    ["llama.embedding_length", "u32", m.hidden], ["llama.feed_forward_length", "u32", m.ffn],
    ["llama.attention.head_count", "u32", m.heads], ["llama.attention.head_count_kv", "u32", m.kvHeads],
    ["llama.attention.layer_norm_rms_epsilon", "f32", 1e-5], ["llama.rope.freq_base", "f32", 10000],
    ["llama.vocab_size", "u32", m.vocab], ["general.file_type", "u32", 2],
    ["tokenizer.ggml.model", "string", "gpt2"], ["tokenizer.ggml.pre", "string", "default"],
    ["tokenizer.ggml.tokens", "strings", tokens], ["tokenizer.ggml.merges", "strings", []],
];
const T = [];
const bytesOf = (dims, type) => type === F32 ? dims[0] * (dims[1] || 1) * 4 : (dims[0] / 32) * 18 * (dims[1] || 1);
const add = (name, dims, type) => T.push({name, dims, type, bytes: bytesOf(dims, type)});
const kv = m.kvHeads * (m.hidden / m.heads);
add("token_embd.weight", [m.hidden, m.vocab], Q4_0);
add("output_norm.weight", [m.hidden], F32);
add("output.weight", [m.hidden, m.vocab], Q4_0);
for (let i = 0; i < m.layers; ++i) {
    const b = `blk.${i}.`;
    add(b + "attn_norm.weight", [m.hidden], F32);
    add(b + "attn_q.weight", [m.hidden, m.hidden], Q4_0);
    add(b + "attn_k.weight", [m.hidden, kv], Q4_0);
    add(b + "attn_v.weight", [m.hidden, kv], Q4_0);
    add(b + "attn_output.weight", [m.hidden, m.hidden], Q4_0);
    add(b + "ffn_norm.weight", [m.hidden], F32);
    add(b + "ffn_gate.weight", [m.hidden, m.ffn], Q4_0);
    add(b + "ffn_up.weight", [m.hidden, m.ffn], Q4_0);
    add(b + "ffn_down.weight", [m.ffn, m.hidden], Q4_0);
}
parts.push(Buffer.from("GGUF"));
u32(3); u64(T.length); u64(kvs.length);
for (const [key, type, value] of kvs) {
    str(key);
    u32(type === "strings" ? GGUF_TYPE.array : GGUF_TYPE[type]);
    if (type === "u32") u32(value);
    else if (type === "f32") f32(value);
    else if (type === "string") str(value);
    else { u32(GGUF_TYPE.string); u64(value.length); for (const v of value) str(v); }
}
let offset = 0;
for (const t of T) {
    str(t.name); u32(t.dims.length); for (const d of t.dims) u64(d); u32(t.type); u64(offset);
    offset += Math.ceil(t.bytes / 32) * 32;
}
const header = Buffer.concat(parts);
const fd = fs.openSync(out, "w");
fs.writeSync(fd, header);
fs.ftruncateSync(fd, Math.ceil(header.length / 32) * 32 + offset);
fs.closeSync(fd);

const lines = [];
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
    logLevel: LlamaLogLevel.debug, logger: (level, message) => lines.push(...message.split("\n"))});
await llama.loadModel({modelPath: out, gpuLayers: 0, useMmap: true, ignoreMemorySafetyChecks: true});
await new Promise(resolve => setTimeout(resolve, 100));
const buffers = {};
for (const l of lines) {
    const x = /(\S+) model buffer size =\s*([0-9.]+) MiB/.exec(l);
    if (x) buffers[x[1]] = Number(x[2]);
}
const tensorBytes = T.reduce((a, t) => a + t.bytes, 0);
console.log(JSON.stringify({tensor_bytes: tensorBytes, model_buffers_mib: buffers,
    lines: lines.filter(l => /model buffer size|repack/i.test(l))}, null, 1));
process.exit(0);
