// llama.cpp's layer split (-ngl, --n-cpu-moe, --no-kv-offload): which side each tensor, KV row and
// compute buffer lands on (src/llama-model.cpp load_tensors, src/llama-kv-cache.cpp).
#include "archfixtures.h"

#include "headroom/core/engines/llamacppoffload.h"
#include "headroom/core/parameters.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

llamacpp::ContextSettings context4k()
{
    llamacpp::ContextSettings s;
    s.ctxSizeTokens = 4096;
    s.typeK = *findKvDtype("f16");
    s.typeV = s.typeK;
    return s;
}

Bytes embeddingBytes(const Architecture& a, const WeightFormat& f)
{
    for (const TensorSpec& t : listTensors(a))
        if (t.role == TensorRole::TokenEmbedding)
            return tensorBytes(t, f);
    return Bytes{};
}

} // namespace

TEST_CASE("llama.cpp -ngl counts from the output end; token_embd stays on the host", "[llamacpp][offload]")
{
    const Architecture a = test::llama31_8b(); // 32 layers, untied lm_head
    const WeightFormat f = *findFormat("q4_0");
    const llamacpp::ContextSettings c = context4k();
    const Bytes all = priceWeights(a, f).totalBytes;
    const Bytes embd = embeddingBytes(a, f);

    llamacpp::OffloadSettings o; // -ngl default: all
    llamacpp::OffloadBill full = llamacpp::offload(a, f, c, o);
    CHECK(full.offloadedLayers == 33); // "offloaded 33/33 layers to GPU"
    CHECK(full.totalLayers == 33);
    CHECK(full.outputOnGpu);
    CHECK(full.host.weightsBytes == embd);
    CHECK(full.gpu.weightsBytes + embd == all);
    CHECK(full.gpu.kvBytes == llamacpp::kvCache(a, c).totalBytes());
    CHECK(full.host.kvBytes.value == 0);

    o.gpuLayers = 0; // CPU only: everything on the host, the compute buffer as the oracle measured it
    const llamacpp::OffloadBill cpu = llamacpp::offload(a, f, c, o);
    CHECK(cpu.offloadedLayers == 0);
    CHECK(cpu.gpu.totalBytes().value == 0);
    CHECK(cpu.host.weightsBytes == all);
    CHECK(cpu.host.computeBytes == llamacpp::computeBuffer(a, c).totalBytes);

    o.gpuLayers = 1; // the output layer alone
    const llamacpp::OffloadBill one = llamacpp::offload(a, f, c, o);
    CHECK(one.firstGpuLayer == 32);
    CHECK(one.outputOnGpu);
    CHECK(one.gpu.kvBytes.value == 0);
    CHECK(one.gpu.weightsBytes > Bytes{});

    o.gpuLayers = 17; // layers 16..31 and the output layer
    const llamacpp::OffloadBill half = llamacpp::offload(a, f, c, o);
    CHECK(half.firstGpuLayer == 16);
    CHECK(half.gpu.kvBytes.value * 2 == llamacpp::kvCache(a, c).totalBytes().value);
    CHECK(half.host.weightsBytes + half.gpu.weightsBytes == all);
    CHECK(half.host.computeBytes > full.host.computeBytes); // CPU layers compute on the host
    CHECK(llamacpp::offloadFlags(half, o) == "-ngl 17");

    o.gpuLayers = 99; // more than n_layer + 1: all
    CHECK(llamacpp::offload(a, f, c, o).offloadedLayers == 33);

    o.gpuLayers = -1;
    o.kvOffload = false; // --no-kv-offload
    const llamacpp::OffloadBill noKv = llamacpp::offload(a, f, c, o);
    CHECK(noKv.gpu.kvBytes.value == 0);
    CHECK(noKv.host.kvBytes == llamacpp::kvCache(a, c).totalBytes());
    CHECK(llamacpp::offloadFlags(noKv, o) == "-ngl 33 --no-kv-offload");
}

TEST_CASE("llama.cpp tied lm_head: a copy of token_embd on the output layer's device", "[llamacpp][offload]")
{
    const Architecture a = test::qwen05b();
    const WeightFormat f = *findFormat("q8_0");
    const llamacpp::OffloadBill full = llamacpp::offload(a, f, context4k(), {});
    const Bytes embd = embeddingBytes(a, f);
    CHECK(full.host.weightsBytes == embd);
    CHECK(full.gpu.weightsBytes == priceWeights(a, f).totalBytes); // everything else + the duplicated embedding
}

TEST_CASE("llama.cpp --n-cpu-moe keeps the routed experts of the first N layers on the host", "[llamacpp][offload]")
{
    Architecture a = test::llama31_8b();
    a.family = "mixtral";
    a.moe.expertCount = 8;
    a.moe.expertsPerToken = 2;
    a.moe.expertFfnSize = 14'336;
    const WeightFormat f = *findFormat("q4_0");
    llamacpp::OffloadSettings o;
    const llamacpp::OffloadBill all = llamacpp::offload(a, f, context4k(), o);
    o.cpuMoeLayers = 4;
    const llamacpp::OffloadBill moe = llamacpp::offload(a, f, context4k(), o);
    Bytes experts4;
    for (const TensorSpec& t : listTensors(a))
        if (t.role == TensorRole::ExpertMatrix && t.layer >= 0 && t.layer < 4)
            experts4 += tensorBytes(t, f);
    CHECK(experts4 > Bytes{});
    CHECK(moe.host.weightsBytes == all.host.weightsBytes + experts4);
    CHECK(moe.gpu.kvBytes == all.gpu.kvBytes); // the layers stay on the GPU, only their experts move
    CHECK(llamacpp::offloadFlags(moe, o) == "-ngl 33 --n-cpu-moe 4");
}

TEST_CASE("llama.cpp: the most GPU layers that fit a budget", "[llamacpp][offload]")
{
    const Architecture a = test::llama2_13b();
    const WeightFormat f = *findFormat("q4_0");
    const llamacpp::ContextSettings c = context4k();
    llamacpp::OffloadSettings o;
    o.gpuLayers = 28;
    const Bytes at28 = llamacpp::offload(a, f, c, o).gpu.totalBytes();
    CHECK(llamacpp::maxGpuLayers(a, f, c, {}, at28) == 28);
    CHECK(llamacpp::maxGpuLayers(a, f, c, {}, Bytes{at28.value - 1}) == 27);
    CHECK(llamacpp::maxGpuLayers(a, f, c, {}, Bytes{1}) == 0);
    CHECK(llamacpp::maxGpuLayers(a, f, c, {}, Bytes{1ull << 40}) == 41);
}

TEST_CASE("llama.cpp before PR #18148 offloads the repeating layers first", "[llamacpp][offload]")
{
    const Architecture a = test::llama2_13b(); // 40 layers
    const WeightFormat f = *findFormat("q4_0");
    llamacpp::OffloadSettings o;
    o.gpuLayers = 10;
    o.outputFirst = false; // "offloading 10 repeating layers to GPU", the output layer stays on the CPU
    const llamacpp::OffloadBill old = llamacpp::offload(a, f, context4k(), o);
    CHECK(old.firstGpuLayer == 30);
    CHECK_FALSE(old.outputOnGpu);
    CHECK(old.offloadedLayers == 10);
    o.outputFirst = true; // the output layer and 9 repeating layers
    const llamacpp::OffloadBill now = llamacpp::offload(a, f, context4k(), o);
    CHECK(now.firstGpuLayer == 31);
    CHECK(now.outputOnGpu);
    o.gpuLayers = 41; // everything, either way
    o.outputFirst = false;
    CHECK(llamacpp::offload(a, f, context4k(), o).outputOnGpu);
    CHECK(llamacpp::offloadsOutputFirst("b4701") == false);
    CHECK(llamacpp::offloadsOutputFirst("b7400") == true);
    CHECK(llamacpp::offloadsOutputFirst("08033df02cc3") == true);
}

TEST_CASE("llama.cpp on the CPU: Q4_0 matrices are held twice (mapped pages + AVX2 repack)", "[llamacpp][offload]")
{
    const Architecture a = test::llama31_8b();
    const WeightFormat f = *findFormat("q4_0");
    llamacpp::OffloadSettings o;
    o.gpuLayers = 0;
    const llamacpp::OffloadBill cpu = llamacpp::offload(a, f, context4k(), o);
    const Bytes all = priceWeights(a, f).totalBytes;
    Bytes matrices; // every q4_0 weight matrix but token_embd (GET_ROWS is not repacked)
    for (const TensorSpec& t : listTensors(a))
        if (t.isMatrix() && t.role != TensorRole::TokenEmbedding && t.rows % 8 == 0)
            matrices += tensorBytes(t, f);
    CHECK(cpu.hostRepackBytes == matrices);
    // The process holds about 1.9x the tensor bytes (issue 11's measurement): here 1.93x.
    const double ratio = static_cast<double>((cpu.host.weightsBytes + cpu.hostRepackBytes).value) / static_cast<double>(all.value);
    CHECK(ratio == Approx(1.93).margin(0.02));
    o.cpuRepack = false; // -nr
    CHECK(llamacpp::offload(a, f, context4k(), o).hostRepackBytes.value == 0);
    // Q8_0 is not repacked on x86 (only with NEON i8mm / dotprod).
    o.cpuRepack = true;
    CHECK(llamacpp::offload(a, *findFormat("q8_0"), context4k(), o).hostRepackBytes.value == 0);
}

TEST_CASE("GGUF tensor order: read from the file's names in offset order", "[llamacpp][offload][gguf-order]")
{
    using O = GgufTensorOrder;
    // llama-quantize since PR #9935 (weight_name_comparer): outside tensors first, by name.
    CHECK(classifyGgufTensorOrder({"output.weight", "output_norm.weight", "token_embd.weight", "blk.0.attn_k.weight",
                                   "blk.1.attn_k.weight"})
          == O::LayerSorted);
    // convert_hf_to_gguf: token_embd first, output_norm and output after the blocks.
    CHECK(classifyGgufTensorOrder({"token_embd.weight", "blk.0.attn_q.weight", "blk.1.attn_q.weight",
                                   "output_norm.weight", "output.weight"})
          == O::Converted);
    // Ollama's WriteGGUF: the blocks, then the rest by name.
    CHECK(classifyGgufTensorOrder({"blk.0.attn_q.weight", "blk.1.attn_q.weight", "output.weight",
                                   "output_norm.weight", "token_embd.weight"})
          == O::OllamaSorted);
    CHECK(classifyGgufTensorOrder({"token_embd.weight", "output.weight"}) == O::Unknown); // no blocks
    CHECK(classifyGgufTensorOrder({"blk.0.x", "output.weight", "blk.1.x", "token_embd.weight"}) == O::Unknown);
    CHECK(ggufTensorOrderFromId("convert") == O::Converted);
    CHECK(ggufTensorOrderFromId(ggufTensorOrderId(O::OllamaSorted)) == O::OllamaSorted);
    CHECK_FALSE(ggufTensorOrderFromId("alphabetical").has_value());
}

TEST_CASE("llama.cpp GGUF names of the block tensors (the sort key of llama-quantize's order)", "[llamacpp][offload][gguf-order]")
{
    const Architecture a = test::llama31_8b();
    std::vector<std::string> names;
    for (const TensorSpec& t : listTensors(a))
        if (t.layer <= 0)
            names.push_back(llamacpp::ggufTensorName(t));
    const std::vector<std::string> expected = {
        "token_embd.weight",        "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "blk.0.attn_q.weight",
        "blk.0.attn_k.weight",      "blk.0.attn_v.weight",    "blk.0.attn_output.weight", "blk.0.ffn_gate.weight",
        "blk.0.ffn_up.weight",      "blk.0.ffn_down.weight",  "output_norm.weight",    "output.weight"};
    CHECK(names == expected);
}

TEST_CASE("llama.cpp with mmap: CPU_Mapped spans the file from the first to the last CPU tensor", "[llamacpp][offload][gguf-order]")
{
    const Architecture a = test::llama31_8b(); // 32 layers, untied
    const WeightFormat f = *findFormat("q4_0");
    const Bytes file = priceWeights(a, f).totalBytes;
    llamacpp::OffloadSettings o;
    o.gpuLayers = 8;
    o.outputFirst = false; // before PR #18148: layers 24..31 on the GPU, the output layer on the CPU

    o.tensorOrder = GgufTensorOrder::Converted; // token_embd ... blocks ... output: the range is the whole file
    const llamacpp::OffloadBill converted = llamacpp::offload(a, f, context4k(), o);
    CHECK(converted.hostMappedBytes == file);
    CHECK(converted.host.weightsBytes + converted.gpu.weightsBytes == file);
    CHECK_FALSE(converted.tensorOrderAssumed);

    o.tensorOrder = GgufTensorOrder::OllamaSorted; // blocks, then output/output_norm/token_embd: whole file too
    CHECK(llamacpp::offload(a, f, context4k(), o).hostMappedBytes == file);

    o.tensorOrder = GgufTensorOrder::LayerSorted; // outside tensors first, then blk.0..23: contiguous
    const llamacpp::OffloadBill sorted = llamacpp::offload(a, f, context4k(), o);
    CHECK(sorted.hostMappedBytes == sorted.host.weightsBytes);

    o.tensorOrder = GgufTensorOrder::Unknown; // priced as llama-quantize's order, and said so
    const llamacpp::OffloadBill assumed = llamacpp::offload(a, f, context4k(), o);
    CHECK(assumed.hostMappedBytes == sorted.hostMappedBytes);
    CHECK(assumed.tensorOrderAssumed);

    // Current builds put the output layer on the GPU first: the CPU keeps token_embd + blk.0..k,
    // contiguous in both orders.
    o.outputFirst = true;
    o.tensorOrder = GgufTensorOrder::Converted;
    const llamacpp::OffloadBill current = llamacpp::offload(a, f, context4k(), o);
    CHECK(current.hostMappedBytes == current.host.weightsBytes);

    o.mmap = false; // --no-mmap: a CPU buffer of the CPU tensors alone
    o.outputFirst = false;
    CHECK(llamacpp::offload(a, f, context4k(), o).hostMappedBytes == converted.host.weightsBytes);
}

TEST_CASE("llama.cpp file order: made once per tensor list and order, the same as sorting the GGUF names", "[llamacpp][offload][gguf-order]")
{
    const Architecture a = test::llama31_8b();
    const WeightFormat f = *findFormat("q4_k");
    const llamacpp::OffloadTensors sorted = llamacpp::offloadTensors(a, f, GgufTensorOrder::LayerSorted);
    REQUIRE(sorted.fileOrder);
    REQUIRE(sorted.fileOrder->size() == sorted.tensors.size());
    // llama-quantize's order: layer -1 first, then by layer, then by GGUF name (token_embd.weight
    // before output.weight before output_norm.weight; blk.0.attn_k before blk.0.attn_norm).
    const std::vector<std::uint32_t>& order = *sorted.fileOrder;
    CHECK(llamacpp::ggufTensorName(sorted.tensors[order.front()]) == "output.weight");
    CHECK(llamacpp::ggufTensorName(sorted.tensors[order[1]]) == "output_norm.weight");
    CHECK(llamacpp::ggufTensorName(sorted.tensors[order[2]]) == "token_embd.weight");
    CHECK(llamacpp::ggufTensorName(sorted.tensors[order[3]]) == "blk.0.attn_k.weight");
    CHECK(llamacpp::ggufTensorName(sorted.tensors[order.back()]) == "blk.31.ffn_up.weight");
    std::vector<bool> seen(order.size(), false);
    for (std::uint32_t i : order)
        seen.at(i) = true;
    CHECK(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; })); // a permutation

    // The second listing of the same model reuses the order made first (no naming and sorting
    // again); another writer's order of the same tensors is its own entry.
    CHECK(llamacpp::offloadTensors(a, *findFormat("q8_0"), GgufTensorOrder::Unknown).fileOrder == sorted.fileOrder);
    const llamacpp::OffloadTensors ollama = llamacpp::offloadTensors(a, f, GgufTensorOrder::OllamaSorted);
    CHECK(ollama.fileOrder != sorted.fileOrder);
    CHECK(llamacpp::ggufTensorName(ollama.tensors[ollama.fileOrder->back()]) == "token_embd.weight");
    const llamacpp::OffloadTensors converted = llamacpp::offloadTensors(a, f, GgufTensorOrder::Converted);
    for (std::size_t i = 0; i < converted.fileOrder->size(); ++i)
        CHECK((*converted.fileOrder)[i] == i);
    // A model of other shapes gets its own order.
    Architecture b = a;
    b.layers = 4;
    CHECK(llamacpp::offloadTensors(b, f, GgufTensorOrder::LayerSorted).fileOrder->size() < order.size());

    // The bill from the listed tensors is the bill offload() makes from the architecture.
    llamacpp::OffloadSettings o;
    o.gpuLayers = 9;
    o.outputFirst = false;
    o.tensorOrder = GgufTensorOrder::Converted;
    CHECK(llamacpp::offload(converted, a, context4k(), o).hostMappedBytes
          == llamacpp::offload(a, f, context4k(), o).hostMappedBytes);
    CHECK(llamacpp::maxGpuLayers(sorted, a, context4k(), o, Bytes{4 * kGiB})
          == llamacpp::maxGpuLayers(a, f, context4k(), o, Bytes{4 * kGiB}));
}

TEST_CASE("llama.cpp --tensor-split: layers by the normalised split points, the output layer on the last GPU", "[llamacpp][offload][tensor-split]")
{
    // llama.cpp#11200 (b4462): 64 layers, -ngl 99 -ts 10,6: split points 0.625, 1; layer il goes to
    // the first point above il / 65: CUDA0 layers 0..40 (41), CUDA1 41..63 and the output layer.
    Architecture a = test::llama31_8b();
    a.layers = 64;
    const WeightFormat f = *findFormat("q8_0");
    llamacpp::OffloadSettings o;
    o.gpuLayers = 99;
    o.tensorSplit = {10, 6};
    const llamacpp::OffloadBill b = llamacpp::offload(a, f, context4k(), o);
    REQUIRE(b.devices.size() == 2);
    CHECK(b.devicesLayers == std::vector<std::uint32_t>{41, 24});
    CHECK(b.outputDevice == 1);
    const std::vector<Bytes> kv = llamacpp::kvBytesPerLayer(a, context4k());
    CHECK(b.devices[0].kvBytes.value == 41 * kv[0].value);
    CHECK(b.devices[1].kvBytes.value == 23 * kv[0].value);
    CHECK(b.gpu.weightsBytes == b.devices[0].weightsBytes + b.devices[1].weightsBytes);
    CHECK(b.devices[1].weightsBytes.value > b.devices[0].weightsBytes.value / 2); // the output layer is on CUDA1
    CHECK(llamacpp::busiestDeviceBytes(b) == std::max(b.devices[0].totalBytes(), b.devices[1].totalBytes()));
    CHECK(llamacpp::offloadFlags(b, o) == "-ngl 65 --tensor-split 10,6");

    // A 3090 + a 3060 at 3,1 with 20 of 33 layers on the GPUs (current build: the output layer first).
    Architecture small = test::llama31_8b();
    o.gpuLayers = 20;
    o.tensorSplit = {3, 1};
    const llamacpp::OffloadBill s = llamacpp::offload(small, f, context4k(), o);
    CHECK(s.devicesLayers == std::vector<std::uint32_t>{15, 5}); // (il - 13) / 20 < 0.75: layers 13..27
    CHECK(s.outputDevice == 1);
    CHECK(s.host.kvBytes.value == 13 * llamacpp::kvBytesPerLayer(small, context4k())[0].value);

    CHECK(llamacpp::parseTensorSplit("3,1") == std::vector<double>{3, 1});
    CHECK(llamacpp::parseTensorSplit("10/6") == std::vector<double>{10, 6});
    CHECK_FALSE(llamacpp::parseTensorSplit("3,,1").has_value());
    CHECK_FALSE(llamacpp::parseTensorSplit("-1,1").has_value());
    CHECK_FALSE(llamacpp::parseTensorSplit("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1").has_value());
}

TEST_CASE("llama.cpp pipeline parallelism: each GPU's compute buffer adds n_copies = 4 copies of the inputs it receives",
          "[llamacpp][offload][tensor-split][pipeline]")
{
    constexpr double kMiB = 1024.0 * 1024.0;
    const auto mibOf = [&](Bytes b) { return static_cast<double>(b.value) / kMiB; };

    // llama.cpp#11200 (b4462): Qwen2.5-32B q8_0, -ngl 99 -ts 10,6 -c 32768 -b 512 -ub 256 -fa on,
    // q8_0 cache; printed: CUDA0 233.00, CUDA1 237.51, CUDA_Host 133.01 MiB.
    const Architecture q = test::qwen25_32b();
    llamacpp::ContextSettings c;
    c.ctxSizeTokens = 32768;
    c.batchTokens = 512;
    c.ubatchTokens = 256;
    c.flashAttention = true;
    c.typeK = *findKvDtype("q8_0");
    c.typeV = c.typeK;
    llamacpp::OffloadSettings o;
    o.gpuLayers = 99;
    o.tensorSplit = {10, 6};
    const llamacpp::OffloadBill b = llamacpp::offload(q, *findFormat("q8_0"), c, o);
    CHECK(b.pipelineCopies == 4);
    REQUIRE(b.devices.size() == 2);
    CHECK(mibOf(b.devices[0].computeBytes) == Approx(233.00).epsilon(0.005)); // 234.00: +0.43 %
    CHECK(mibOf(b.devices[1].computeBytes) == Approx(237.51).margin(0.01));
    CHECK(mibOf(b.host.computeBytes) == Approx(133.01).margin(0.01));

    // llama.cpp PR #6122 (b2400s): Command-R on two GPUs, every layer offloaded, -c 4096 -b 2048
    // -ub 512, flash attention off: printed CUDA0 672.01 MiB ("pipeline parallelism enabled (n_copies=4)").
    const Architecture r = test::commandR();
    llamacpp::ContextSettings rc;
    rc.ctxSizeTokens = 4096;
    rc.flashAttention = false;
    rc.typeK = *findKvDtype("f16");
    rc.typeV = rc.typeK;
    o.tensorSplit = {12, 29};
    const llamacpp::OffloadBill cr = llamacpp::offload(r, *findFormat("q4_k"), rc, o);
    CHECK(cr.pipelineCopies == 4);
    CHECK(cr.devicesLayers == std::vector<std::uint32_t>{12, 29});
    CHECK(mibOf(cr.devices[0].computeBytes) == Approx(672.01).margin(0.01));

    // Not enabled: a layer left on the CPU, --n-cpu-moe (a tensor override), --no-kv-offload, one GPU.
    llamacpp::OffloadSettings partial = o;
    partial.gpuLayers = 40;
    CHECK(llamacpp::offload(r, *findFormat("q4_k"), rc, partial).pipelineCopies == 1);
    llamacpp::OffloadSettings moe = o;
    moe.cpuMoeLayers = 4;
    CHECK(llamacpp::offload(r, *findFormat("q4_k"), rc, moe).pipelineCopies == 1);
    llamacpp::OffloadSettings noKv = o;
    noKv.kvOffload = false;
    CHECK(llamacpp::offload(r, *findFormat("q4_k"), rc, noKv).pipelineCopies == 1);
    llamacpp::OffloadSettings one = o;
    one.tensorSplit.clear();
    CHECK(llamacpp::offload(r, *findFormat("q4_k"), rc, one).pipelineCopies == 1);
}
