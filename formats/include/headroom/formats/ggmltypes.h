#pragma once
/// @file ggmltypes.h
/// The GGML tensor types of GGUF files: block size (elements per block) and type size (bytes per
/// block), so that any tensor of a GGUF file is sized exactly without reading its data.
///
/// Source: ggml `src/ggml.c` `type_traits[]` (`.blck_size`, `.type_size`) and the `block_*`
/// structs of `src/ggml-common.h` at ggml commit d99724f2 (2026-08-21); the same table is in
/// llama.cpp `gguf-py/gguf/constants.py` (`GGML_QUANT_SIZES`). See shared/reference/ggml-types.md.
/// Removed ids (4, 5, 31-33, 36-38) and ids past the table have block size 0: "cannot size".

#include <cstdint>

namespace headroom::formats {

/// One row of the GGML type table.
struct GgmlType {
    std::uint32_t id;          ///< value of `enum ggml_type` as stored in a GGUF tensor info
    const char* name;          ///< `type_traits[id].type_name` ("q4_K"); nullptr for removed ids
    std::uint32_t blockSize;   ///< elements per block; 0 = removed or unknown (cannot size)
    std::uint32_t typeSize;    ///< bytes per block
    bool quantized;            ///< true for block-quantized types
};

/// Every id of `enum ggml_type` up to GGML_TYPE_COUNT = 43 (ggml d99724f2).
inline constexpr GgmlType kGgmlTypes[] = {
    {0, "f32", 1, 4, false},        {1, "f16", 1, 2, false},
    {2, "q4_0", 32, 18, true},      {3, "q4_1", 32, 20, true},
    {4, nullptr, 0, 0, false},      {5, nullptr, 0, 0, false},
    {6, "q5_0", 32, 22, true},      {7, "q5_1", 32, 24, true},
    {8, "q8_0", 32, 34, true},      {9, "q8_1", 32, 36, true},
    {10, "q2_K", 256, 84, true},    {11, "q3_K", 256, 110, true},
    {12, "q4_K", 256, 144, true},   {13, "q5_K", 256, 176, true},
    {14, "q6_K", 256, 210, true},   {15, "q8_K", 256, 292, true},
    {16, "iq2_xxs", 256, 66, true}, {17, "iq2_xs", 256, 74, true},
    {18, "iq3_xxs", 256, 98, true}, {19, "iq1_s", 256, 50, true},
    {20, "iq4_nl", 32, 18, true},   {21, "iq3_s", 256, 110, true},
    {22, "iq2_s", 256, 82, true},   {23, "iq4_xs", 256, 136, true},
    {24, "i8", 1, 1, false},        {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},       {27, "i64", 1, 8, false},
    {28, "f64", 1, 8, false},       {29, "iq1_m", 256, 56, true},
    {30, "bf16", 1, 2, false},      {31, nullptr, 0, 0, false},
    {32, nullptr, 0, 0, false},     {33, nullptr, 0, 0, false},
    {34, "tq1_0", 256, 54, true},   {35, "tq2_0", 256, 66, true},
    {36, nullptr, 0, 0, false},     {37, nullptr, 0, 0, false},
    {38, nullptr, 0, 0, false},     {39, "mxfp4", 32, 17, true},
    {40, "nvfp4", 64, 36, true},    {41, "q1_0", 128, 18, true},
    {42, "q2_0", 64, 18, true},
};

/// GGML_TYPE_COUNT at ggml d99724f2.
inline constexpr std::uint32_t kGgmlTypeCount = sizeof(kGgmlTypes) / sizeof(kGgmlTypes[0]);
static_assert(kGgmlTypeCount == 43, "GGML_TYPE_COUNT is 43 at ggml d99724f2");

/// The table row for @p id, or nullptr when the id is past the table (unknown to this version).
constexpr const GgmlType* ggmlType(std::uint32_t id) {
    return id < kGgmlTypeCount ? &kGgmlTypes[id] : nullptr;
}

/// True when a tensor of type @p id can be sized (known id with a non-zero block size).
constexpr bool ggmlTypeSizable(std::uint32_t id) {
    const GgmlType* t = ggmlType(id);
    return t != nullptr && t->blockSize != 0;
}

// Pin the block layouts the kernels and importers rely on (ggml-common.h static_asserts).
static_assert(kGgmlTypes[2].typeSize == 2 + 16, "block_q4_0: fp16 d + 16 nibble bytes");
static_assert(kGgmlTypes[8].typeSize == 2 + 32, "block_q8_0: fp16 d + 32 int8");
static_assert(kGgmlTypes[12].typeSize == 2 * 2 + 12 + 128, "block_q4_K: d, dmin + 12 scale bytes + 128");
static_assert(kGgmlTypes[14].typeSize == 128 + 64 + 16 + 2, "block_q6_K: ql + qh + scales + d");
static_assert(kGgmlTypes[23].typeSize == 2 + 2 + 4 + 128, "block_iq4_xs");

} // namespace headroom::formats
