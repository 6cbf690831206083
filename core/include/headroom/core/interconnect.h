#pragma once
/// @file interconnect.h
/// The link between the GPUs of one tensor-parallel group. It decides where the collective
/// libraries keep their buffers, and so how much memory a rank holds beside torch at TP > 1:
/// NCCL (NVIDIA/nccl at 5067397c, v2.30.7) allocates the receive buffers of its P2P transport in
/// device memory (src/transport/p2p.cc ncclP2pAllocateShareableBuffer -> ncclCudaCalloc), those of
/// its SHM transport in host memory (src/transport/shm.cc ncclShmAllocateShareableBuffer:
/// ncclCuMemHostAlloc / ncclShmOpen), those of its NET transport in device memory only with
/// GPUDirect RDMA (src/transport/net.cc: NCCL_NET_MAP_ADD_POINTER(..., useGdr, ...), else
/// ncclCudaHostCalloc), and its NVLink SHARP buffers (src/transport/nvls.cc ncclNvlsBufferSetup:
/// nHeads x nvlsChannels (16 on sm90) x 2 x chunk x NCCL_STEPS) only where the driver reports
/// multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: an NVSwitch of the third generation with
/// Hopper or later). vLLM's custom all-reduce allocates its IPC buffers only on one node with P2P
/// (vllm/distributed/device_communicators/custom_all_reduce.py at 00d618aa: disabled when "this
/// process group spans across nodes", when "your platform lacks GPU P2P capability", and on more
/// than two GPUs that are not fully connected by NVLink).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// How the ranks of a tensor-parallel group reach each other.
enum class Interconnect {
    /// NVLink through NVSwitch, every GPU to every GPU (HGX/DGX H100, H200, A100 SXM boards). On
    /// Hopper and later the third-generation NVSwitch adds NVLink SHARP (NCCL's NVLS buffers).
    NvSwitch,
    /// NVLink without a switch: bridges between pairs, or a point-to-point mesh (DGX-1 V100's hybrid
    /// cube mesh, NVLink bridges on RTX 3090 / A40 / RTX A6000 pairs). P2P over NVLink, no NVLS.
    NvLink,
    /// PCIe with peer-to-peer access between the GPUs: NCCL's P2P transport over PCIe, buffers in
    /// device memory; vLLM's custom all-reduce at TP 2.
    PciePeer,
    /// PCIe without peer-to-peer access (vLLM: "your platform lacks GPU P2P capability"): NCCL
    /// moves data through host memory (SHM transport), no custom all-reduce.
    Pcie,
    /// The ranks are on different nodes (vLLM: "this process group spans across nodes"): NCCL's
    /// NET transport (sockets, or InfiniBand/RoCE), no custom all-reduce.
    Network,
};

/// The spelling of @p link in settings and profiles: "nvswitch", "nvlink", "pcie-p2p", "pcie", "network".
const char* interconnectName(Interconnect link);

/// Every link's spelling, in the enum's order (the setting's choices and the schema's enum).
const std::vector<std::string>& interconnectNames();

/// The link spelled @p name (as interconnectName writes it), or nullopt.
std::optional<Interconnect> parseInterconnect(std::string_view name);

/// The link a plan assumes when neither the card profile nor the `interconnect` setting gives one:
/// NvSwitch, the link the engines' printed TP > 1 figures were measured on (vLLM's H100 sweep,
/// SGLang PR 11716's H200 node) and the most memory-hungry of them, so that an unknown link does
/// not under-price a rank.
inline constexpr Interconnect kDefaultInterconnect = Interconnect::NvSwitch;

} // namespace headroom
