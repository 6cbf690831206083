#pragma once
/// @file device.h
/// The device a probe runs on: CPU (host memory through a tracking allocator, the fast CPU
/// kernels) or CUDA (cudaMalloc only, never managed memory; every return code checked; out of
/// memory is a value, never a crash). Both count every byte they hand out and refuse to go past
/// a budget cap, so one large card verifies the limits of an 8, 16 or 24 GB card
/// (BRIEF §4; shared/reference/gpus.md §6.4). No CUDA header here: compiles with plain g++.

#include "headroom/core/units.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace headroom::probes {

/// Which backend a device is.
enum class DeviceKind {
    Cpu,  ///< host memory, fast CPU kernels (kernels::Backend::Cpu)
    Cuda, ///< one CUDA device, CUDA kernels (kernels::Backend::Cuda)
};

/// "cpu" or "cuda".
const char* deviceKindName(DeviceKind kind);

/// What `--device` names: "cpu" or "cuda:N" ("cuda" = "cuda:0").
struct DeviceSpec {
    DeviceKind kind = DeviceKind::Cpu; ///< backend
    int index = 0;                     ///< CUDA device ordinal (0 for the CPU)
};

/// Parses "cpu", "cuda", "cuda:N"; nullopt otherwise.
std::optional<DeviceSpec> parseDeviceSpec(std::string_view text);
/// "cpu" or "cuda:N".
std::string toString(const DeviceSpec& spec);

/// Why a device operation failed. Errors are values (STYLE §6); probes turn them into results.
struct DeviceError {
    /// The kind of failure.
    enum class Code {
        NoDevice,        ///< no CUDA device or no driver (cudaGetDeviceCount 35/100, or count 0), or CUDA not built
        OutOfBudget,     ///< the budget cap refused the allocation (the system was not asked)
        OutOfMemory,     ///< the system refused (cudaErrorMemoryAllocation, aligned_alloc null)
        DriverError,     ///< any other CUDA error (code and name in the message)
        InvalidArgument, ///< null pointer, unknown pointer, zero size where not allowed
        KernelError,     ///< a kernel returned a non-Ok status
        Cancelled,       ///< the caller cancelled
    };
    Code code = Code::DriverError; ///< what happened
    std::string message;           ///< one line for people, naming the call and the sizes
};

/// "no device", "out of budget", ...
const char* errorCodeName(DeviceError::Code code);

/// Ok or an error.
using DeviceStatus = tl::expected<void, DeviceError>;

/// Memory as the system reports it.
struct MemoryInfo {
    Bytes totalBytes; ///< CUDA: cudaMemGetInfo total (= totalGlobalMem); CPU: /proc/meminfo MemTotal
    Bytes freeBytes;  ///< CUDA: cudaMemGetInfo free; CPU: /proc/meminfo MemAvailable
};

/// One device with a tracking allocator and a budget cap. Not thread-safe; one probe at a time.
/// Pointers it returns are device pointers (host pointers for the CPU backend).
class Device {
public:
    virtual ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    /// Cpu or Cuda.
    DeviceKind kind() const { return m_spec.kind; }
    /// The spec it was opened from.
    const DeviceSpec& spec() const { return m_spec; }
    /// Marketing name ("NVIDIA H200", or the CPU model name from /proc/cpuinfo).
    virtual std::string name() const = 0;
    /// Memory as the system reports it now (CUDA: after the context exists).
    virtual tl::expected<MemoryInfo, DeviceError> memoryInfo() = 0;
    /// Last-level cache bytes (CUDA: L2 from cudaDeviceProp::l2CacheSize; CPU: L3 from sysconf,
    /// else L2; 0 when unknown). Used for cold-cache rules (gpus.md §6.1: rotate >= 5x L2).
    virtual Bytes cacheBytes() const = 0;
    /// Extra facts for reports (CUDA: compute capability, driver and runtime versions, SMs;
    /// CPU: threads, AVX2). Keys end in their unit where they have one.
    virtual std::map<std::string, std::string> facts() const = 0;

    /// Budget cap in bytes, if any: allocate() refuses when allocatedBytes() + bytes would exceed it.
    std::optional<Bytes> budget() const { return m_budget; }
    /// Sets or clears the budget cap.
    void setBudget(std::optional<Bytes> budget) { m_budget = budget; }

    /// Allocates @p bytes (> 0) of device memory, 256-byte aligned. Counts exactly @p bytes
    /// (the bytes asked for, whatever the system rounds to). @p what names the buffer in errors.
    /// Errors: OutOfBudget (cap; nothing asked of the system), OutOfMemory, DriverError, NoDevice.
    tl::expected<void*, DeviceError> allocate(Bytes bytes, std::string_view what);
    /// Frees a pointer from allocate(); nullptr is ignored. Errors: InvalidArgument (unknown
    /// pointer), DriverError.
    DeviceStatus release(void* pointer);
    /// Bytes currently allocated through this device (sum of the sizes asked for).
    Bytes allocatedBytes() const { return m_allocated; }
    /// Largest allocatedBytes() seen since construction or the last resetPeak().
    Bytes peakBytes() const { return m_peak; }
    /// Sets peakBytes() to allocatedBytes().
    void resetPeak() { m_peak = m_allocated; }
    /// Number of live allocations.
    std::size_t allocationCount() const { return m_live.size(); }

    /// Writes @p value into @p bytes bytes at @p dst (memset / cudaMemsetAsync), which also
    /// commits the pages of host memory.
    virtual DeviceStatus fill(void* dst, std::uint8_t value, Bytes bytes) = 0;
    /// Host -> device copy of @p bytes (synchronous).
    virtual DeviceStatus upload(void* dst, const void* src, Bytes bytes) = 0;
    /// Device -> host copy of @p bytes (synchronous).
    virtual DeviceStatus download(void* dst, const void* src, Bytes bytes) = 0;
    /// Device -> device copy of @p bytes (cudaMemcpyAsync D2D on the stream / threaded memcpy).
    virtual DeviceStatus copy(void* dst, const void* src, Bytes bytes) = 0;
    /// Reads @p bytes at @p src once (a read-only vectorised reduction; nothing written unless
    /// the data hold an impossible pattern), for the read bandwidth B_read.
    virtual DeviceStatus readAll(const void* src, Bytes bytes) = 0;
    /// The stream kernels are launched on (cudaStream_t for CUDA; nullptr for the CPU).
    virtual void* stream() = 0;
    /// Waits for the stream; reports asynchronous errors.
    virtual DeviceStatus synchronize() = 0;
    /// Runs @p work once and returns its duration in milliseconds: CUDA events around the work
    /// on the stream (gpus.md §6.1), a steady clock on the CPU (the CPU kernels are synchronous).
    virtual tl::expected<double, DeviceError> timeMs(const std::function<DeviceStatus()>& work) = 0;

protected:
    /// A device opened from @p spec.
    explicit Device(DeviceSpec spec) : m_spec(spec) {}
    /// The backend's allocation: the system call, no accounting.
    virtual tl::expected<void*, DeviceError> rawAllocate(Bytes bytes, std::string_view what) = 0;
    /// The backend's free.
    virtual DeviceStatus rawRelease(void* pointer) = 0;
    /// Frees every live allocation (derived destructors call it while the backend still exists).
    void releaseAll();

private:
    DeviceSpec m_spec;
    std::optional<Bytes> m_budget;
    Bytes m_allocated;
    Bytes m_peak;
    std::map<void*, std::uint64_t> m_live;
};

/// Opens the device of @p spec. Errors: NoDevice ("no CUDA device: cudaGetDeviceCount returned
/// 35 (...)", "CUDA is not part of this build", "cuda:3 does not exist: 1 device"), DriverError.
tl::expected<std::unique_ptr<Device>, DeviceError> openDevice(const DeviceSpec& spec);

/// Number of usable CUDA devices; 0 when CUDA is not built, there is no driver (35), no device
/// (100) or any other error. @p why receives the reason when 0 (may be null).
int cudaDeviceCount(std::string* why = nullptr);

/// A device allocation that frees itself. Move-only.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    /// Takes ownership of @p pointer of @p bytes from @p device.
    DeviceBuffer(Device* device, void* pointer, Bytes bytes) : m_device(device), m_pointer(pointer), m_bytes(bytes) {}
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    /// Allocates @p bytes on @p device (see Device::allocate).
    static tl::expected<DeviceBuffer, DeviceError> make(Device& device, Bytes bytes, std::string_view what);

    /// The device pointer.
    void* get() const { return m_pointer; }
    /// The pointer as T*.
    template <class T>
    T* as() const { return static_cast<T*>(m_pointer); }
    /// Bytes asked for.
    Bytes bytes() const { return m_bytes; }
    /// Frees now.
    void reset();

private:
    Device* m_device = nullptr;
    void* m_pointer = nullptr;
    Bytes m_bytes;
};

} // namespace headroom::probes
