// The engine-log Parser: feeding lines to every engine's reader, then deciding the engine.
#include "enginelogshared.h"

#include <algorithm>

namespace headroom::enginelog {

void Parser::feed(std::string_view line, const std::string& rank)
{
    ++m_lineNo;
    ++m_log.lineCount;
    m_rank = rank;
    if (!rank.empty() && m_log.ranks.size() < 256 && std::find(m_log.ranks.begin(), m_log.ranks.end(), rank) == m_log.ranks.end())
        m_log.ranks.push_back(rank);
    readVllmLine(*this, line);
    readSglangLine(*this, line);
    readTgiLine(*this, line);
    readTensorRtLlmLine(*this, line);
    readLlamaCppLine(*this, line);
    readOllamaLine(*this, line);
}

EngineLog Parser::finish()
{
    std::string best;
    int most = 0;
    for (const auto& [engine, n] : m_votes)
        if (n > most) {
            most = n;
            best = engine;
        }
    // Ollama runs llama.cpp: its runner's lines vote llama.cpp, its own lines make it Ollama.
    if (m_votes.count("ollama") && m_votes["ollama"] > 0)
        best = "ollama";
    m_log.engine = best;
    if (!m_log.version.empty() && m_versionEngine != best && !(best == "ollama" && m_versionEngine == "llama.cpp"))
        m_log.version.clear();
    if (best == "ollama" && m_versionEngine == "llama.cpp")
        m_log.version.clear(); // the runner's llama.cpp build is not Ollama's version
    if (m_log.lineCount > 0 && m_log.understoodLines.empty())
        m_log.warnings.push_back("no line of a known engine's start-up was understood");
    return std::move(m_log);
}

void readCommandLineFlags(Parser& p, std::string_view line, std::size_t from)
{
    std::size_t i = from;
    auto next = [&](std::size_t& pos) -> std::string_view {
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\\' || line[pos] == '\t'))
            ++pos;
        const std::size_t b = pos;
        while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t')
            ++pos;
        return line.substr(b, pos - b);
    };
    std::string_view flag = next(i);
    int guard = 0;
    while (!flag.empty() && ++guard < 256) {
        if (flag.size() > 1 && flag[0] == '-' && !std::isdigit(static_cast<unsigned char>(flag[1]))) {
            std::size_t j = i;
            std::string_view value = next(j);
            std::string key(flag.starts_with("--") ? flag.substr(2) : flag);
            if (const auto eq = key.find('='); eq != std::string::npos) {
                p.setting(key.substr(0, eq), key.substr(eq + 1));
            } else if (value.empty() || (value[0] == '-' && value.size() > 1 && !std::isdigit(static_cast<unsigned char>(value[1])))) {
                p.setting(key, "true");
            } else {
                p.setting(key, std::string(value));
                i = j;
            }
        }
        flag = next(i);
    }
}

void readKeyValues(Parser& p, std::string_view text)
{
    std::size_t i = 0;
    int guard = 0;
    while (i < text.size() && ++guard < 1024) {
        // key: letters, digits, '_' (optionally quoted), then '=' or "': "
        while (i < text.size() && !(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_'))
            ++i;
        const std::size_t kb = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
            ++i;
        std::string key(text.substr(kb, i - kb));
        std::size_t j = i;
        if (j < text.size() && text[j] == '\'')
            ++j;
        if (j < text.size() && (text[j] == '=' || text[j] == ':')) {
            ++j;
            while (j < text.size() && text[j] == ' ')
                ++j;
            std::size_t vb = j;
            std::string value;
            if (j < text.size() && (text[j] == '\'' || text[j] == '"')) {
                const char q = text[j];
                const auto close = text.find(q, j + 1);
                if (close == std::string_view::npos)
                    break;
                value = std::string(text.substr(j + 1, close - j - 1));
                j = close + 1;
            } else {
                while (j < text.size() && text[j] != ',' && text[j] != ')' && text[j] != '}' && text[j] != ' ')
                    ++j;
                value = std::string(text.substr(vb, j - vb));
            }
            std::replace(key.begin(), key.end(), '_', '-');
            if (!key.empty() && value != "None" && value != "null")
                p.setting(key, value);
            i = j;
        }
    }
}

} // namespace headroom::enginelog
