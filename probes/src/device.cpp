#include "headroom/probes/device.h"

#include "backends.h"

#include "headroom/probes/config.h"

#include <charconv>

namespace headroom::probes {

const char* deviceKindName(DeviceKind kind)
{
    return kind == DeviceKind::Cpu ? "cpu" : "cuda";
}

std::optional<DeviceSpec> parseDeviceSpec(std::string_view text)
{
    if (text == "cpu")
        return DeviceSpec{DeviceKind::Cpu, 0};
    if (text == "cuda")
        return DeviceSpec{DeviceKind::Cuda, 0};
    constexpr std::string_view prefix = "cuda:";
    if (text.substr(0, prefix.size()) != prefix || text.size() == prefix.size() || text.size() > prefix.size() + 3)
        return std::nullopt;
    int index = 0;
    const char* begin = text.data() + prefix.size();
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, index);
    if (ec != std::errc() || ptr != end || index < 0)
        return std::nullopt;
    return DeviceSpec{DeviceKind::Cuda, index};
}

std::string toString(const DeviceSpec& spec)
{
    return spec.kind == DeviceKind::Cpu ? std::string("cpu") : "cuda:" + std::to_string(spec.index);
}

const char* errorCodeName(DeviceError::Code code)
{
    switch (code) {
    case DeviceError::Code::NoDevice: return "no device";
    case DeviceError::Code::OutOfBudget: return "out of budget";
    case DeviceError::Code::OutOfMemory: return "out of memory";
    case DeviceError::Code::DriverError: return "driver error";
    case DeviceError::Code::InvalidArgument: return "invalid argument";
    case DeviceError::Code::KernelError: return "kernel error";
    case DeviceError::Code::Cancelled: return "cancelled";
    }
    return "unknown";
}

Device::~Device() = default;

tl::expected<void*, DeviceError> Device::allocate(Bytes bytes, std::string_view what)
{
    if (bytes.value == 0)
        return tl::unexpected(detail::error(DeviceError::Code::InvalidArgument, "allocation of 0 bytes for " + std::string(what)));
    if (m_budget && (m_allocated.value > m_budget->value || bytes.value > m_budget->value - m_allocated.value))
        return tl::unexpected(detail::error(
            DeviceError::Code::OutOfBudget,
            std::string(what) + ": " + formatThousands(bytes.value) + " B would pass the budget of " + formatThousands(m_budget->value)
                + " B (" + formatThousands(m_allocated.value) + " B already allocated)"));
    auto pointer = rawAllocate(bytes, what);
    if (!pointer)
        return pointer;
    m_live.emplace(*pointer, bytes.value);
    m_allocated = Bytes{m_allocated.value + bytes.value};
    if (m_allocated > m_peak)
        m_peak = m_allocated;
    return pointer;
}

DeviceStatus Device::release(void* pointer)
{
    if (!pointer)
        return {};
    auto it = m_live.find(pointer);
    if (it == m_live.end())
        return tl::unexpected(detail::error(DeviceError::Code::InvalidArgument, "release of a pointer this device did not allocate"));
    m_allocated = Bytes{m_allocated.value - it->second};
    m_live.erase(it);
    return rawRelease(pointer);
}

void Device::releaseAll()
{
    for (auto& [pointer, bytes] : m_live)
        (void)rawRelease(pointer);
    m_live.clear();
    m_allocated = Bytes{0};
}

tl::expected<std::unique_ptr<Device>, DeviceError> openDevice(const DeviceSpec& spec)
{
    if (spec.kind == DeviceKind::Cpu)
        return detail::makeCpuDevice();
    return detail::openCudaDevice(spec.index);
}

int cudaDeviceCount(std::string* why)
{
    return detail::cudaDeviceCountImpl(why);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept
{
    if (this != &other) {
        reset();
        m_device = other.m_device;
        m_pointer = other.m_pointer;
        m_bytes = other.m_bytes;
        other.m_device = nullptr;
        other.m_pointer = nullptr;
        other.m_bytes = Bytes{0};
    }
    return *this;
}

tl::expected<DeviceBuffer, DeviceError> DeviceBuffer::make(Device& device, Bytes bytes, std::string_view what)
{
    auto pointer = device.allocate(bytes, what);
    if (!pointer)
        return tl::unexpected(pointer.error());
    return DeviceBuffer(&device, *pointer, bytes);
}

void DeviceBuffer::reset()
{
    if (m_device && m_pointer)
        (void)m_device->release(m_pointer);
    m_device = nullptr;
    m_pointer = nullptr;
    m_bytes = Bytes{0};
}

#if !HEADROOM_HAVE_CUDA
namespace detail {

tl::expected<std::unique_ptr<Device>, DeviceError> openCudaDevice(int)
{
    return tl::unexpected(error(DeviceError::Code::NoDevice, "no CUDA device: CUDA is not part of this build"));
}

int cudaDeviceCountImpl(std::string* why)
{
    if (why)
        *why = "CUDA is not part of this build";
    return 0;
}

} // namespace detail
#endif

} // namespace headroom::probes
