// libFuzzer target: the Hugging Face config.json parser and the safetensors index parser.

#include <headroom/core/importers/hfconfig.h>
#include <headroom/core/importers/modeldirectory.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto config = headroom::parseHfConfig(text, "fuzz-config.json");
    if (!config)
        (void)headroom::toString(config.error());
    auto index = headroom::parseSafetensorsIndex(text, "fuzz-index.json");
    (void)index;
    return 0;
}
