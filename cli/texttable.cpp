#include "texttable.h"

#include <algorithm>
#include <sstream>

namespace headroom::cli {

std::size_t displayWidth(const std::string& s)
{
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::vector<std::string> wrapText(const std::string& text, std::size_t width)
{
    if (width == 0 || displayWidth(text) <= width)
        return {text};
    std::vector<std::string> lines{""};
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        std::string& line = lines.back();
        if (line.empty())
            line = word;
        else if (displayWidth(line) + 1 + displayWidth(word) <= width)
            line += " " + word;
        else
            lines.push_back(word);
    }
    return lines;
}

void TextTable::addColumn(std::string header, Align align)
{
    m_headers.push_back(std::move(header));
    m_aligns.push_back(align);
    m_wrap.push_back(0);
}

void TextTable::setWrap(std::size_t column, std::size_t chars)
{
    if (column < m_wrap.size())
        m_wrap[column] = chars;
}

void TextTable::addRow(std::vector<std::string> cells)
{
    cells.resize(m_headers.size());
    m_rows.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, const std::string& indent) const
{
    // Each row as its physical lines: a wrapped cell takes several.
    std::vector<std::vector<std::vector<std::string>>> rows; // [row][line][column]
    for (const auto& row : m_rows) {
        std::vector<std::vector<std::string>> lines(1, std::vector<std::string>(row.size()));
        for (std::size_t c = 0; c < row.size(); ++c) {
            const std::vector<std::string> parts = wrapText(row[c], m_wrap[c]);
            if (parts.size() > lines.size())
                lines.resize(parts.size(), std::vector<std::string>(row.size()));
            for (std::size_t l = 0; l < parts.size(); ++l)
                lines[l][c] = parts[l];
        }
        rows.push_back(std::move(lines));
    }
    std::vector<std::size_t> widths(m_headers.size());
    for (std::size_t c = 0; c < m_headers.size(); ++c) {
        widths[c] = displayWidth(m_headers[c]);
        for (const auto& row : rows)
            for (const auto& cells : row)
                widths[c] = std::max(widths[c], displayWidth(cells[c]));
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text = indent;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(widths[c] - displayWidth(cells[c]), ' ');
            if (c > 0)
                text += "  ";
            text += m_aligns[c] == Align::Right ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
        }
        text.erase(text.find_last_not_of(' ') + 1); // an empty last cell leaves no trailing blanks
        out << text << '\n';
    };
    line(m_headers);
    std::vector<std::string> rule;
    for (std::size_t w : widths)
        rule.emplace_back(w, '-');
    line(rule);
    for (const auto& row : rows)
        for (const auto& cells : row)
            line(cells);
}

} // namespace headroom::cli
