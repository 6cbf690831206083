// The CUDA device: cudaMalloc only (never managed memory), every return code checked, out of
// memory returned as a value. The only probes translation unit that includes cuda_runtime.h.
// Without a driver every call returns 35 (cudaErrorInsufficientDriver) and leaves outputs
// unwritten (TOOLCHAIN §4), so the count starts at 0 and any error means "no device".

#include <cuda_runtime.h>

#include "backends.h"

#include <string>

namespace headroom::probes::detail {

namespace {

/// "cudaErrorMemoryAllocation (2): out of memory".
std::string cudaText(cudaError_t e)
{
    return std::string(cudaGetErrorName(e)) + " (" + std::to_string(static_cast<int>(e)) + "): " + cudaGetErrorString(e);
}

/// The DeviceError of a failed call; clears the (non-sticky) error state.
DeviceError fromCuda(const std::string& call, cudaError_t e)
{
    (void)cudaGetLastError();
    DeviceError::Code code = DeviceError::Code::DriverError;
    if (e == cudaErrorMemoryAllocation)
        code = DeviceError::Code::OutOfMemory;
    else if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
        code = DeviceError::Code::NoDevice;
    return DeviceError{code, call + ": " + cudaText(e)};
}

DeviceStatus check(const std::string& call, cudaError_t e)
{
    if (e != cudaSuccess)
        return tl::unexpected(fromCuda(call, e));
    return {};
}

/// Reads @p count 16-byte words once (grid-stride, vectorised loads) and folds them with XOR.
/// The result is written to @p sink only when it equals an impossible constant for the data the
/// probe uses (zeros), so the loads cannot be removed and nothing is normally written.
static __global__ void readAllKernel(const uint4* __restrict__ data, unsigned long long count, unsigned* sink)
{
    unsigned acc = 0;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint4 v = data[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

class CudaDevice final : public Device {
public:
    explicit CudaDevice(int index) : Device(DeviceSpec{DeviceKind::Cuda, index}) {}

    ~CudaDevice() override
    {
        (void)cudaSetDevice(spec().index);
        if (m_stream)
            (void)cudaStreamSynchronize(m_stream);
        releaseAll();
        if (m_start)
            (void)cudaEventDestroy(m_start);
        if (m_stop)
            (void)cudaEventDestroy(m_stop);
        if (m_stream)
            (void)cudaStreamDestroy(m_stream);
        (void)cudaGetLastError();
    }

    /// Creates the context (cudaFree(0)), a non-blocking stream and two events.
    DeviceStatus init()
    {
        if (auto s = check("cudaSetDevice", cudaSetDevice(spec().index)); !s)
            return s;
        if (auto s = check("cudaFree(0) (context creation)", cudaFree(nullptr)); !s)
            return s;
        if (auto s = check("cudaGetDeviceProperties", cudaGetDeviceProperties(&m_prop, spec().index)); !s)
            return s;
        if (auto s = check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking)); !s)
            return s;
        if (auto s = check("cudaEventCreate", cudaEventCreate(&m_start)); !s)
            return s;
        return check("cudaEventCreate", cudaEventCreate(&m_stop));
    }

    std::string name() const override { return m_prop.name; }

    tl::expected<MemoryInfo, DeviceError> memoryInfo() override
    {
        std::size_t freeBytes = 0;
        std::size_t totalBytes = 0;
        if (auto s = check("cudaSetDevice", cudaSetDevice(spec().index)); !s)
            return tl::unexpected(s.error());
        if (auto s = check("cudaMemGetInfo", cudaMemGetInfo(&freeBytes, &totalBytes)); !s)
            return tl::unexpected(s.error());
        return MemoryInfo{Bytes{totalBytes}, Bytes{freeBytes}};
    }

    Bytes cacheBytes() const override { return Bytes{static_cast<std::uint64_t>(m_prop.l2CacheSize > 0 ? m_prop.l2CacheSize : 0)}; }

    std::map<std::string, std::string> facts() const override
    {
        int driver = 0;
        int runtime = 0;
        (void)cudaDriverGetVersion(&driver);
        (void)cudaRuntimeGetVersion(&runtime);
        int busWidth = 0;
        (void)cudaDeviceGetAttribute(&busWidth, cudaDevAttrGlobalMemoryBusWidth, spec().index);
        (void)cudaGetLastError();
        return {{"compute_capability", std::to_string(m_prop.major) + "." + std::to_string(m_prop.minor)},
                {"multiprocessors", std::to_string(m_prop.multiProcessorCount)},
                {"l2_bytes", std::to_string(m_prop.l2CacheSize)},
                {"total_global_mem_bytes", std::to_string(m_prop.totalGlobalMem)},
                {"ecc", m_prop.ECCEnabled ? "on" : "off"},
                {"memory_bus_width_bits", std::to_string(busWidth)},
                {"driver_version", std::to_string(driver)},
                {"runtime_version", std::to_string(runtime)}};
    }

    DeviceStatus fill(void* dst, std::uint8_t value, Bytes bytes) override
    {
        if (auto s = check("cudaMemsetAsync", cudaMemsetAsync(dst, value, bytes.value, m_stream)); !s)
            return s;
        return check("cudaStreamSynchronize after memset", cudaStreamSynchronize(m_stream));
    }

    DeviceStatus upload(void* dst, const void* src, Bytes bytes) override
    {
        if (auto s = check("cudaMemcpyAsync H2D", cudaMemcpyAsync(dst, src, bytes.value, cudaMemcpyHostToDevice, m_stream)); !s)
            return s;
        return check("cudaStreamSynchronize after H2D", cudaStreamSynchronize(m_stream));
    }

    DeviceStatus download(void* dst, const void* src, Bytes bytes) override
    {
        if (auto s = check("cudaMemcpyAsync D2H", cudaMemcpyAsync(dst, src, bytes.value, cudaMemcpyDeviceToHost, m_stream)); !s)
            return s;
        return check("cudaStreamSynchronize after D2H", cudaStreamSynchronize(m_stream));
    }

    DeviceStatus copy(void* dst, const void* src, Bytes bytes) override
    {
        return check("cudaMemcpyAsync D2D", cudaMemcpyAsync(dst, src, bytes.value, cudaMemcpyDeviceToDevice, m_stream));
    }

    DeviceStatus readAll(const void* src, Bytes bytes) override
    {
        const unsigned long long words = bytes.value / sizeof(uint4);
        if (words == 0)
            return {};
        const int blocks = m_prop.multiProcessorCount * 8;
        readAllKernel<<<blocks, 256, 0, m_stream>>>(static_cast<const uint4*>(src), words,
                                                   static_cast<unsigned*>(const_cast<void*>(src)));
        return check("readAllKernel launch", cudaGetLastError());
    }

    void* stream() override { return m_stream; }

    DeviceStatus synchronize() override { return check("cudaStreamSynchronize", cudaStreamSynchronize(m_stream)); }

    tl::expected<double, DeviceError> timeMs(const std::function<DeviceStatus()>& work) override
    {
        if (auto s = check("cudaEventRecord", cudaEventRecord(m_start, m_stream)); !s)
            return tl::unexpected(s.error());
        DeviceStatus status = work();
        if (auto s = check("cudaEventRecord", cudaEventRecord(m_stop, m_stream)); !s)
            return tl::unexpected(s.error());
        if (auto s = check("cudaEventSynchronize", cudaEventSynchronize(m_stop)); !s)
            return tl::unexpected(s.error());
        if (!status)
            return tl::unexpected(status.error());
        float ms = 0;
        if (auto s = check("cudaEventElapsedTime", cudaEventElapsedTime(&ms, m_start, m_stop)); !s)
            return tl::unexpected(s.error());
        return static_cast<double>(ms);
    }

protected:
    tl::expected<void*, DeviceError> rawAllocate(Bytes bytes, std::string_view what) override
    {
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes.value);
        if (e != cudaSuccess)
            return tl::unexpected(fromCuda(std::string(what) + ": cudaMalloc of " + formatThousands(bytes.value) + " B", e));
        return p;
    }

    DeviceStatus rawRelease(void* pointer) override { return check("cudaFree", cudaFree(pointer)); }

private:
    cudaDeviceProp m_prop{};
    cudaStream_t m_stream = nullptr;
    cudaEvent_t m_start = nullptr;
    cudaEvent_t m_stop = nullptr;
};

} // namespace

int cudaDeviceCountImpl(std::string* why)
{
    int count = 0; // left unchanged on error (TOOLCHAIN §4)
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why)
            *why = "cudaGetDeviceCount returned " + cudaText(e);
        return 0;
    }
    if (count <= 0 && why)
        *why = "cudaGetDeviceCount found no device";
    return count > 0 ? count : 0;
}

tl::expected<std::unique_ptr<Device>, DeviceError> openCudaDevice(int index)
{
    std::string why;
    const int count = cudaDeviceCountImpl(&why);
    if (count == 0)
        return tl::unexpected(error(DeviceError::Code::NoDevice, "no CUDA device: " + why));
    if (index < 0 || index >= count)
        return tl::unexpected(error(DeviceError::Code::NoDevice, "no CUDA device cuda:" + std::to_string(index) + ": "
                                                                     + std::to_string(count) + " device(s) present"));
    auto device = std::make_unique<CudaDevice>(index);
    if (auto s = device->init(); !s)
        return tl::unexpected(s.error());
    return std::unique_ptr<Device>(std::move(device));
}

} // namespace headroom::probes::detail
