#pragma once
// Architectures with published shapes, for tests that must not depend on profile files.

#include "headroom/core/architecture.h"

namespace headroom::test {

/// The BRIEF §1.1 0.5B model: 24 layers, 14 query heads, 2 KV heads of dim 64, hidden 896
/// (Qwen2.5-0.5B: ollama convert testdata, general.parameter_count 494,032,768).
inline Architecture qwen05b()
{
    Architecture a;
    a.family = "qwen2";
    a.layers = 24;
    a.hiddenSize = 896;
    a.attentionHeads = 14;
    a.kvHeads = 2;
    a.headDim = 64;
    a.intermediateSize = 4864;
    a.vocabSize = 151936;
    a.tiedEmbeddings = true;
    a.qkvBias = true;
    a.contextLength = 32768;
    return a;
}

/// Llama-3.1-8B (meta-llama config.json): 32 layers, 32 heads, 8 KV heads of 128.
inline Architecture llama31_8b()
{
    Architecture a;
    a.family = "llama";
    a.layers = 32;
    a.hiddenSize = 4096;
    a.attentionHeads = 32;
    a.kvHeads = 8;
    a.headDim = 128;
    a.intermediateSize = 14336;
    a.vocabSize = 128256;
    a.contextLength = 131072;
    return a;
}

/// Llama-2-13B: 40 layers, 40 heads of 128, full MHA.
inline Architecture llama2_13b()
{
    Architecture a;
    a.family = "llama";
    a.layers = 40;
    a.hiddenSize = 5120;
    a.attentionHeads = 40;
    a.kvHeads = 40;
    a.headDim = 128;
    a.intermediateSize = 13824;
    a.vocabSize = 32000;
    a.contextLength = 4096;
    return a;
}

/// EleutherAI/pythia-1.4b config.json (hidden 2048, 24 layers, 16 heads, intermediate 8192,
/// vocab 50304, untied embed_out, LayerNorm with biases, biases on every projection); GGUF
/// arch gptneox with a fused attn_qkv, as llama.cpp's CI converts it.
inline Architecture pythia14b()
{
    Architecture a;
    a.family = "gptneox";
    a.layers = 24;
    a.hiddenSize = 2048;
    a.attentionHeads = 16;
    a.kvHeads = 16;
    a.headDim = 128;
    a.intermediateSize = 8192;
    a.vocabSize = 50304;
    a.tiedEmbeddings = false;
    a.qkvBias = a.outputProjBias = a.mlpBias = true;
    a.norm = NormKind::LayerNorm;
    a.mlp = MlpKind::Plain;
    a.contextLength = 2048;
    return a;
}

/// Qwen2.5-32B (Qwen config.json): 64 layers, 40 heads, 8 KV heads of 128, hidden 5,120, FFN
/// 27,648, vocab 152,064 (QKV bias left out: the tests using it price buffers, not weights).
inline Architecture qwen25_32b()
{
    Architecture a = llama31_8b();
    a.family = "qwen2";
    a.layers = 64;
    a.hiddenSize = 5120;
    a.attentionHeads = 40;
    a.intermediateSize = 27648;
    a.vocabSize = 152064;
    return a;
}

/// Command-R (c4ai-command-r-v01 config.json): 40 layers, 64 heads with 64 KV heads of 128 (MHA),
/// hidden 8,192, FFN 22,528, vocab 256,000, tied embeddings.
inline Architecture commandR()
{
    Architecture a = llama31_8b();
    a.family = "command-r";
    a.layers = 40;
    a.hiddenSize = 8192;
    a.attentionHeads = 64;
    a.kvHeads = 64;
    a.intermediateSize = 22528;
    a.vocabSize = 256000;
    a.tiedEmbeddings = true;
    return a;
}

} // namespace headroom::test
