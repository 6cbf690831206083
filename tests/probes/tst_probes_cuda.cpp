// The probes on a CUDA device. Own main (Catch2 v2 has no SKIP): exits 77 (CTest "skipped",
// SKIP_RETURN_CODE) when no CUDA device is usable; run with --probe-worker it is the worker
// process of the limit search (a CUDA context does not survive fork(), so the child is exec'ed).

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "fixtures.h"

#include "headroom/core/kvcache.h"
#include "headroom/core/profiles.h"
#include "headroom/probes/probes.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

using namespace headroom;
using namespace headroom::probes;

namespace {

std::string g_self; // absolute path of this binary, the worker command

ModelInputs qwen(const std::string& format = "bf16")
{
    static const ProfileSet set = [] {
        auto loaded = loadProfiles(test::sourcePath("profiles"));
        REQUIRE(loaded);
        return *loaded;
    }();
    const ModelProfile* m = set.findModel("qwen2.5-0.5b");
    REQUIRE(m);
    ModelInputs in;
    in.model = *m;
    in.format = *findFormat(format);
    in.kvDtype = *findKvDtype("fp16");
    return in;
}

Isolation worker()
{
    Isolation i;
    i.mode = Isolation::Mode::Exec;
    i.workerCommand = {g_self, "--probe-worker"};
    return i;
}

} // namespace

TEST_CASE("CUDA device facts and bandwidth", "[probes][gpu]")
{
    auto d = openDevice(DeviceSpec{DeviceKind::Cuda, 0});
    REQUIRE(d);
    auto info = (*d)->memoryInfo();
    REQUIRE(info);
    CHECK(info->totalBytes.value > 0);
    CHECK(info->freeBytes <= info->totalBytes);
    DeviceProbeOptions options;
    options.isolation = worker();
    NullProgress progress;
    const ProbeResult r = runDeviceProbe(**d, options, progress);
    INFO(probeResultToJson(r));
    CHECK(r.pass);
    CHECK(r.number("copy_bandwidth_gbps").value_or(0) > 50);
    CHECK(r.number("read_bandwidth_gbps").value_or(0) > 50);
    const auto overhead = r.integer("context_overhead_bytes");
    REQUIRE(overhead);
    CHECK(*overhead > 0);
    CHECK(*overhead <= (1ull << 30)); // gpus.md §6.4: fail loudly past 1 GiB
}

TEST_CASE("CUDA budget cap and out of memory are values", "[probes][gpu]")
{
    auto d = openDevice(DeviceSpec{DeviceKind::Cuda, 0});
    REQUIRE(d);
    (*d)->setBudget(Bytes{1 << 20});
    auto refused = (*d)->allocate(Bytes{(1 << 20) + 1}, "too big");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == DeviceError::Code::OutOfBudget);
    (*d)->setBudget(std::nullopt);
    auto huge = (*d)->allocate(Bytes{1ull << 50}, "a petabyte");
    REQUIRE_FALSE(huge);
    CHECK(huge.error().code == DeviceError::Code::OutOfMemory);
    auto ok = (*d)->allocate(Bytes{4096}, "small");
    REQUIRE(ok); // the error state was cleared
    CHECK((*d)->release(*ok));
}

TEST_CASE("CUDA allocation bytes equal the formula's", "[probes][gpu]")
{
    auto d = openDevice(DeviceSpec{DeviceKind::Cuda, 0});
    REQUIRE(d);
    (*d)->setBudget(Bytes{8ull << 30});
    NullProgress progress;
    const ProbeResult r = runAllocationProbe(**d, qwen("int4-g128"), progress);
    INFO(probeResultToJson(r));
    CHECK(r.pass);
    CHECK(r.integer("measured_bytes") == r.integer("predicted_bytes"));
    REQUIRE(r.integer("driver_measured_bytes"));
    CHECK(*r.integer("driver_measured_bytes") >= *r.integer("measured_bytes"));
}

TEST_CASE("CUDA limit under 8 GiB is within 1% and never above the prediction", "[probes][gpu]")
{
    LimitProbeOptions options;
    options.isolation = worker();
    NullProgress progress;
    const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cuda, 0}, Bytes{8ull << 30}, qwen("bf16"), options, progress);
    INFO(probeResultToJson(r));
    const std::uint64_t predicted = r.integer("predicted_tokens").value_or(0);
    const std::uint64_t verified = r.integer("verified_tokens").value_or(0);
    CHECK(predicted > 0);
    CHECK(verified <= predicted);
    CHECK(static_cast<double>(verified) >= 0.99 * static_cast<double>(predicted));
    CHECK(r.pass);
}

TEST_CASE("CUDA timing sweep", "[probes][gpu]")
{
    auto d = openDevice(DeviceSpec{DeviceKind::Cuda, 0});
    REQUIRE(d);
    (*d)->setBudget(Bytes{24ull << 30});
    TimingProbeOptions options;
    options.reps = 10;
    NullProgress progress;
    const ProbeResult r = runTimingProbe(**d, qwen("int4-g128"), options, progress);
    INFO(probeResultToJson(r));
    CHECK(r.pass);
    CHECK(r.number("tpot_ms").value_or(0) > 0);
}

int main(int argc, char** argv)
{
    if (argc >= 2 && std::strcmp(argv[1], "--probe-worker") == 0)
        return runProbeWorker(STDIN_FILENO, STDOUT_FILENO);
    std::error_code ec;
    g_self = std::filesystem::canonical("/proc/self/exe", ec).string();
    std::string why;
    if (cudaDeviceCount(&why) == 0) {
        std::printf("no usable CUDA device (%s): skipped\n", why.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
