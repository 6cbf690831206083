#include "commands.h"

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
        std::cerr << "headroom-cli: warning: skipped user profile " << toString(skipped) << '\n';
    m_profiles = std::move(*loaded);
    return &*m_profiles;
}

void CliContext::fail(const std::string& message)
{
    std::cerr << "headroom-cli: " << message << '\n';
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
