// libFuzzer target: the GGUF header reader (readGgufBytes) and the architecture it implies.
// The first byte chooses how big the "file" is: exactly the input (every length checked against
// it), or the input followed by 1 TiB of tensor data that is never read (lengths checked against
// the larger file; the reader must still stop at the end of the bytes it has).

#include <headroom/core/importers/ggufreader.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const bool lax = (data[0] & 1) != 0;
    std::span<const std::uint8_t> bytes(data + 1, size - 1);
    auto file = headroom::readGgufBytes(bytes, "fuzz.gguf", lax ? bytes.size() + (1ull << 40) : 0);
    if (file) {
        std::string why;
        auto arch = headroom::ggufArchitecture(*file, &why);
        (void)arch;
    } else {
        (void)headroom::toString(file.error());
    }
    return 0;
}
