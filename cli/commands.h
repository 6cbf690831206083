#pragma once
// The subcommands of headroom-cli. Each registers itself on the app; its callback runs the
// command and stores the exit code in the context. One rule for every command:
//   0  answered (whatever the answer: "does not fit" is an answer)
//   1  usage or data error (a bad option, an unreadable or invalid file)
//   2  `report --check FILE`: the report drifted from what this build computes
//   3  with `--check` (plan, table, frontier, speed, flags): some plan does not fit as asked

#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/profiles.h"
#include "headroom/core/safetext.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::cli {

/// State shared by the subcommands.
class CliContext {
public:
    explicit CliContext(std::filesystem::path executable) : m_executable(std::move(executable)) {}

    /// Built-in profiles overlaid by the user's, loaded on first use; nullptr after printing the
    /// error to stderr (exit code 1).
    const ProfileSet* profiles();
    /// The calibrations saved in the user profiles folder, read on first use; a bad file is
    /// skipped with one warning on stderr naming it.
    const CalibrationFolder& calibrations();
    /// Folder of the built-in profiles (--profiles overrides).
    std::filesystem::path profilesDir() const;
    /// The user overlay folder (--user-profiles, else defaultUserProfilesDir()): user profiles and
    /// the calibrations saved from engine logs.
    std::filesystem::path userProfilesDir() const;

    std::string profilesOverride;  ///< --profiles DIR
    std::string userProfilesOverride; ///< --user-profiles DIR
    int exitCode = 0;

    /// Prints "headroom-cli: MESSAGE" to stderr and sets the exit code to 1.
    void fail(const std::string& message);
    /// With --check, an answer that does not fit as asked sets the exit code to 3 (unless 1).
    void answered(bool fits);

    bool checkFit = false; ///< --check

private:
    std::filesystem::path m_executable;
    std::optional<ProfileSet> m_profiles;
    std::optional<CalibrationFolder> m_calibrations;
    bool m_loadFailed = false;
};

/// Adds --check to @p cmd: exit 3 when some plan does not fit as asked.
void addCheckFlag(CLI::App* cmd, CliContext& ctx);

void registerPlanCommand(CLI::App& app, CliContext& ctx);
void registerTableCommand(CLI::App& app, CliContext& ctx);
void registerFrontierCommand(CLI::App& app, CliContext& ctx);
void registerListCommands(CLI::App& app, CliContext& ctx);
void registerInspectCommand(CLI::App& app, CliContext& ctx);
void registerProbeCommand(CLI::App& app, CliContext& ctx);
void registerReportCommand(CLI::App& app, CliContext& ctx);
void registerFlagsCommand(CLI::App& app, CliContext& ctx);
void registerSpeedCommand(CLI::App& app, CliContext& ctx);
void registerLogCommand(CLI::App& app, CliContext& ctx);

/// `models --local`: the models of the local stores and of @p dirs (cli/commands/localmodels.cpp).
void listLocalModels(CliContext& ctx, const std::vector<std::string>& dirs, bool json);

} // namespace headroom::cli
