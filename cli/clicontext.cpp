#include "commands.h"

#include "headroom/core/safetext.h"

#include <iostream>

namespace headroom::cli {

std::filesystem::path CliContext::profilesDir() const
{
    if (!profilesOverride.empty())
        return profilesOverride;
    return defaultProfilesDir(m_executable);
}

std::filesystem::path CliContext::userProfilesDir() const
{
    return userProfilesOverride.empty() ? defaultUserProfilesDir() : std::filesystem::path(userProfilesOverride);
}

const ProfileSet* CliContext::profiles()
{
    if (m_profiles)
        return &*m_profiles;
    if (m_loadFailed)
        return nullptr;
    auto loaded = loadProfiles(profilesDir(), userProfilesDir());
    if (!loaded) {
        m_loadFailed = true;
        fail("cannot load profiles: " + toString(loaded.error()));
        return nullptr;
    }
    for (const ProfileError& skipped : loaded->warnings)
        std::cerr << "headroom-cli: warning: skipped user profile " << safeText(toString(skipped)) << '\n';
    m_profiles = std::move(*loaded);
    return &*m_profiles;
}

const CalibrationFolder& CliContext::calibrations()
{
    if (!m_calibrations) {
        m_calibrations = readCalibrationFolder(userProfilesDir());
        for (const std::string& w : m_calibrations->warnings)
            std::cerr << "headroom-cli: warning: " << safeText(w) << '\n';
    }
    return *m_calibrations;
}

void CliContext::fail(const std::string& message)
{
    std::cerr << "headroom-cli: " << safeText(message) << '\n';
    exitCode = 1;
}

void addCheckFlag(CLI::App* cmd, CliContext& ctx)
{
    cmd->add_flag("--check", ctx.checkFit, "Exit with 3 when the plan does not fit as asked (for scripts)");
}

void CliContext::answered(bool fits)
{
    if (checkFit && !fits && exitCode == 0)
        exitCode = 3;
}

} // namespace headroom::cli
