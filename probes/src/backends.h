#pragma once
// The device backends behind openDevice() (private to headroom_probes).

#include "headroom/probes/device.h"

#include <memory>
#include <string>

namespace headroom::probes::detail {

/// The CPU device: host memory through aligned_alloc, counted by the base class.
std::unique_ptr<Device> makeCpuDevice();

/// The CUDA device of ordinal @p index (cuda/cudadevice.cu); NoDevice when CUDA is not built.
tl::expected<std::unique_ptr<Device>, DeviceError> openCudaDevice(int index);

/// cudaGetDeviceCount with every error mapped to 0 (TOOLCHAIN §4: 35 without a driver).
int cudaDeviceCountImpl(std::string* why);

/// A DeviceError of @p code with @p message.
inline DeviceError error(DeviceError::Code code, std::string message)
{
    return DeviceError{code, std::move(message)};
}

} // namespace headroom::probes::detail
