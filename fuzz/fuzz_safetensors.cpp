// libFuzzer target: the safetensors header reader (8-byte length + JSON).

#include <headroom/core/importers/safetensors.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const bool lax = (data[0] & 1) != 0;
    std::span<const std::uint8_t> bytes(data + 1, size - 1);
    auto header = headroom::parseSafetensorsBytes(bytes, "fuzz.safetensors", lax ? bytes.size() + (1ull << 40) : 0);
    if (!header)
        (void)headroom::toString(header.error());
    // The JSON part alone, without a data size.
    if (size > 9) {
        std::string_view json(reinterpret_cast<const char*>(data + 9), size - 9);
        (void)headroom::parseSafetensorsHeader(json, "fuzz.json");
    }
    return 0;
}
