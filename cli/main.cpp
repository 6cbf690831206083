// headroom-cli: what fits on a GPU for LLM inference, from the command line.

#include "commands.h"

#include "headroom/core/remote/remotemodel.h"
#include "headroom/core/version.h"
#include "headroom/remote/curlhttpclient.h"

#include <iostream>

int main(int argc, char** argv)
{
    using namespace headroom::cli;
    // -m ORG/NAME, hf://ORG/NAME@REV and https://.../FILE.gguf read headers over HTTP (libcurl).
    headroom::setDefaultHttpClient(headroom::makeCurlHttpClient());
    CliContext ctx(argc > 0 ? std::filesystem::path(argv[0]) : std::filesystem::path("headroom-cli"));
    CLI::App app{"Headroom: which model, at which weight format, with how much context, for how many users "
                 "fits on a GPU - and proof on the device.",
                 "headroom-cli"};
    app.set_version_flag("--version", std::string("headroom-cli ") + headroom::toolVersion());
    app.require_subcommand(1);
    app.fallthrough();
    app.add_option("--profiles", ctx.profilesOverride, "Folder of the built-in profiles (models/, cards/, engines/, schemas/)");
    app.add_option("--user-profiles", ctx.userProfilesOverride, "Folder of profiles overlaying the built-in ones");

    registerPlanCommand(app, ctx);
    registerTableCommand(app, ctx);
    registerFrontierCommand(app, ctx);
    registerInspectCommand(app, ctx);
    registerProbeCommand(app, ctx);
    registerSpeedCommand(app, ctx);
    registerListCommands(app, ctx);
    registerReportCommand(app, ctx);
    registerFlagsCommand(app, ctx);
    registerLogCommand(app, ctx);

    // "headroom-cli frobnicate": name the unknown command rather than "A subcommand is required".
    if (argc > 1 && argv[1][0] != '-') {
        const std::string first = argv[1];
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands({}))
            known = known || sub->check_name(first);
        if (!known) {
            std::cerr << "headroom-cli: unknown command '" << headroom::safeText(first) << "'\n\n" << app.help();
            return 1;
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // One line and where to read more, not the whole usage text.
        const CLI::App* failed = &app;
        for (const CLI::App* sub : app.get_subcommands())
            failed = sub;
        const std::string command = failed == &app ? std::string("headroom-cli") : "headroom-cli " + failed->get_name();
        std::cerr << "headroom-cli: " << headroom::safeText(e.what()) << " (see " << command << " --help)\n";
        return 1;
    }
    return ctx.exitCode;
}
