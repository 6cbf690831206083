#include "headroom/core/resolve.h"
#include "headroom/core/units.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("sizes parse in binary and decimal units without confusing them", "[units]")
{
    CHECK(parseSize("8GiB")->value == 8'589'934'592ull);
    CHECK(parseSize("24GB")->value == 24'000'000'000ull);
    CHECK(parseSize("16384MiB")->value == 17'179'869'184ull);
    CHECK(parseSize("16384 MiB")->value == 16384ull * 1024 * 1024);
    CHECK(parseSize("0.5GiB")->value == 536'870'912ull);
    CHECK(parseSize("1.5gib")->value == 1'610'612'736ull);
    CHECK(parseSize("4096")->value == 4096ull);
    CHECK(parseSize("12KB")->value == 12'000ull);
    CHECK_FALSE(parseSize("8 parsecs"));
    CHECK_FALSE(parseSize("-1GiB"));
    CHECK_FALSE(parseSize(""));
    CHECK_FALSE(parseSize("GiB"));
    CHECK_FALSE(parseSize("99999999999TiB")); // past 2^64
}

TEST_CASE("a text that is not a size says why: negative, overflowing or not a size", "[units]")
{
    CHECK(sizeProblem("8GiB").empty());
    CHECK(sizeProblem("1,5GiB").empty());
    CHECK(sizeProblem("-1GiB") == "a size cannot be negative");
    CHECK(sizeProblem("-2GB") == "a size cannot be negative");
    CHECK(sizeProblem("16777216TiB") == "more than 2^64 bytes (16 EiB)"); // 2^24 x 2^40
    CHECK(sizeProblem("16777215TiB").empty());
    CHECK(sizeProblem("99999999999999999999") == "more than 2^64 bytes (16 EiB)");
    CHECK(sizeProblem("1.2.3GiB") == "expected a size such as 8GiB, 24GB or 16384MiB");
    CHECK(sizeProblem("8 bananas") == "expected a size such as 8GiB, 24GB or 16384MiB");
    CHECK(sizeProblem("GiB") == "expected a size such as 8GiB, 24GB or 16384MiB");
}

TEST_CASE("parameter counts parse as plain numbers, exponents and suffixes", "[units]")
{
    CHECK(*parseCount("7e9") == 7'000'000'000ull);
    CHECK(*parseCount("7B") == 7'000'000'000ull);
    CHECK(*parseCount("13b") == 13'000'000'000ull);
    CHECK(*parseCount("0.5B") == 500'000'000ull);
    CHECK(*parseCount("125M") == 125'000'000ull);
    CHECK(*parseCount("494032768") == 494'032'768ull);
    CHECK_FALSE(parseCount("seven"));
    CHECK_FALSE(parseCount("7GiB"));
}

TEST_CASE("sizes print both ways", "[units]")
{
    CHECK(formatBytes(Bytes{768ull * kMiB}) == "768.00 MiB");
    CHECK(formatBytes(Bytes{512}) == "512 B");
    CHECK(formatBytes(Bytes{8 * kGiB}) == "8.00 GiB");
    CHECK(formatBytesDecimal(Bytes{8 * kGiB}) == "8.59 GB");
    CHECK(formatThousands(3'624'960) == "3,624,960");
    CHECK(formatThousands(12) == "12");
    CHECK(formatCount(6'738'415'616ull) == "6.74B");
}

TEST_CASE("fixed-point figures never print a negative zero", "[units]")
{
    CHECK(formatFixed(1.234, 2) == "1.23");
    CHECK(formatFixed(-0.001, 2) == "0.00"); // printf alone gives "-0.00" (the Log panel's plan - log)
    CHECK(formatFixed(-0.0, 1) == "0.0");
    CHECK(formatFixed(-0.004, 2, true) == "0.00");
    CHECK(formatFixed(0.0, 2, true) == "0.00");
    CHECK(formatFixed(0.5, 2, true) == "+0.50");
    CHECK(formatFixed(-0.02, 2, true) == "-0.02");
    CHECK(formatFixed(-12.5, 0) == "-12");
    CHECK(formatFixed(2.0, 0) == "2");
}

TEST_CASE("arithmetic is checked for overflow", "[units]")
{
    CHECK_THROWS_AS(checkedMul(1ull << 40, 1ull << 40), OverflowError);
    CHECK_THROWS_AS(Bytes{~0ull} + Bytes{1}, OverflowError);
    CHECK_THROWS_AS(Bytes{1} - Bytes{2}, OverflowError);
    CHECK(saturatingSub(Bytes{1}, Bytes{2}).value == 0);
    CHECK(roundUp(17, 16) == 32);
    CHECK(ceilDiv(0, 16) == 0);
}
