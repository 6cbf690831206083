// The engine start-up log parser (enginelog.h): line normalisation, number scanning, and the
// dispatch of each line to the engines' line readers (enginelines.cpp).
#include "headroom/core/enginelog/enginelog.h"

#include "headroom/core/importers/regularfile.h"

#include "enginelogshared.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headroom {

namespace enginelog {

std::optional<Scanned> scanNumber(std::string_view s, std::size_t pos)
{
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '=' || s[pos] == ':' || s[pos] == '"' ||
                              s[pos] == '\'' || s[pos] == '*'))
        ++pos;
    const std::size_t begin = pos;
    std::string digits;
    bool dot = false;
    if (pos < s.size() && (s[pos] == '-' || s[pos] == '+'))
        digits += s[pos++];
    while (pos < s.size() && digits.size() < 40) {
        const char c = s[pos];
        if (c >= '0' && c <= '9') {
            digits += c;
        } else if (c == '.' && !dot && pos + 1 < s.size() && s[pos + 1] >= '0' && s[pos + 1] <= '9') {
            digits += c;
            dot = true;
        } else if (c == ',' && pos + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[pos + 1])) &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 2])) && std::isdigit(static_cast<unsigned char>(s[pos + 3])) &&
                   !dot && digits.size() > 0) {
            // a thousands separator ("476,016"), never a list separator ("1, 2")
        } else {
            break;
        }
        ++pos;
    }
    if (digits.empty() || digits == "-" || digits == "+")
        return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(digits.c_str(), &end);
    if (!std::isfinite(v) || std::fabs(v) > 1e18)
        return std::nullopt;
    return Scanned{v, pos, std::string(s.substr(begin, pos - begin))};
}

std::optional<Scanned> numberAfter(std::string_view s, std::string_view key)
{
    const auto at = s.find(key);
    if (at == std::string_view::npos)
        return std::nullopt;
    return scanNumber(s, at + key.size());
}

std::optional<std::uint64_t> wholeNumber(const std::optional<Scanned>& n)
{
    constexpr double limit = 1152921504606846976.0; // 2^60
    if (!n || !std::isfinite(n->value) || n->value < 0 || n->value > limit)
        return std::nullopt;
    return static_cast<std::uint64_t>(n->value);
}

std::optional<Scanned> sizeAfter(std::string_view s, std::string_view key)
{
    const auto at = s.find(key);
    if (at == std::string_view::npos)
        return std::nullopt;
    return sizeAt(s, at + key.size());
}

std::optional<Scanned> sizeAt(std::string_view s, std::size_t pos)
{
    auto n = scanNumber(s, pos);
    if (!n)
        return std::nullopt;
    std::size_t p = n->end;
    while (p < s.size() && s[p] == ' ')
        ++p;
    // GB/MB as vLLM, SGLang and TensorRT-LLM print them are 2^30/2^20 bytes (they divide by 1 << 30).
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"GiB", 1073741824.0}, {"GB", 1073741824.0}, {"MiB", 1048576.0}, {"MB", 1048576.0},
        {"KiB", 1024.0},       {"kB", 1024.0},       {"KB", 1024.0},     {"B", 1.0}};
    for (const auto& [unit, scale] : kUnits) {
        if (s.substr(p, unit.size()) == unit) {
            Scanned out = *n;
            out.printed = std::string(s.substr(pos, p + unit.size() - pos));
            while (!out.printed.empty() && (out.printed.front() == ' ' || out.printed.front() == '=' || out.printed.front() == ':'))
                out.printed.erase(0, 1);
            out.value = n->value * scale;
            out.end = p + unit.size();
            return out;
        }
    }
    return std::nullopt;
}

std::string wordAfter(std::string_view s, std::string_view key)
{
    const auto at = s.find(key);
    if (at == std::string_view::npos)
        return {};
    std::size_t p = at + key.size();
    while (p < s.size() && (s[p] == ' ' || s[p] == '='))
        ++p;
    std::size_t e = p;
    while (e < s.size() && s[e] != ' ' && s[e] != ',' && s[e] != ')' && s[e] != ']' && s[e] != '"' && s[e] != '\'' && e - p < 64)
        ++e;
    return std::string(s.substr(p, e - p));
}

void Parser::term(const std::string& name, double value, LogUnit unit, const std::string& printed, const std::string& device)
{
    LogTerm t;
    t.name = name;
    t.value = value;
    t.unit = unit;
    t.device = device;
    t.rank = m_rank;
    t.line = m_lineNo;
    t.printed = printed;
    m_log.terms.push_back(std::move(t));
    understood();
}

void Parser::bytes(const std::string& name, const std::optional<Scanned>& s, const std::string& device)
{
    if (s && s->value >= 0)
        term(name, s->value, LogUnit::Bytes, s->printed, device);
}

void Parser::count(const std::string& name, const std::optional<Scanned>& s, LogUnit unit)
{
    if (s && s->value >= 0)
        term(name, s->value, unit, s->printed);
}

void Parser::setting(const std::string& key, const std::string& value)
{
    if (key.empty() || value.empty() || key.size() > 64 || value.size() > 256 || m_log.settings.size() > 512)
        return;
    m_log.settings.emplace(key, value); // the first printing wins (rank 0 comes first)
    understood();
}

void Parser::understood()
{
    if (m_log.understoodLines.empty() || m_log.understoodLines.back() != m_lineNo)
        m_log.understoodLines.push_back(m_lineNo);
}

void Parser::vote(const char* engine, int weight)
{
    m_votes[engine] += weight;
}

void Parser::version(const std::string& v, const char* engine)
{
    if (!v.empty() && m_log.version.empty() && v.size() < 40) {
        m_log.version = v;
        m_versionEngine = engine;
        understood();
    }
}

namespace {

/// The length of a timestamp that a log collector put before the engine's own line (docker logs
/// -t / kubectl logs --timestamps "2026-04-22T00:03:35.546810851Z ", Docker Desktop's
/// "2025-02-04 21:21:33 "): YYYY-MM-DD, 'T' or ' ', hh:mm:ss, optional fraction and zone, a space;
/// 0 when the line does not start with one.
std::size_t collectorTimestamp(std::string_view l)
{
    const auto digits = [&](std::size_t at, std::size_t n) {
        if (at + n > l.size())
            return false;
        for (std::size_t i = at; i < at + n; ++i)
            if (!std::isdigit(static_cast<unsigned char>(l[i])))
                return false;
        return true;
    };
    if (!(digits(0, 4) && l[4] == '-' && digits(5, 2) && l[7] == '-' && digits(8, 2) && l.size() > 19 && (l[10] == 'T' || l[10] == ' ') &&
          digits(11, 2) && l[13] == ':' && digits(14, 2) && l[16] == ':' && digits(17, 2)))
        return 0;
    std::size_t p = 19;
    if (p < l.size() && (l[p] == '.' || l[p] == ','))
        for (++p; p < l.size() && std::isdigit(static_cast<unsigned char>(l[p]));)
            ++p;
    if (p < l.size() && l[p] == 'Z')
        ++p;
    else if (p + 5 < l.size() && (l[p] == '+' || l[p] == '-') && digits(p + 1, 2))
        p += l[p + 3] == ':' ? 6 : 5;
    return p < l.size() && l[p] == ' ' ? p + 1 : 0;
}

/// "(Worker_TP1 pid=445) ", "(VllmWorker rank=1 pid=..) ", "[2025-03-08 12:29:13 TP0] " -> the rank
/// name; the line is left after the prefix (and after a collector's timestamp before it).
std::string takeRank(std::string_view& line)
{
    line.remove_prefix(collectorTimestamp(line));
    std::size_t p = 0;
    while (p < line.size() && line[p] == ' ')
        ++p;
    if (p < line.size() && line[p] == '(') {
        const auto close = line.find(')', p);
        const auto pid = line.find(" pid=", p);
        if (close != std::string_view::npos && pid != std::string_view::npos && pid < close && close - p < 120) {
            std::string name(line.substr(p + 1, pid - p - 1));
            const auto rank = line.substr(pid, close - pid).find("rank=");
            if (rank != std::string_view::npos)
                name += " " + std::string(line.substr(pid + rank, close - pid - rank));
            line.remove_prefix(close + 1);
            return name;
        }
    }
    if (p < line.size() && line[p] == '[') {
        const auto close = line.find(']', p);
        if (close != std::string_view::npos && close - p < 80) {
            // SGLang: "[2025-03-08 12:29:13 DP0 TP1]": the rank words after the timestamp.
            const std::string_view inside = line.substr(p + 1, close - p - 1);
            std::string rank;
            std::size_t end = inside.size();
            while (end > 0) {
                const auto sp = inside.rfind(' ', end - 1);
                const std::size_t from = sp == std::string_view::npos ? 0 : sp + 1;
                const std::string_view word = inside.substr(from, end - from);
                const bool isRank = word.size() >= 3 && std::isdigit(static_cast<unsigned char>(word[2])) &&
                                    (word.starts_with("TP") || word.starts_with("DP") || word.starts_with("PP") || word.starts_with("EP"));
                if (!isRank)
                    break;
                rank = rank.empty() ? std::string(word) : std::string(word) + " " + rank;
                if (sp == std::string_view::npos)
                    break;
                end = sp;
            }
            if (!rank.empty()) {
                line.remove_prefix(close + 1);
                return rank;
            }
        }
    }
    return {};
}

/// True for the first rank (or no rank): every number after "TP", "DP", "PP", "EP" or "rank=" is 0.
bool isRankZero(const std::string& rank)
{
    for (std::size_t i = 0; i < rank.size(); ++i) {
        const bool tag = (i + 2 <= rank.size() && (rank.compare(i, 2, "TP") == 0 || rank.compare(i, 2, "DP") == 0 ||
                                                   rank.compare(i, 2, "PP") == 0 || rank.compare(i, 2, "EP") == 0));
        const bool eq = rank.compare(i, 5, "rank=") == 0;
        if (!tag && !eq)
            continue;
        std::size_t j = i + (eq ? 5 : 2);
        bool any = false;
        while (j < rank.size() && std::isdigit(static_cast<unsigned char>(rank[j]))) {
            any = true;
            if (rank[j] != '0')
                return false;
            ++j;
        }
        (void)any;
    }
    return true;
}

} // namespace

} // namespace enginelog

std::string stripAnsi(std::string_view line)
{
    std::string out;
    out.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == '\x1b' && i + 1 < line.size()) {
            if (line[i + 1] == '[') { // CSI: parameters, then one final byte in @..~
                std::size_t j = i + 2;
                while (j < line.size() && !(line[j] >= '@' && line[j] <= '~'))
                    ++j;
                i = j;
                continue;
            }
            if (line[i + 1] == ']') { // OSC: up to BEL or ESC '\'
                std::size_t j = i + 2;
                while (j < line.size() && line[j] != '\a' && !(line[j] == '\x1b' && j + 1 < line.size() && line[j + 1] == '\\'))
                    ++j;
                i = (j < line.size() && line[j] == '\x1b') ? j + 1 : j;
                continue;
            }
            ++i; // a two-byte escape
            continue;
        }
        if (c == '\r')
            continue;
        out += c;
    }
    return out;
}

std::string engineDisplayName(std::string_view engine)
{
    if (engine == "vllm")
        return "vLLM";
    if (engine == "sglang")
        return "SGLang";
    if (engine == "tgi")
        return "TGI";
    if (engine == "tensorrt-llm")
        return "TensorRT-LLM";
    if (engine == "llama.cpp")
        return "llama.cpp";
    if (engine == "ollama")
        return "Ollama";
    return std::string(engine);
}

const LogTerm* EngineLog::find(std::string_view name, std::string_view device) const
{
    const LogTerm* first = nullptr;
    for (const LogTerm& t : terms) {
        if (t.name != name || (!device.empty() && t.device != device))
            continue;
        if (enginelog::isRankZero(t.rank))
            return &t;
        if (!first)
            first = &t;
    }
    return first;
}

std::optional<double> EngineLog::value(std::string_view name, std::string_view device) const
{
    const LogTerm* t = find(name, device);
    return t ? std::optional<double>(t->value) : std::nullopt;
}

std::optional<double> EngineLog::sumOverDevices(std::string_view name) const
{
    std::set<std::string> seen;
    std::optional<double> sum;
    for (const LogTerm& t : terms) {
        if (t.name != name || !seen.insert(t.device).second)
            continue;
        sum = sum.value_or(0) + t.value;
    }
    return sum;
}

std::string EngineLog::summary() const
{
    std::string s = "This log is from ";
    if (engine.empty())
        s += "an engine not recognised";
    else
        s += engineDisplayName(engine) + (version.empty() ? std::string(" (version not printed") : " " + version) +
             (version.empty() ? (generation.empty() ? std::string(")") : "; the lines are " + generation + "'s)") : std::string());
    s += "; " + std::to_string(understoodLines.size()) + " of " + std::to_string(lineCount) + " lines were understood.";
    return s;
}

tl::expected<std::string, EngineLogError> readEngineLogPipe(int fd, const std::string& name, const EngineLogLimits& limits)
{
    // Non-blocking reads under poll(2): each wait is bounded, EOF is read() == 0.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    std::string text;
    char buf[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const int timeout = static_cast<int>(std::min<std::uint64_t>(limits.pipeIdleTimeoutMs, 24ull * 3600 * 1000));
        const int ready = ::poll(&p, 1, timeout);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            return tl::unexpected(EngineLogError{"cannot read " + name + ": " + std::strerror(errno)});
        if (ready == 0)
            return tl::unexpected(EngineLogError{
                name + ": no data for " + std::to_string(limits.pipeIdleTimeoutMs / 1000) + " s after " + std::to_string(text.size()) +
                " bytes, and the writer has not closed it: a pipe is read to its end (give the log as a file, or close the "
                "writer: `kubectl logs` without -f)"});
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n < 0)
            return tl::unexpected(EngineLogError{"cannot read " + name + ": " + std::strerror(errno)});
        if (n == 0)
            break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > limits.maxBytes)
            return tl::unexpected(EngineLogError{name + ": more than the " + std::to_string(limits.maxBytes) +
                                                 " bytes a start-up log needs: cut it to the start-up"});
    }
    if (flags >= 0)
        ::fcntl(fd, F_SETFL, flags);
    return text;
}

tl::expected<std::string, EngineLogError> readEngineLogFile(const std::filesystem::path& path, const EngineLogLimits& limits)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
        // A pipe: `log <(cmd)` (/dev/fd/N) or a FIFO. Opened without blocking (no writer yet is no
        // hang), then read to its end, bounded in size and in idle time.
        const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            return tl::unexpected(EngineLogError{"cannot read " + path.string() + ": " + std::strerror(errno)});
        struct stat opened {};
        if (::fstat(fd, &opened) != 0 || !S_ISFIFO(opened.st_mode)) {
            ::close(fd);
            return tl::unexpected(EngineLogError{"cannot read " + path.string() + ": it changed while it was opened"});
        }
        auto text = readEngineLogPipe(fd, path.string(), limits);
        ::close(fd);
        return text;
    }
    auto file = RegularFile::open(path);
    if (!file)
        return tl::unexpected(EngineLogError{"cannot read " + path.string() + ": " + file.error().message +
                                             (file.error().message.find("not a regular file") != std::string::npos
                                                  ? " (a log is read from a regular file or a pipe)"
                                                  : "")});
    if (file->sizeBytes() > limits.maxBytes)
        return tl::unexpected(EngineLogError{path.string() + ": " + std::to_string(file->sizeBytes()) + " bytes, more than the " +
                                             std::to_string(limits.maxBytes) + " a start-up log needs: cut it to the start-up"});
    auto text = file->readStringAt(0, file->sizeBytes());
    if (!text)
        return tl::unexpected(EngineLogError{"cannot read " + path.string() + ": " + text.error().message});
    return std::move(*text);
}

tl::expected<EngineLog, EngineLogError> parseEngineLog(std::string_view text, const EngineLogLimits& limits)
{
    if (text.size() > limits.maxBytes)
        return tl::unexpected(EngineLogError{"the log is " + std::to_string(text.size()) + " bytes, more than the " +
                                             std::to_string(limits.maxBytes) + " a start-up log needs: cut it to the start-up"});
    enginelog::Parser parser;
    std::size_t pos = 0;
    bool cut = false;
    while (pos < text.size()) {
        if (parser.log().lineCount >= limits.maxLines) {
            parser.log().warnings.push_back("only the first " + std::to_string(limits.maxLines) + " lines were read");
            break;
        }
        auto nl = text.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = text.size();
        std::string_view raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (raw.size() > limits.maxLineBytes) {
            raw = raw.substr(0, limits.maxLineBytes);
            cut = true;
        }
        const std::string clean = stripAnsi(raw);
        std::string_view line = clean;
        const std::string rank = enginelog::takeRank(line);
        parser.feed(line, rank);
    }
    if (cut)
        parser.log().warnings.push_back("lines longer than " + std::to_string(limits.maxLineBytes) + " bytes were cut");
    // A log cut off while it was written (a copy taken mid-start-up, a pasted screen) ends
    // mid-line; what the engine printed after it is missing.
    if (!text.empty() && text.back() != '\n' && parser.log().lineCount < limits.maxLines)
        parser.log().warnings.push_back("the log ends mid-line (line " + std::to_string(parser.log().lineCount) +
                                        " has no line end): it looks truncated, and what the engine printed after it is missing");
    return parser.finish();
}

} // namespace headroom
