// The CPU device: host memory through aligned_alloc, counted by Device's tracking allocator;
// threaded memset/memcpy/read so that the bandwidth figures use every core.

#include "backends.h"
#include "parallel.h"

#include "headroom/kernels/cpukernels.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace headroom::probes::detail {

namespace {

constexpr std::uint64_t kAlignment = 256;

/// The first line of /proc/cpuinfo that starts with @p key, after the colon.
std::string cpuInfo(const std::string& key)
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos)
                return line.substr(line.find_first_not_of(" \t", colon + 1));
        }
    }
    return {};
}

/// A /proc/meminfo value in bytes (the file gives kB = KiB).
std::uint64_t memInfo(const std::string& key)
{
    std::ifstream in("/proc/meminfo");
    std::string name;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> name >> kib) {
        std::getline(in, unit);
        if (name == key + ":")
            return kib * 1024;
    }
    return 0;
}

class CpuDevice final : public Device {
public:
    CpuDevice() : Device(DeviceSpec{DeviceKind::Cpu, 0}) {}
    ~CpuDevice() override { releaseAll(); }

    std::string name() const override
    {
        const std::string model = cpuInfo("model name");
        return model.empty() ? std::string("host CPU") : model;
    }

    tl::expected<MemoryInfo, DeviceError> memoryInfo() override
    {
        MemoryInfo info;
        info.totalBytes = Bytes{memInfo("MemTotal")};
        info.freeBytes = Bytes{memInfo("MemAvailable")};
        if (info.totalBytes.value == 0)
            return tl::unexpected(error(DeviceError::Code::DriverError, "cannot read /proc/meminfo"));
        return info;
    }

    Bytes cacheBytes() const override
    {
        long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (l3 > 0)
            return Bytes{static_cast<std::uint64_t>(l3)};
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        return Bytes{l2 > 0 ? static_cast<std::uint64_t>(l2) : 0};
    }

    std::map<std::string, std::string> facts() const override
    {
        return {{"threads", std::to_string(hostThreads())},
                {"avx2", kernels::cpuUsesAvx2() ? "yes" : "no"},
                {"cache_bytes", std::to_string(cacheBytes().value)}};
    }

    DeviceStatus fill(void* dst, std::uint8_t value, Bytes bytes) override
    {
        if (!dst && bytes.value)
            return tl::unexpected(error(DeviceError::Code::InvalidArgument, "fill of a null pointer"));
        auto* p = static_cast<std::uint8_t*>(dst);
        parallelBytes(bytes.value, [&](std::uint64_t b, std::uint64_t e) { std::memset(p + b, value, e - b); });
        return {};
    }

    DeviceStatus upload(void* dst, const void* src, Bytes bytes) override { return copy(dst, src, bytes); }
    DeviceStatus download(void* dst, const void* src, Bytes bytes) override { return copy(dst, src, bytes); }

    DeviceStatus copy(void* dst, const void* src, Bytes bytes) override
    {
        if ((!dst || !src) && bytes.value)
            return tl::unexpected(error(DeviceError::Code::InvalidArgument, "copy with a null pointer"));
        auto* d = static_cast<std::uint8_t*>(dst);
        const auto* s = static_cast<const std::uint8_t*>(src);
        parallelBytes(bytes.value, [&](std::uint64_t b, std::uint64_t e) { std::memcpy(d + b, s + b, e - b); });
        return {};
    }

    DeviceStatus readAll(const void* src, Bytes bytes) override
    {
        if (!src && bytes.value)
            return tl::unexpected(error(DeviceError::Code::InvalidArgument, "read of a null pointer"));
        const auto* s = static_cast<const std::uint8_t*>(src);
        std::vector<std::uint64_t> partial(hostThreads() + 1, 0);
        std::atomic<unsigned> slot{0};
        parallelBytes(bytes.value, [&](std::uint64_t b, std::uint64_t e) {
            // Four independent XOR chains over 8-byte words (the compiler vectorises them).
            std::uint64_t acc[4] = {0, 0, 0, 0};
            std::uint64_t i = b;
            for (; i + 32 <= e; i += 32) {
                std::uint64_t w[4];
                std::memcpy(w, s + i, sizeof w);
                acc[0] ^= w[0];
                acc[1] ^= w[1];
                acc[2] ^= w[2];
                acc[3] ^= w[3];
            }
            for (; i < e; ++i)
                acc[0] ^= s[i];
            partial[slot.fetch_add(1) % partial.size()] ^= acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
        });
        std::uint64_t total = 0;
        for (std::uint64_t v : partial)
            total ^= v;
        m_sink = total;
        return {};
    }

    void* stream() override { return nullptr; }
    DeviceStatus synchronize() override { return {}; }

    tl::expected<double, DeviceError> timeMs(const std::function<DeviceStatus()>& work) override
    {
        const auto start = std::chrono::steady_clock::now();
        DeviceStatus status = work();
        const auto end = std::chrono::steady_clock::now();
        if (!status)
            return tl::unexpected(status.error());
        return std::chrono::duration<double, std::milli>(end - start).count();
    }

protected:
    tl::expected<void*, DeviceError> rawAllocate(Bytes bytes, std::string_view what) override
    {
        const std::uint64_t rounded = (bytes.value + kAlignment - 1) / kAlignment * kAlignment;
        void* p = std::aligned_alloc(kAlignment, rounded);
        if (!p)
            return tl::unexpected(error(DeviceError::Code::OutOfMemory,
                                        std::string(what) + ": aligned_alloc of " + formatThousands(bytes.value) + " B failed"));
        return p;
    }

    DeviceStatus rawRelease(void* pointer) override
    {
        std::free(pointer);
        return {};
    }

private:
    volatile std::uint64_t m_sink = 0;
};

} // namespace

std::unique_ptr<Device> makeCpuDevice()
{
    return std::make_unique<CpuDevice>();
}

} // namespace headroom::probes::detail
