// hostile-gen: writes the hostile files of the CLI tests (tests/cli/hostile.sh), so that none is
// committed as a binary. Usage: hostile-gen KIND DIR
//   names      DIR/llama-<bad>.gguf, a valid GGUF whose file name is not UTF-8 and holds an
//              escape sequence; DIR/text-<bad>.gguf, whose architecture and tensor names are not
//              UTF-8; DIR/llama.gguf, the same valid GGUF under a plain name
//   profiles   DIR/models/long-id.json (a 30,000-character id), DIR/models/deep.json (nested
//              100,000 deep), DIR/cards/broken.json (not JSON), from the built-in profile SRC

#include "hostilefiles.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;
using namespace headroom::test;

namespace {

template <typename Bytes>
void put(const fs::path& file, const Bytes& bytes)
{
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 3) {
        std::cerr << "usage: hostile-gen names|profiles DIR [PROFILE.json]\n";
        return 1;
    }
    const std::string kind = argv[1];
    const fs::path dir = argv[2];
    if (kind == "names") {
        put(dir / "llama-\xFF\x1B[2J.gguf", hostile::ggufSmallLlama());
        put(dir / "llama.gguf", hostile::ggufSmallLlama());
        put(dir / "text-\xFE.gguf", hostile::ggufWithBadText());
        return 0;
    }
    if (kind == "profiles" && argc == 4) {
        std::ifstream in(argv[3], std::ios::binary);
        const std::string model((std::istreambuf_iterator<char>(in)), {});
        const std::string idKey = "\"id\": \"";
        const auto at = model.find(idKey);
        const auto layers = model.find("\"layers\": ");
        if (at == std::string::npos || layers == std::string::npos) {
            std::cerr << "hostile-gen: " << argv[3] << " has no \"id\" or \"layers\"\n";
            return 1;
        }
        std::string longId = model;
        longId.insert(at + idKey.size(), std::string(30000, 'a'));
        put(dir / "models" / "long-id.json", longId);
        std::string deep = model;
        deep.insert(layers + 10, hostile::deepJson(100000) + ", \"x\": ");
        put(dir / "models" / "deep.json", deep);
        put(dir / "cards" / "broken.json", std::string("{\"schema_version\": 1,"));
        return 0;
    }
    std::cerr << "hostile-gen: unknown kind " << kind << "\n";
    return 1;
}
