// libFuzzer target: the loader of the calibrations saved in the user profiles folder
// (calibrations/*.json, `headroom-cli log --save`). The input is one calibration file, read from
// memory (calibrationFromJson) and from the folder (readCalibrationFolder) beside a good
// calibration; the folder's pick is then applied to a plan request. A bad file must become one
// warning naming it, never a crash, and never hide the good calibration.

#include <headroom/core/enginelog/calibration.h>
#include <headroom/core/resolve.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Setup {
    fs::path user;           ///< the user profiles folder: calibrations/ holds good.json and fuzz.json
    headroom::PlanRequest request; ///< llama-3.1-8b on an rtx-4090 under vLLM: good.json applies to it
};

/// Made once; never destroyed (see fuzz_profile.cpp: the atexit clean-up reads it).
const Setup& setup()
{
    static const Setup* s = [] {
        auto* out = new Setup;
        out->user = fs::temp_directory_path() / ("headroom-fuzz-calibration-" + std::to_string(::getpid()));
        fs::create_directories(out->user / "calibrations");
        auto profiles = headroom::loadProfiles(HEADROOM_FUZZ_PROFILES_DIR);
        if (!profiles)
            std::abort();
        headroom::PlanRequest& r = out->request;
        r.model = *headroom::resolveModel("llama-3.1-8b", *profiles);
        r.format = *headroom::resolveFormat("bf16", r.model);
        r.kvDtype = *headroom::resolveKvDtype("fp16");
        r.card = *headroom::resolveCard("rtx-4090", *profiles);
        r.engine = *headroom::resolveEngine("vllm", *profiles);
        headroom::LogCalibration good;
        good.cardId = "rtx-4090";
        good.cardTotalBytes = r.card.totalBytes;
        good.engine = "vllm";
        good.modelId = "llama-3.1-8b";
        good.logName = "serve.log";
        good.logHash = "0";
        good.measured.activationPeakBytes = headroom::Bytes{1u << 30};
        std::ofstream(out->user / "calibrations" / "good.json") << headroom::calibrationToJson(good);
        std::atexit([] { std::error_code ec; fs::remove_all(setup().user, ec); });
        return out;
    }();
    return *s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const Setup& s = setup();
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (auto c = headroom::calibrationFromJson(text, "fuzz.json"))
        (void)headroom::calibrationToJson(*c); // what was read serialises again (no throw)
    const fs::path file = s.user / "calibrations" / "fuzz.json";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    const headroom::CalibrationFolder folder = headroom::readCalibrationFolder(s.user);
    // fuzz.json is read or skipped with one warning; good.json is always read.
    if (folder.calibrations.size() + folder.warnings.size() != 2 || folder.calibrations.empty())
        __builtin_trap();
    const headroom::PlanRequest r = headroom::applySavedCalibration(s.request, folder);
    if (!r.measured.activationPeakBytes && r.measured.source.empty())
        __builtin_trap(); // a calibration of this card, engine and model applied or said why not
    std::error_code ec;
    fs::remove(file, ec);
    return 0;
}
