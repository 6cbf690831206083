#pragma once
/// @file llamacppoffload.h
/// llama.cpp's layer split between one GPU and the host (issue 11): which tensors, KV rows and
/// compute buffers land on each side for -ngl / --n-cpu-moe / --no-kv-offload, read from
/// src/llama-model.cpp (load_tensors: i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0); layer il
/// is on the GPU when il >= i_gpu_start, the output layer counts as layer n_layer; the input layer,
/// token_embd, always stays on the CPU; "offloaded N/(n_layer + 1) layers to GPU"),
/// src/llama-kv-cache.cpp (each layer's K/V on its layer's device unless --no-kv-offload) and
/// common/arg.cpp (--n-cpu-moe N: the routed expert tensors ffn_(up|down|gate)_exps of the first N
/// layers stay on the CPU), as node-llama-cpp 3.21.1 ships llama.cpp (release v0.4.0).

#include "headroom/core/architecture.h"
#include "headroom/core/engines/llamacppmemory.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/parameters.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <tl/expected.hpp>

namespace headroom::llamacpp {

/// Which feed-forward tensors of one layer --fit sends off the layer's device, as its overflow
/// patterns name them (common/fit.cpp common_layer_fraction_t and get_overflow_pattern, llama.cpp
/// release v0.4.0), matched against the GGUF name after "blk.N.":
enum class FfnOverflow : std::uint8_t {
    None, ///< nothing
    Attn, ///< LAYER_FRACTION_ATTN: "ffn_(gate|up|gate_up|down).*", every FFN tensor (router and shared expert too)
    Up,   ///< LAYER_FRACTION_UP: "ffn_(gate|gate_up|down).*", all but ffn_up*
    Gate, ///< LAYER_FRACTION_GATE: "ffn_down.*"
    Moe,  ///< LAYER_FRACTION_MOE: "ffn_(up|down|gate_up|gate)_(ch|)exps", the routed experts
};

/// One tensor override --fit writes (common/fit.cpp set_ngl_tensor_split_tbo): the tensors of
/// layer @c layer that @c part matches go to @c device (-1 = the host's CPU buffer, else a GPU
/// index: the next device, which a device's first partial layer overflows to).
struct FfnOverride {
    std::uint32_t layer = 0;
    FfnOverflow part = FfnOverflow::Moe;
    int device = -1;
};

/// Whether the tensor of GGUF name @p ggufName ("blk.7.ffn_up_exps.weight") is one that @p part
/// matches (the regex_search of llama.cpp's pattern on the name after "blk.N.").
bool ffnOverflowMatches(const std::string& ggufName, FfnOverflow part);

/// One -ot/--override-tensor item "PATTERN=BUFT" (common/arg.cpp: comma-separated items, the buffer
/// type by name): each tensor whose GGUF name the ECMAScript regex PATTERN matches anywhere
/// (std::regex_search) goes to BUFT instead of its layer's device; the first matching item wins
/// (src/llama-model.cpp load_tensors, tensor_buft_overrides; node-llama-cpp 3.21.1's llama.cpp,
/// release v0.4.0). The token embedding, which llama.cpp keeps on the CPU anyway, is not matched.
struct TensorOverride {
    std::string pattern;                   ///< as given ("exps", "blk\.[0-9]\.ffn_.*_exps")
    std::shared_ptr<const std::regex> regex;
    int device = -1;                       ///< -1 = CPU, else the CUDA index of "CUDA<N>"
};

/// Parses -ot's text ("exps=CPU", "blk\.1[0-9]\.ffn_.*=CPU,attn=CUDA0"): at most 64 items, each a
/// valid regex and a buffer type CPU or CUDA<N> (N below @p gpus); an error names the item.
tl::expected<std::vector<TensorOverride>, std::string> parseTensorOverrides(const std::string& text, std::size_t gpus);

/// The offload settings, as llama.cpp spells them.
struct OffloadSettings {
    std::int64_t gpuLayers = -1;   ///< -ngl/--n-gpu-layers; -1 (or more than n_layer + 1) = all
    std::uint32_t cpuMoeLayers = 0;///< --n-cpu-moe: layers [0, N) keep their routed experts on the CPU
    bool kvOffload = true;         ///< false: --no-kv-offload, every layer's KV in host memory
    bool mmap = true;              ///< --mmap (default): host weights are the file's pages, not a copy
    /// The order -ngl fills the GPU in. Since ggml-org/llama.cpp PR #18148 ("llama: offload output
    /// layer to GPU first", merged 2025-12-17): the output layer first, i_gpu_start = n_layer + 1 - ngl.
    /// Before it (every build of 2025 up to mid-December, and Ollama's vendored runners): the repeating
    /// layers first, i_gpu_start = n_layer - ngl, the output layer on the GPU only when ngl > n_layer
    /// ("offloading N repeating layers to GPU" then "offloading output layer to GPU").
    bool outputFirst = true;
    /// --repack (default on; -nr/--no-repack turns it off): on an x86 CPU with AVX2 the CPU backend
    /// copies Q4_0, Q4_K, IQ4_NL and MXFP4 matrices whose rows are a multiple of 8 into its
    /// CPU_REPACK buffer (ggml/src/ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type) while the
    /// mapped file stays mapped: those bytes are held twice.
    bool cpuRepack = true;
    /// The order of the file's tensors, which decides the mapped span (OffloadBill::hostMappedBytes);
    /// Unknown is priced as LayerSorted (llama-quantize's order since PR #9935).
    GgufTensorOrder tensorOrder = GgufTensorOrder::Unknown;
    /// --tensor-split/-ts ("3,1"): each GPU's share of the offloaded layers, in device order; empty
    /// (or all zero) = one GPU. llama.cpp normalises the cumulative shares into split points and
    /// gives the offloaded layer il device upper_bound(points, (il - i_gpu_start) / act_gpu_layers)
    /// (src/llama-model.cpp load_tensors), so the output layer, counted last, lands on the last
    /// device with a share. (Without -ts llama.cpp splits by each device's free memory: give the
    /// free bytes as the shares.)
    std::vector<double> tensorSplit;
    /// --fit's tensor overrides (llamacppfit.h), applied after -ngl/--n-cpu-moe place a tensor.
    std::vector<FfnOverride> ffnOverrides;
    /// -ot/--override-tensor as given, checked before --n-cpu-moe's patterns (taken as given first
    /// on the command line; the first matching pattern wins) and --fit's.
    std::vector<TensorOverride> tensorOverrides;
};

/// Whether llama.cpp build @p version ("b4701", a commit, or empty = current) offloads the output
/// layer first (PR #18148). Builds numbered below b7400 predate it (the build numbers of mid-December
/// 2025 are b7400 and up); anything else is taken as current.
bool offloadsOutputFirst(const std::string& version);

/// One side of the split.
struct SideBill {
    Bytes weightsBytes;   ///< tensors resident there
    Bytes kvBytes;        ///< KV rows of the layers whose cache lives there
    Bytes computeBytes;   ///< its compute buffer
    Bytes expertBytes;    ///< of weightsBytes, the routed experts (a token reads k of E of them)
    Bytes totalBytes() const { return weightsBytes + kvBytes + computeBytes; }
};

/// The split.
struct OffloadBill {
    std::uint32_t offloadedLayers = 0; ///< as "offloaded N/M layers to GPU" prints N (output layer included)
    std::uint32_t totalLayers = 0;     ///< M = n_layer + 1
    std::uint32_t firstGpuLayer = 0;   ///< i_gpu_start
    bool outputOnGpu = false;          ///< the output layer (lm_head, final norm; logits in its compute buffer)
    SideBill gpu;                      ///< the GPU (with --tensor-split, the sum over the GPUs)
    /// Each GPU's side in device order (one entry without --tensor-split): CUDA0, CUDA1, ...
    /// model/KV buffers. Compute buffers: every GPU holding layers gets the device part of the
    /// reserve graph, the logits only on the output layer's GPU; with pipeline parallelism
    /// (pipelineCopies = 4) each device adds 4 copies of the inputs it receives (see there).
    std::vector<SideBill> devices;
    /// n_copies of ggml_backend_sched: 4 (GGML_SCHED_MAX_COPIES) when llama.cpp enables pipeline
    /// parallelism ("pipeline parallelism enabled (n_copies=4)": more than one GPU, every layer
    /// and the output offloaded, the KV offloaded, layer split, no tensor overrides such as
    /// --n-cpu-moe; ggml-org/llama.cpp PR #6017, March 2024), else 1. The scheduler then keeps
    /// n_copies copies of every graph input on its backend and of every tensor a split receives
    /// from another backend, each set input and output so that ggml-alloc never frees or reuses
    /// them (ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph, ggml-org/ggml d99724f2).
    /// So a device's compute buffer is its own working memory plus n_copies x (the hidden state it
    /// receives + the positions + the KQ mask: f32 from the CPU on the first GPU, and without flash
    /// attention on every GPU; with flash attention the later GPUs receive the first GPU's f16
    /// cast), and the host's (CUDA_Host) is n_copies x (the f32 mask + tokens, positions and output
    /// ids, T x 4 B each) plus token_embd's get_rows output. Checked on two public logs: b2400
    /// Command-R on two GPUs (CUDA0 672.01 MiB) and b4462 Qwen2.5-32B -ts 10,6 (CUDA0 233.00,
    /// CUDA1 237.51, CUDA_Host 133.01 MiB), tests/core/tst_llamacpp_offload.cpp.
    std::uint32_t pipelineCopies = 1;
    std::vector<std::uint32_t> devicesLayers; ///< offloaded layers per GPU (the output layer counted on its GPU)
    int outputDevice = -1;             ///< the output layer's GPU, -1 = the host
    /// Device changes of the hidden state along one decode step: token_embd (CPU) -> layer 0 -> ...
    /// -> the output layer, each a copy of n_embd x 4 B over the link.
    std::uint32_t deviceCrossings = 0;
    SideBill host;                     ///< the host, besides the output buffer
    Bytes hostOutputBytes;             ///< the logits output buffer (always host memory)
    Bytes tokenEmbeddingBytes;         ///< token_embd, always in host memory (part of host.weightsBytes)
    bool hostWeightsMapped = true;     ///< host weights are mapped file pages (mmap), not an allocation
    /// The AVX2 repack copy of the host's Q4_0/Q4_K/IQ4_NL/MXFP4 matrices ("CPU_REPACK model buffer
    /// size"), on top of the mapped pages: a Q4_0 model on the CPU holds about 1.9x its tensor bytes
    /// (token_embd, norms and other types are not repacked).
    Bytes hostRepackBytes;
    /// What "CPU_Mapped model buffer size" prints with mmap: the file's bytes from the first to the
    /// last tensor the CPU keeps, in the file's order (src/llama-model-loader.cpp get_mapping_range),
    /// GPU tensors between them included (mapped, read once to upload them, then left to the page
    /// cache). Without mmap the CPU buffer holds the CPU tensors alone: host.weightsBytes.
    Bytes hostMappedBytes;
    bool tensorOrderAssumed = true;    ///< the file's order was not read (priced as llama-quantize's)
};

/// The tensors an offload walks: listTensors(arch) priced in one format (priced[i] is the price
/// of tensors[i]), and the file's order of them (fileOrder: indices into tensors, first tensor of
/// the file first), made once per model: a plan builds it once for all its offload() calls and the
/// -ngl trials of maxGpuLayers, and the file order is kept per tensor list and writer's order in
/// a small process-wide cache (16 lists, thread-safe), since naming each tensor as GGUF does and
/// sorting them was most of a llama.cpp plan (issue 9 speed).
struct OffloadTensors {
    std::vector<TensorSpec> tensors;
    std::vector<PricedTensor> priced;
    std::shared_ptr<const std::vector<std::uint32_t>> fileOrder;
    GgufTensorOrder order = GgufTensorOrder::LayerSorted; ///< the order priced (Unknown is priced as LayerSorted)
    bool orderAssumed = true;                             ///< the order asked was Unknown
};

/// The tensors of @p arch in @p format, in the file order @p order (Unknown = llama-quantize's,
/// LayerSorted; Converted = listTensors' own; OllamaSorted = blocks by number, the rest last).
OffloadTensors offloadTensors(const Architecture& arch, const WeightFormat& format, GgufTensorOrder order);

/// The split of @p arch in @p format under the context @p context and the offload @p offload.
/// Weights are priced per tensor (parameters.h listTensors/tensorBytes); the KV and compute
/// buffers come from llamacppmemory.h. Compute: with every layer on the GPU, the device and host
/// parts of ComputeBill; with CPU layers, the GPU keeps its part (logits when the output layer is
/// there) and the host adds the largest CPU-layer stage (an estimate not yet checked on a log).
OffloadBill offload(const Architecture& arch, const WeightFormat& format, const ContextSettings& context,
                    const OffloadSettings& offload);

/// The same from tensors already listed and priced (@p list = offloadTensors(arch, format,
/// offload.tensorOrder)); offload.tensorOrder is not read again.
OffloadBill offload(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                    const OffloadSettings& offload);

/// The GGUF name llama.cpp gives the tensor @p t of listTensors ("blk.3.ffn_down_exps.weight",
/// "token_embd.weight"), as convert_hf_to_gguf maps it (gguf-py/gguf/tensor_mapping.py); a name
/// the table does not know keeps its Hugging Face suffix under "blk.N.". Used to order tensors
/// as llama-quantize writes them.
std::string ggufTensorName(const TensorSpec& t);

/// The largest GPU side of @p bill (its one GPU without --tensor-split): what must fit a card.
Bytes busiestDeviceBytes(const OffloadBill& bill);

/// The most GPU layers (-ngl, output layer counted) whose busiest GPU fits in @p gpuBudget bytes,
/// trying N = n_layer + 1 down to 0 (what --fit does with layers once the context is at its
/// minimum). Returns 0 when not even the output layer fits.
std::uint32_t maxGpuLayers(const Architecture& arch, const WeightFormat& format, const ContextSettings& context,
                           const OffloadSettings& offload, Bytes gpuBudget);

/// The same from tensors already listed and priced (@p list = offloadTensors(arch, format,
/// offload.tensorOrder)): every trial reuses them.
std::uint32_t maxGpuLayers(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                           const OffloadSettings& offload, Bytes gpuBudget);

/// Parses llama.cpp's --tensor-split text ("3,1", "10/6": comma or slash separated non-negative
/// numbers, at most 16 devices, as common/arg.cpp reads it); an error names what was found.
tl::expected<std::vector<double>, std::string> parseTensorSplit(const std::string& text);

/// "-ngl 28" (and " --n-cpu-moe N", " --no-kv-offload", " --tensor-split 3,1") for the launch flags.
std::string offloadFlags(const OffloadBill& bill, const OffloadSettings& offload);

} // namespace headroom::llamacpp
