#pragma once
// The engine-log parser's internals (not public API): number scanning and the per-engine line
// readers, one file per engine (vllmlog.cpp, sglanglog.cpp, tgilog.cpp, tensorrtllmlog.cpp,
// llamacpplog.cpp, ollamalog.cpp).

#include "headroom/core/enginelog/enginelog.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace headroom::enginelog {

/// A number read from a line: its value (bytes for sizes), where it ended, and the text.
struct Scanned {
    double value = 0;
    std::size_t end = 0;
    std::string printed;
};

/// The number at @p pos (skipping spaces, '=', ':' and quotes; "476,016" is one number).
std::optional<Scanned> scanNumber(std::string_view s, std::size_t pos);
/// The number after the first @p key.
std::optional<Scanned> numberAfter(std::string_view s, std::string_view key);
/// The size ("58.11 GiB", "14.9888 GB", "1536.00 MiB") at @p pos, in bytes.
std::optional<Scanned> sizeAt(std::string_view s, std::size_t pos);
/// The size after the first @p key, in bytes.
std::optional<Scanned> sizeAfter(std::string_view s, std::string_view key);
/// @p n as a whole count of bytes or tokens: nullopt when absent, negative, not finite or above 2^60
/// (a log is untrusted: "-8,192 tokens" must not become 18446744073709543424).
std::optional<std::uint64_t> wholeNumber(const std::optional<Scanned>& n);
/// The word after the first @p key (up to a space, ',', ')', ']' or a quote).
std::string wordAfter(std::string_view s, std::string_view key);

/// Collects what the readers find in one log.
class Parser {
public:
    /// Reads one normalised line (no ANSI, no CR, rank prefix removed into @p rank).
    void feed(std::string_view line, const std::string& rank);
    /// Decides the engine and version and returns the log.
    EngineLog finish();

    EngineLog& log() { return m_log; }
    std::size_t lineNo() const { return m_lineNo; }

    /// Adds a term of this line.
    void term(const std::string& name, double value, LogUnit unit, const std::string& printed, const std::string& device = {});
    /// Adds a size term (bytes) when @p s holds one.
    void bytes(const std::string& name, const std::optional<Scanned>& s, const std::string& device = {});
    /// Adds a count term when @p s holds one.
    void count(const std::string& name, const std::optional<Scanned>& s, LogUnit unit = LogUnit::Count);
    /// Records a setting in the engine's own spelling (the first printing wins).
    void setting(const std::string& key, const std::string& value);
    /// Marks this line understood.
    void understood();
    /// Evidence that the log is @p engine's.
    void vote(const char* engine, int weight = 1);
    /// The version printed by @p engine.
    void version(const std::string& v, const char* engine);
    /// What the lines imply about the engine's generation ("V1").
    void generation(const std::string& g) { if (m_log.generation.empty()) m_log.generation = g; }

    /// True while the lines continue a command line that ended with a backslash.
    bool commandContinues = false;

private:
    EngineLog m_log;
    std::size_t m_lineNo = 0;
    std::string m_rank;
    std::map<std::string, int> m_votes;
    std::string m_versionEngine;
};

void readVllmLine(Parser& p, std::string_view line);
void readSglangLine(Parser& p, std::string_view line);
void readTgiLine(Parser& p, std::string_view line);
void readTensorRtLlmLine(Parser& p, std::string_view line);
void readLlamaCppLine(Parser& p, std::string_view line);
void readOllamaLine(Parser& p, std::string_view line);

/// Settings from a command line: every "--flag value" (and "-f value") pair after @p from.
void readCommandLineFlags(Parser& p, std::string_view line, std::size_t from);
/// Settings from "key=value, key=value" or Python dict text ("'key': value"), keys with '_'
/// spelled '-' as the engine's command line spells them.
void readKeyValues(Parser& p, std::string_view text);

} // namespace headroom::enginelog
