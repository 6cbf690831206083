#include "headroom/core/safetext.h"

#include <cstdint>
#include <cstdio>

namespace headroom {

namespace {

/// Length of the well-formed UTF-8 sequence starting at @p i (1..4), or 0 when ill-formed.
/// Table 3-7 of the Unicode Standard (well-formed UTF-8 byte sequences).
std::size_t sequenceLength(std::string_view s, std::size_t i)
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80)
        return 1;
    auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
        return i + k < s.size() && byte(i + k) >= lo && byte(i + k) <= hi;
    };
    if (b0 >= 0xC2 && b0 <= 0xDF)
        return cont(1) ? 2 : 0;
    if (b0 == 0xE0)
        return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF)
        return cont(1) && cont(2) ? 3 : 0;
    if (b0 == 0xED) // U+D800..U+DFFF (surrogates) are not characters
        return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (b0 == 0xF0)
        return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (b0 >= 0xF1 && b0 <= 0xF3)
        return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (b0 == 0xF4)
        return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

bool isC1(std::string_view s, std::size_t i, std::size_t len)
{
    return len == 2 && static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
}

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

} // namespace

std::size_t printableLength(std::string_view text, std::size_t at)
{
    const std::size_t len = sequenceLength(text, at);
    if (len == 0 || (len == 1 && isControl(static_cast<unsigned char>(text[at]))) || isC1(text, at, len))
        return 0;
    return len;
}

bool isSafeText(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t len = printableLength(text, i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

std::string safeLines(std::string_view text)
{
    std::string out;
    for (std::size_t start = 0;;) {
        const std::size_t end = text.find('\n', start);
        out += safeText(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (end == std::string_view::npos)
            return out;
        out += '\n';
        start = end + 1;
    }
}

std::optional<std::size_t> invalidUtf8At(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t len = sequenceLength(text, i);
        if (len == 0)
            return i;
        i += len;
    }
    return std::nullopt;
}

std::string safeText(std::string_view text)
{
    if (isSafeText(text))
        return std::string(text);
    std::string out;
    out.reserve(text.size() + 16);
    char escape[8];
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t len = sequenceLength(text, i);
        if (len == 0) {
            out += "\xEF\xBF\xBD"; // U+FFFD REPLACEMENT CHARACTER, one per ill-formed byte
            ++i;
            continue;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (len == 1 && isControl(c)) {
            std::snprintf(escape, sizeof escape, "\\x%02x", c);
            out += escape;
        } else if (isC1(text, i, len)) {
            std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
            out += escape;
        } else {
            out.append(text, i, len);
        }
        i += len;
    }
    return out;
}

} // namespace headroom
