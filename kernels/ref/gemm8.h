#pragma once
// Internal: the 8-row panel GEMV/GEMM of the fast CPU kernels (cpugemm8.cpp).
//
// A panel is 8 weight rows x K columns in blocks of 32 columns; each panel block holds the 8
// rows' fp16 scales, then their codes in chunks of 8 bytes, chunk c from row c % 8 (ggml's
// block_q4_0x8 layout, RowPacking::Interleaved8 in types.h): 4-bit codes as signed nibbles
// (two's complement; q4_0's q + 8 XOR 8), 8-bit codes as int8. One AVX2 register then holds 8
// code bytes of 4 rows, and one pass over a block column yields the 8 rows' sums at once.

#include "headroom/kernels/cpukernels.h"

#include <cstdint>

namespace headroom::kernels::detail {

/// Rows per panel.
inline constexpr std::uint32_t kPanelRows = 8;

/// True when the panel kernels run @p args: AVX2 (@p useAvx2), quantized activations, at least
/// one panel of 8 rows, and q8_0 / q4_0 (any B; every B = 1 call on Interleaved8 rows), or int8 /
/// int4 codes whose scale territories are whole 32-column blocks with B >= 2 (B = 1 of those runs
/// the row kernels of cpukernels.cpp).
bool panelKernelsRun(const GemvArgs& args, bool quantizeActivations, bool useAvx2);

/// y rows [0, 8 floor(N / 8)) of y = x W^T for every batch row by the panel kernels (call only
/// when panelKernelsRun): activations quantized per 32 columns once (ggml's q8_0 activations for
/// q8_0 / q4_0, d unrounded for int8 / int4), each panel read or built once for the whole batch,
/// register tiles of 8 rows x 4 batch rows. @p xNat: fp32 x [B][K]. Returns the first row not
/// computed (the caller runs the N % 8 tail rows, which are as stored in every packing).
/// @p allowVnni: use AVX-VNNI's vpdpbusd where the CPU has it (CpuOptions::vnni).
/// @p allowAmx: rows and batches that amxKernelsRun takes go to gemvAmx (CpuOptions::amx).
std::uint32_t gemvPanels(const GemvArgs& args, const float* xNat, unsigned threads, bool allowVnni, bool allowAmx);

/// Fewest batch rows the AMX kernels take (below it the panels' register tiles are as fast).
inline constexpr std::uint32_t kAmxMinBatch = 4;

/// True when gemvAmx runs @p args: q8_0 / q4_0 (as stored or Interleaved8), B >= kAmxMinBatch, and
/// a CPU and kernel that grant AMX-INT8 with AVX-512 (cpuamx.cpp).
bool amxKernelsRun(const GemvArgs& args);

/// y rows [0, R) of y = x W^T on AMX tiles (call only when amxKernelsRun), R = N (as stored) or
/// 8 floor(N / 8) (Interleaved8: the tail rows are stored plain, for the caller): ggml's q8_0
/// activations (quantizeActivationBlock32), one TDPBSSD / TDPBUSD per 32-column block for 16
/// weight rows x 16 batch rows, the block's scales applied in fp32 as the panels apply them (the
/// same floats as gemvPanels). Returns R.
std::uint32_t gemvAmx(const GemvArgs& args, const float* xNat, unsigned threads);

/// ggml's q8_0 activations of one block of 32 (quantizeQ8_0Activations: d = max|x| / 127 rounded
/// to fp16 and returned, q = roundf(x / d)) into @p q [32], column order; AVX2 where built.
float quantizeActivationBlock32(const float* x, std::int8_t* q);

/// Rows [8 g, 8 g + 8) of a q8_0 / q4_0 matrix in RowPacking::Interleaved8 (@p group: their
/// 8 rowBytes bytes) written back as stored into @p rows [8][rowBytes] (the portable paths);
/// q4_K / q6_K go to unpackKPanelGroup (kpanel.h).
void unpackPanelGroup(formats::QuantType type, std::uint32_t cols, const std::uint8_t* group, std::uint8_t* rows);

} // namespace headroom::kernels::detail
