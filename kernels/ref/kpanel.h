#pragma once
// Internal: the 8-row panels of q4_K and q6_K (cpukpanel.cpp).
//
// RowPacking::Interleaved8 for q4_K / q6_K: each group of 8 rows becomes K / 256 panel blocks of
// 8 x 144 / 8 x 210 bytes (the same bytes as the 8 rows, as ggml's block_q4_Kx8 is 8 block_q4_K),
// laid out so that one AVX2 register holds 4 codes of each of the 8 rows (an int32 lane a row):
// the q4_K scales and minimums as 128 6-bit values in [j][r] order, the q6_K int8 scales as
// [group][r]. The N % 8 rows after the last whole group stay as stored.

#include "gemm8.h"

#include <cstdint>

namespace headroom::kernels::detail {

/// q4_K or q6_K.
bool isKQuant(formats::QuantType type);

/// True when gemvKPanels runs @p args: q4_K / q6_K in RowPacking::Interleaved8, AVX2, quantized
/// activations, at least one panel of 8 rows (any B).
bool kPanelsRun(const GemvArgs& args, bool quantizeActivations, bool useAvx2);

/// y rows [0, 8 floor(N / 8)) of y = x W^T (call only when kPanelsRun): x quantized once per call
/// to ggml's q8_K blocks (quantizeQ8_KActivations), each panel read once for all B rows, 8 rows'
/// integer sums per register (AVX-VNNI's vpdpbusd with @p allowVnni where the CPU has it, else
/// AVX2's maddubs + madd). @p xNat: fp32 x [B][K]. Returns the first row not computed.
std::uint32_t gemvKPanels(const GemvArgs& args, const float* xNat, unsigned threads, bool allowVnni);

/// packRows8 of a q4_K / q6_K matrix (K a multiple of 256). Errors: InvalidArgument.
Status packKRows8(formats::QuantType type, std::uint32_t rows, std::uint32_t cols, std::uint8_t* data);

/// Rows [8 g, 8 g + 8) of a packed q4_K / q6_K matrix (@p group: their 8 rowBytes bytes) written
/// back as stored into @p rows [8][rowBytes], bit for bit (the portable and exact paths).
void unpackKPanelGroup(formats::QuantType type, std::uint32_t cols, const std::uint8_t* group, std::uint8_t* rows);

} // namespace headroom::kernels::detail
