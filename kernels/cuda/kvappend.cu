// CUDA cache write of the decode step (the same rows as kernels/ref/kvappend.cpp) and the
// fp32 -> fp16 conversion.

#include "kvappend.cuh"

#include <cuda_fp16.h>

#include "device.cuh"

namespace headroom::kernels::cuda {

namespace {

__global__ void appendKvKernel(KvAppendArgs a) {
    const std::uint32_t b = blockIdx.x;
    const std::uint32_t h = blockIdx.y;
    const std::int32_t tokens = a.seqLens[b];
    const std::uint32_t maxSeq = a.layout == KvLayout::Contiguous ? a.maxTokens : a.maxBlocksPerSeq * a.blockTokens;
    if (tokens < 1 || static_cast<std::uint32_t>(tokens) > maxSeq)
        return;
    const std::uint32_t t = static_cast<std::uint32_t>(tokens - 1);
    const std::uint64_t D = a.headDim;
    std::uint64_t offset = 0;
    if (a.layout == KvLayout::Contiguous) {
        offset = ((std::uint64_t{b} * a.numKvHeads + h) * a.maxTokens + t) * D;
    } else {
        const std::int32_t block = a.blockTable[std::uint64_t{b} * a.maxBlocksPerSeq + t / a.blockTokens];
        if (block < 0 || static_cast<std::uint32_t>(block) >= a.numBlocks)
            return;
        offset = ((static_cast<std::uint64_t>(block) * a.numKvHeads + h) * a.blockTokens + t % a.blockTokens) * D;
    }
    const std::uint64_t src = (std::uint64_t{b} * a.numKvHeads + h) * D;
    for (std::uint32_t d = threadIdx.x; d < a.headDim; d += blockDim.x) {
        a.k[offset + d] = a.kNew[src + d];
        a.v[offset + d] = a.vNew[src + d];
    }
}

__global__ void floatToHalfKernel(const float* in, std::uint16_t* out, std::size_t count) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count; i += std::size_t{gridDim.x} * blockDim.x)
        out[i] = __half_as_ushort(__float2half_rn(in[i]));
}

} // namespace

Status appendKv(const KvAppendArgs& args, cudaStream_t stream) {
    if (Status s = validate(args); s != Status::Ok)
        return s;
    if (args.numKvHeads > 65535)
        return Status::InvalidArgument;
    const unsigned threads = args.headDim < 128 ? args.headDim : 128;
    appendKvKernel<<<dim3(args.batch, args.numKvHeads), threads, 0, stream>>>(args);
    return lastLaunchStatus();
}

Status floatToHalf(const float* in, std::uint16_t* out, std::size_t count, cudaStream_t stream) {
    if (!in || !out || count == 0)
        return Status::InvalidArgument;
    const std::size_t blocks = (count + 255) / 256;
    floatToHalfKernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(in, out, count);
    return lastLaunchStatus();
}

} // namespace headroom::kernels::cuda
