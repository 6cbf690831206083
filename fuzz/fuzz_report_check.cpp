// libFuzzer target: `report --check` on an untrusted report (checkReport: bounded parse, schema,
// recomputation, linear diff) and the other readers of a report's text (validateReport,
// maskVolatileFields). Profiles are this checkout's, loaded once; remote model ids are kept off
// the network (HF_HUB_OFFLINE).

#include <headroom/core/profiles.h>
#include <headroom/core/report/report.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    ::setenv("HF_HUB_OFFLINE", "1", 1);
    ::setenv("HEADROOM_REMOTE_CACHE", "/nonexistent/headroom-fuzz", 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const headroom::ProfileSet profiles = [] {
        auto loaded = headroom::loadProfiles(HEADROOM_FUZZ_PROFILES_DIR);
        if (!loaded)
            std::abort();
        return *loaded;
    }();
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto check = headroom::checkReport(text, profiles);
    if (check) {
        for (const headroom::ReportDrift& d : check->drifts)
            (void)d.path.size();
    }
    (void)headroom::validateReport(text);
    (void)headroom::maskVolatileFields(text);
    return 0;
}
