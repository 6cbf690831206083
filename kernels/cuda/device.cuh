#pragma once
/// @file device.cuh
/// CUDA helpers of the kernels: device presence and the mapping of CUDA errors to Status.
/// Private to headroom_kernels_cuda and the facade (includes cuda_runtime.h).

#include <cuda_runtime.h>

#include "headroom/kernels/types.h"

namespace headroom::kernels::cuda {

/// Number of CUDA devices; 0 on any error (no driver returns 35 and leaves the count unset,
/// TOOLCHAIN §4; a driver without GPU returns 100). Clears the error it caused.
int deviceCount();

/// Ok for cudaSuccess, else CudaError (after clearing the non-sticky error state).
Status statusFromCuda(cudaError_t error);

/// Status of the last launch on this thread: Ok, or CudaError (launch configuration errors and
/// earlier asynchronous errors). Never aborts.
Status lastLaunchStatus();

} // namespace headroom::kernels::cuda
