// The kernels facade: dispatch to the CPU reference, the fast CPU kernels or CUDA.

#include "headroom/kernels/kernels.h"

#include "headroom/kernels/config.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/reference.h"

#if HEADROOM_HAVE_CUDA
#include "attention.cuh"
#include "device.cuh"
#include "gemv.cuh"
#include "kvappend.cuh"
#endif

namespace headroom::kernels {

const char* backendName(Backend backend) {
    switch (backend) {
    case Backend::CpuRef: return "cpu-ref";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    }
    return "unknown";
}

bool builtWithCuda() {
    return HEADROOM_HAVE_CUDA != 0;
}

bool backendAvailable(Backend backend) {
    if (backend != Backend::Cuda)
        return true;
#if HEADROOM_HAVE_CUDA
    return cuda::deviceCount() > 0;
#else
    return false;
#endif
}

bool supports(Backend backend, const GemvArgs& args) {
    switch (backend) {
    case Backend::CpuRef: return validate(args) == Status::Ok && args.weights.packing == RowPacking::AsStored;
    case Backend::Cpu: return supportsGemvCpu(args);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::supportsGemv(args);
#else
        return false;
#endif
    }
    return false;
}

bool supports(Backend backend, const DecodeAttentionArgs& args) {
    switch (backend) {
    case Backend::CpuRef: return validate(args) == Status::Ok;
    case Backend::Cpu: return supportsDecodeAttentionCpu(args);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::supportsDecodeAttention(args);
#else
        return false;
#endif
    }
    return false;
}

Status gemv(Backend backend, const GemvArgs& args, [[maybe_unused]] void* stream) {
    switch (backend) {
    case Backend::CpuRef: return gemvRef(args);
    case Backend::Cpu: return gemvCpu(args);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::gemv(args, static_cast<cudaStream_t>(stream));
#else
        return Status::NoDevice;
#endif
    }
    return Status::InvalidArgument;
}

std::size_t attentionWorkspaceBytes(Backend backend, [[maybe_unused]] const DecodeAttentionArgs& args) {
#if HEADROOM_HAVE_CUDA
    if (backend == Backend::Cuda)
        return cuda::decodeAttentionWorkspaceBytes(args);
#endif
    (void)backend;
    return 0;
}

Status decodeAttention(Backend backend, const DecodeAttentionArgs& args, [[maybe_unused]] void* stream) {
    switch (backend) {
    case Backend::CpuRef: return decodeAttentionRef(args);
    case Backend::Cpu: return decodeAttentionCpu(args);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::decodeAttention(args, static_cast<cudaStream_t>(stream));
#else
        return Status::NoDevice;
#endif
    }
    return Status::InvalidArgument;
}

Status appendKv(Backend backend, const KvAppendArgs& args, [[maybe_unused]] void* stream) {
    switch (backend) {
    case Backend::CpuRef:
    case Backend::Cpu: return appendKvCpu(args);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::appendKv(args, static_cast<cudaStream_t>(stream));
#else
        return Status::NoDevice;
#endif
    }
    return Status::InvalidArgument;
}

Status floatToHalf(Backend backend, const float* in, std::uint16_t* out, std::size_t count, [[maybe_unused]] void* stream) {
    switch (backend) {
    case Backend::CpuRef:
    case Backend::Cpu: return floatToHalfCpu(in, out, count);
    case Backend::Cuda:
#if HEADROOM_HAVE_CUDA
        return cuda::floatToHalf(in, out, count, static_cast<cudaStream_t>(stream));
#else
        return Status::NoDevice;
#endif
    }
    return Status::InvalidArgument;
}

} // namespace headroom::kernels
