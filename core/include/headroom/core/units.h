#pragma once
/// @file units.h
/// Exact quantities: bytes and tokens as uint64 strong types, with overflow-checked arithmetic,
/// and the parsing and printing of sizes (`8GiB`, `24GB`, `16384MiB`) and parameter counts
/// (`7e9`, `7B`). 1 GiB = 2^30 B and 1 GB = 10^9 B are never confused (BRIEF §1).

#include <compare>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace headroom {

/// Thrown by checked arithmetic when a result does not fit in 64 bits. Core entry points that
/// take user input catch it and return an error value; it never reaches the front ends.
class OverflowError : public std::overflow_error {
public:
    using std::overflow_error::overflow_error;
};

/// a + b, or OverflowError naming @p what.
std::uint64_t checkedAdd(std::uint64_t a, std::uint64_t b, const char* what = "sum");
/// a * b, or OverflowError naming @p what.
std::uint64_t checkedMul(std::uint64_t a, std::uint64_t b, const char* what = "product");
/// ceil(a / b) for b > 0.
constexpr std::uint64_t ceilDiv(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }
/// The smallest multiple of @p m that is >= @p a (m > 0); OverflowError past 2^64.
std::uint64_t roundUp(std::uint64_t a, std::uint64_t m);

/// An exact number of bytes. Addition and multiplication are overflow-checked; subtraction
/// saturates at zero only through `saturatingSub` (plain `-` throws when it would go negative).
struct Bytes {
    std::uint64_t value = 0;

    constexpr Bytes() = default;
    constexpr explicit Bytes(std::uint64_t v) : value(v) {}

    friend constexpr auto operator<=>(Bytes, Bytes) = default;
    friend Bytes operator+(Bytes a, Bytes b) { return Bytes{checkedAdd(a.value, b.value, "bytes")}; }
    friend Bytes operator-(Bytes a, Bytes b);
    friend Bytes operator*(Bytes a, std::uint64_t n) { return Bytes{checkedMul(a.value, n, "bytes")}; }
    friend Bytes operator*(std::uint64_t n, Bytes a) { return a * n; }
    Bytes& operator+=(Bytes o) { return *this = *this + o; }
};

/// max(a - b, 0).
constexpr Bytes saturatingSub(Bytes a, Bytes b) { return Bytes{a.value > b.value ? a.value - b.value : 0}; }

/// A number of tokens (KV cache cells, context length, prompt length).
struct Tokens {
    std::uint64_t value = 0;

    constexpr Tokens() = default;
    constexpr explicit Tokens(std::uint64_t v) : value(v) {}
    friend constexpr auto operator<=>(Tokens, Tokens) = default;
};

inline constexpr std::uint64_t kKiB = 1024ull;
inline constexpr std::uint64_t kMiB = 1024ull * 1024;
inline constexpr std::uint64_t kGiB = 1024ull * 1024 * 1024;
inline constexpr std::uint64_t kGB = 1000ull * 1000 * 1000;
inline constexpr std::uint64_t kMB = 1000ull * 1000;

/// Parses a size: a number (integer or decimal) and an optional unit B, KB, MB, GB, TB (powers of
/// 1000) or KiB, MiB, GiB, TiB (powers of 1024), case-insensitive for the letters except that
/// "b" alone is bytes. "8GiB" = 8,589,934,592 B; "24GB" = 24,000,000,000 B; "0.5GiB" = 536,870,912 B.
/// A fraction of a byte is rounded down. Returns nullopt for anything else, negative numbers
/// and values past 2^64.
std::optional<Bytes> parseSize(std::string_view text);

/// Parses a parameter count: "7e9", "7000000000", "7B", "0.5B", "125M", "1.5T", "13b".
std::optional<std::uint64_t> parseCount(std::string_view text);

/// ASCII lower case ("Q4_K" -> "q4_k"), for case-insensitive ids.
std::string asciiLower(std::string_view text);

/// Binary units with two decimals: "12.00 GiB", "768.00 MiB", "512 B".
std::string formatBytes(Bytes b);
/// Decimal units with two decimals: "8.59 GB".
std::string formatBytesDecimal(Bytes b);
/// @p value with @p decimals decimals (clamped to 0..9), and with @p sign a "+" before a positive
/// value. A value that rounds to zero prints as zero without a sign: "0.00", never "-0.00" or
/// "+0.00" (the one place every face formats a fixed-point figure).
std::string formatFixed(double value, int decimals, bool sign = false);
/// Thousands separators: 3,624,960.
std::string formatThousands(std::uint64_t n);
/// Parameter count with a suffix: "6.74B", "494.03M".
std::string formatCount(std::uint64_t n);

} // namespace headroom
