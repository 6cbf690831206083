#include "headroom/core/boundedfile.h"

#include "headroom/core/importers/importerror.h"

#include "importers/importutil.h"

namespace headroom {

tl::expected<std::string, std::string> readBoundedFile(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    auto text = importers::readSmallFile(path, maxBytes);
    if (!text)
        return tl::unexpected(toString(text.error()));
    return std::move(*text);
}

} // namespace headroom
