#pragma once
/// @file enginelog.h
/// Reads the start-up log of a serving engine (vLLM V0 and V1, SGLang, TGI, TensorRT-LLM,
/// llama.cpp / llama-server, Ollama and its llama.cpp runner) into what the engine measured on
/// the card: the engine and version the log implies, the card's total and free memory, the
/// settings it printed, and every measured term (weights, activation peak, non-torch memory,
/// CUDA graphs, KV budget, blocks, tokens, compute buffers per device).
///
/// The lines understood, per engine (each the engine's own format string, at the versions of
/// tests/data/engine-logs):
/// - vLLM V1 `gpu_worker.py` / `gpu_model_runner.py` / `kv_cache_utils.py`: "worker init memory
///   snapshot: ... free_memory=, total_memory=, non_torch_memory=", "worker requested memory:",
///   "Model loading took X GiB", "Estimated CUDA graph memory: X GiB", "Available KV cache memory:
///   X GiB", "GPU KV cache size: N tokens", "Maximum concurrency for L tokens per request: Xx",
///   "Graph capturing finished in S secs, took X GiB", "# GPU blocks: N"; V0 `worker.py` "Memory
///   profiling results" (one line of key=value, or the 0.6.5+ table), "Loading model weights took
///   X GB" (vLLM prints GiB as "GB": it divides by 2^30); "non-default args: {...}" and the
///   `vllm serve` command line for settings.
/// - SGLang `model_runner.py`: "Load weight begin/end. avail mem=X GB", "mem usage=X GB", "KV Cache
///   is allocated. #tokens: N, K size: X GB, V size: Y GB", "Memory pool end. avail mem=X GB",
///   "Capture cuda graph end. ... mem usage=X GB", "max_total_num_tokens=N, ..."; `server_args=
///   ServerArgs(...)` (SGLang's GB are 2^30 bytes: it divides by 1 << 30).
/// - TGI router: "Setting max batch total tokens to N", "Using default cuda graphs [...]".
/// - TensorRT-LLM: "Memory usage when calculating max tokens in paged kv cache: total: X GiB,
///   available: Y GiB", "Number of blocks in KV cache primary pool: N", "Using N tokens in paged KV
///   cache", "Allocate N bytes for k/v cache", "Number of tokens per block: N.", "TensorRT-LLM
///   version: V"; settings from `trtllm-build` and `examples/*/build.py` command lines (with
///   backslash continuation lines) and KV_CACHE_FREE_GPU_MEM_FRACTION=F.
/// - llama.cpp: "NAME model|KV|compute|output|RS buffer size = X MiB" per device, "KV self size",
///   "llama_kv_cache: size = X MiB (N cells, ...)", "n_ctx", "n_ctx_seq", "n_batch", "n_ubatch",
///   "n_seq_max", "using device CUDA0 (...) - N MiB free", "build: N", and `--fit`'s
///   "memory breakdown [MiB]" rows (total = free + (self = model + context + compute) + unaccounted;
///   terms device_total, device_free, device_self, breakdown_model|context|compute, unaccounted).
/// - Ollama `server.go` / `memory.go`: the offload line (memory.available, memory.required.full|
///   partial|kv, memory.weights.total, memory.graph.full|partial, layers.*), "starting llama
///   server" cmd flags, "(version V)"; its runner's lines are llama.cpp's.
///
/// Real logs are messy: timestamps, ANSI colours, rank prefixes of several processes interleaved
/// ("(Worker_TP1 pid=445)", "[... TP3]"), Windows line ends and truncated files are handled; a
/// line not understood is skipped. The log is untrusted input: at most EngineLogLimits bytes,
/// lines and bytes per line are read, numbers are bounded, and nothing throws.

#include "headroom/core/units.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// Bounds on an untrusted log.
struct EngineLogLimits {
    std::uint64_t maxBytes = 64ull << 20;  ///< larger input is refused (start-up logs are < 1 MiB)
    std::uint64_t maxLines = 1'000'000;    ///< lines past this are not read (a warning says so)
    std::uint64_t maxLineBytes = 16384;    ///< longer lines are cut (a warning says so)
    /// A pipe (standard input, `<(cmd)`, a FIFO) is read to its end; when no byte arrives for this
    /// long (a writer that never writes nor closes) the read stops with an error, never a hang.
    std::uint64_t pipeIdleTimeoutMs = 30000;
};

/// What a term measures.
enum class LogUnit { Bytes, Tokens, Blocks, Count, Ratio };

/// One figure the engine printed.
struct LogTerm {
    std::string name;      ///< "weights", "available_kv_cache", "kv_cache_tokens", "kv_buffer", ... (see the file comment)
    double value = 0;      ///< in bytes for LogUnit::Bytes (printed GiB/MiB/GB times 2^30/2^20), else as printed
    LogUnit unit = LogUnit::Count; ///< what value counts
    std::string device;    ///< llama.cpp buffer type ("CUDA0", "CUDA_Host"); empty otherwise
    std::string rank;      ///< the process prefix it came from ("Worker_TP1", "TP0"); empty when none
    std::size_t line = 0;  ///< 1-based line number
    std::string printed;   ///< the figure as printed ("58.11 GiB")
};

/// A parsed start-up log.
struct EngineLog {
    std::string engine;              ///< "vllm", "sglang", "tgi", "tensorrt-llm", "llama.cpp", "ollama"; empty when unknown
    std::string version;             ///< as printed ("0.19.0", "b2400"), or empty
    std::string generation;          ///< what the lines imply when no version is printed ("V1", "V0 (0.6.x)")
    /// The version whose rules the lines imply when none is printed, for the plan ("0.8": TensorRT-LLM's
    /// C++ runtime printed "Using N tokens in paged KV cache" up to 0.8; "0.13": its C++ runtime's
    /// later lines, the 0.x rules); empty when the lines imply none.
    std::string impliedVersion;
    std::optional<Bytes> cardTotalBytes; ///< the device total the engine printed
    std::optional<Bytes> cardFreeBytes;  ///< free memory before the engine loaded anything
    std::vector<std::string> devices;    ///< device names printed ("NVIDIA GeForce RTX 4090")
    std::map<std::string, std::string> settings; ///< the engine's own spelling ("max-model-len" -> "8192", "-c" -> "4096")
    std::vector<LogTerm> terms;          ///< every figure, in log order
    std::vector<std::size_t> understoodLines; ///< line numbers that gave a term or a setting
    std::size_t lineCount = 0;           ///< lines read
    std::vector<std::string> ranks;      ///< process prefixes seen, in order of appearance
    std::vector<std::string> warnings;   ///< cut lines, lines not read, values out of range

    /// The first term named @p name (of @p device when given), preferring rank 0 (no prefix,
    /// "TP0", "rank=0"); nullptr when absent.
    const LogTerm* find(std::string_view name, std::string_view device = {}) const;
    /// The value of find(name, device), if any.
    std::optional<double> value(std::string_view name, std::string_view device = {}) const;
    /// Sum of the values of @p name over devices (first occurrence per device): llama.cpp buffers.
    std::optional<double> sumOverDevices(std::string_view name) const;
    /// "This log is from vLLM 0.19.0; 8 of 10 lines were understood." (or "... an engine not recognised").
    std::string summary() const;
};

/// Why a log could not be read at all.
struct EngineLogError {
    std::string message; ///< what was expected and what was found
};

/// Display name of an engine id ("vllm" -> "vLLM").
std::string engineDisplayName(std::string_view engine);

/// Parses @p text (the whole log). Errors only when the input exceeds limits.maxBytes; a log with
/// nothing understood parses with an empty engine.
tl::expected<EngineLog, EngineLogError> parseEngineLog(std::string_view text, const EngineLogLimits& limits = {});

/// The text of the log file @p path, at most limits.maxBytes: a regular file opened once
/// (importers/regularfile.h), or a pipe (a FIFO, `headroom-cli log <(kubectl logs ...)`), read as
/// readEngineLogPipe reads it. A device, a socket or a folder is refused, never read. Errors name the file.
tl::expected<std::string, EngineLogError> readEngineLogFile(const std::filesystem::path& path, const EngineLogLimits& limits = {});

/// The text of the pipe @p fd (standard input, a FIFO) read to its end: at most limits.maxBytes
/// (one more byte is an error: "more than ... a start-up log needs"), and no more than
/// limits.pipeIdleTimeoutMs without a byte (a writer that neither writes nor closes: an error
/// naming @p name and the wait, never a hang). A FIFO without a writer waits for one as long.
tl::expected<std::string, EngineLogError> readEngineLogPipe(int fd, const std::string& name, const EngineLogLimits& limits = {});

/// The text of a log with ANSI escape sequences removed (CSI `ESC [ ... final` and OSC
/// `ESC ] ... BEL|ESC \`), for display and for the parser.
std::string stripAnsi(std::string_view line);

} // namespace headroom
