// CUDA helpers: device presence and error mapping. Never aborts (STYLE §10).

#include "device.cuh"

namespace headroom::kernels::cuda {

int deviceCount() {
    int count = 0; // cudaGetDeviceCount leaves it unchanged on error (TOOLCHAIN §4)
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

Status statusFromCuda(cudaError_t error) {
    if (error == cudaSuccess)
        return Status::Ok;
    (void)cudaGetLastError();
    return Status::CudaError;
}

Status lastLaunchStatus() {
    return statusFromCuda(cudaGetLastError());
}

} // namespace headroom::kernels::cuda
