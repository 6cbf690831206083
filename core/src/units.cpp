#include "headroom/core/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace headroom {

std::uint64_t checkedAdd(std::uint64_t a, std::uint64_t b, const char* what)
{
    std::uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        throw OverflowError(std::string("overflow in ") + what);
    return r;
}

std::uint64_t checkedMul(std::uint64_t a, std::uint64_t b, const char* what)
{
    std::uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        throw OverflowError(std::string("overflow in ") + what);
    return r;
}

std::uint64_t roundUp(std::uint64_t a, std::uint64_t m)
{
    return checkedMul(ceilDiv(a, m), m, "round up");
}

Bytes operator-(Bytes a, Bytes b)
{
    if (b.value > a.value)
        throw OverflowError("negative bytes");
    return Bytes{a.value - b.value};
}

std::string asciiLower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

namespace {

// Splits "12.5GiB" into its number and its unit; nullopt if the number part is malformed.
struct NumberAndUnit {
    long double number;
    std::string unit;
};

std::optional<NumberAndUnit> splitNumber(std::string_view text)
{
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    std::size_t i = 0;
    bool digits = false;
    bool dot = false;
    while (i < text.size()) {
        const char c = text[i];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            digits = true;
        } else if (c == '.' && !dot) {
            dot = true;
        } else if (c == '_' || c == ',') {
            // digit group separators
        } else {
            break;
        }
        ++i;
    }
    if (!digits)
        return std::nullopt;
    std::string num;
    for (char c : text.substr(0, i))
        if (c != '_' && c != ',')
            num += c;
    std::string rest(text.substr(i));
    // scientific notation: 7e9
    if (!rest.empty() && (rest[0] == 'e' || rest[0] == 'E') && rest.size() > 1
        && (std::isdigit(static_cast<unsigned char>(rest[1])) || rest[1] == '+' || rest[1] == '-')) {
        std::size_t j = 1;
        if (rest[j] == '+' || rest[j] == '-')
            ++j;
        const std::size_t expStart = j;
        while (j < rest.size() && std::isdigit(static_cast<unsigned char>(rest[j])))
            ++j;
        if (j == expStart)
            return std::nullopt;
        num += rest.substr(0, j);
        rest = rest.substr(j);
    }
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
        rest.erase(rest.begin());
    char* end = nullptr;
    const long double v = std::strtold(num.c_str(), &end);
    if (end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0)
        return std::nullopt;
    return NumberAndUnit{v, rest};
}

std::optional<std::uint64_t> toU64(long double v)
{
    if (!(v >= 0) || v >= 18446744073709551616.0L)
        return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

} // namespace

std::optional<Bytes> parseSize(std::string_view text)
{
    const auto nu = splitNumber(text);
    if (!nu)
        return std::nullopt;
    const std::string u = asciiLower(nu->unit);
    long double mult = 0;
    if (u.empty() || u == "b")
        mult = 1;
    else if (u == "kb" || u == "k")
        mult = 1e3L;
    else if (u == "mb" || u == "m")
        mult = 1e6L;
    else if (u == "gb" || u == "g")
        mult = 1e9L;
    else if (u == "tb" || u == "t")
        mult = 1e12L;
    else if (u == "kib")
        mult = static_cast<long double>(kKiB);
    else if (u == "mib")
        mult = static_cast<long double>(kMiB);
    else if (u == "gib")
        mult = static_cast<long double>(kGiB);
    else if (u == "tib")
        mult = static_cast<long double>(kGiB) * 1024.0L;
    else
        return std::nullopt;
    const auto v = toU64(std::floor(nu->number * mult));
    if (!v)
        return std::nullopt;
    return Bytes{*v};
}

std::optional<std::uint64_t> parseCount(std::string_view text)
{
    const auto nu = splitNumber(text);
    if (!nu)
        return std::nullopt;
    const std::string u = asciiLower(nu->unit);
    long double mult = 0;
    if (u.empty())
        mult = 1;
    else if (u == "k")
        mult = 1e3L;
    else if (u == "m")
        mult = 1e6L;
    else if (u == "b" || u == "g")
        mult = 1e9L;
    else if (u == "t")
        mult = 1e12L;
    else
        return std::nullopt;
    return toU64(std::llround(nu->number * mult));
}

namespace {
std::string withUnits(std::uint64_t v, std::uint64_t base, const char* const* units)
{
    if (v < base)
        return std::to_string(v) + " B";
    long double x = static_cast<long double>(v);
    int i = 0;
    while (x >= static_cast<long double>(base) && units[i + 1] != nullptr) {
        x /= static_cast<long double>(base);
        ++i;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2Lf %s", x, units[i]);
    return buf;
}
} // namespace

std::string formatBytes(Bytes b)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", nullptr};
    return withUnits(b.value, 1024, units);
}

std::string formatBytesDecimal(Bytes b)
{
    static const char* const units[] = {"B", "KB", "MB", "GB", "TB", "PB", nullptr};
    return withUnits(b.value, 1000, units);
}

std::string formatFixed(double value, int decimals, bool sign)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, sign ? "%+.*f" : "%.*f", std::clamp(decimals, 0, 9), value);
    std::string text = buf;
    // Rounded to zero: no sign (printf keeps the sign of -0.001 as "-0.00").
    if (std::isfinite(value) && text.find_first_of("123456789") == std::string::npos && (text[0] == '-' || text[0] == '+'))
        text.erase(0, 1);
    return text;
}

std::string formatThousands(std::uint64_t n)
{
    std::string digits = std::to_string(n);
    std::string out;
    const int len = static_cast<int>(digits.size());
    for (int i = 0; i < len; ++i) {
        if (i > 0 && (len - i) % 3 == 0)
            out += ',';
        out += digits[static_cast<std::size_t>(i)];
    }
    return out;
}

std::string formatCount(std::uint64_t n)
{
    char buf[64];
    const double v = static_cast<double>(n);
    if (n >= 1'000'000'000'000ull)
        std::snprintf(buf, sizeof buf, "%.2fT", v / 1e12);
    else if (n >= 1'000'000'000ull)
        std::snprintf(buf, sizeof buf, "%.2fB", v / 1e9);
    else if (n >= 1'000'000ull)
        std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
    else if (n >= 1'000ull)
        std::snprintf(buf, sizeof buf, "%.2fK", v / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    return buf;
}

} // namespace headroom
