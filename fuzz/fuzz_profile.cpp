// libFuzzer target: the profile loader on a user overlay file. The input is one user profile
// (its first byte picks the folder: models, cards or engines); the built-in side is a scratch
// folder holding only the schemas of this checkout, so that each run parses the schemas and the
// one hostile file. A bad file must become a warning, never a crash or a failed load.

#include <headroom/core/profiles.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

struct Folders {
    fs::path builtin;
    fs::path user;
};

/// The scratch folders, made once. Never destroyed (a leaked pointer, reachable: not a leak for
/// LeakSanitizer): the atexit clean-up below runs after the destructors of function statics
/// registered before it, and must not read a destroyed object.
const Folders& folders()
{
    static const Folders* f = [] {
        auto* out = new Folders;
        const fs::path root = fs::temp_directory_path() / ("headroom-fuzz-profile-" + std::to_string(::getpid()));
        out->builtin = root / "builtin";
        out->user = root / "user";
        fs::create_directories(out->builtin / "schemas");
        for (const char* schema : {"model.schema.json", "card.schema.json", "engine.schema.json"})
            fs::copy_file(fs::path(HEADROOM_FUZZ_PROFILES_DIR) / "schemas" / schema, out->builtin / "schemas" / schema,
                          fs::copy_options::overwrite_existing);
        for (const char* kind : {"models", "cards", "engines"})
            fs::create_directories(out->user / kind);
        std::atexit([] { std::error_code ec; fs::remove_all(folders().builtin.parent_path(), ec); });
        return out;
    }();
    return *f;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const Folders& f = folders();
    static const char* kinds[] = {"models", "cards", "engines"};
    const fs::path file = f.user / kinds[data[0] % 3] / "fuzz.json";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    }
    auto set = headroom::loadProfiles(f.builtin, f.user);
    if (!set)
        __builtin_trap(); // the user folder must never fail the load
    for (const headroom::ProfileError& w : set->warnings)
        (void)headroom::toString(w);
    std::error_code ec;
    fs::remove(file, ec);
    return 0;
}
