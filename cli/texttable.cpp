#include "texttable.h"

#include <algorithm>

namespace headroom::cli {

std::size_t displayWidth(const std::string& s)
{
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

void TextTable::addColumn(std::string header, Align align)
{
    m_headers.push_back(std::move(header));
    m_aligns.push_back(align);
}

void TextTable::addRow(std::vector<std::string> cells)
{
    cells.resize(m_headers.size());
    m_rows.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, const std::string& indent) const
{
    std::vector<std::size_t> widths(m_headers.size());
    for (std::size_t c = 0; c < m_headers.size(); ++c) {
        widths[c] = displayWidth(m_headers[c]);
        for (const auto& row : m_rows)
            widths[c] = std::max(widths[c], displayWidth(row[c]));
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text = indent;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(widths[c] - displayWidth(cells[c]), ' ');
            if (c > 0)
                text += "  ";
            text += m_aligns[c] == Align::Right ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
        }
        out << text << '\n';
    };
    line(m_headers);
    std::vector<std::string> rule;
    for (std::size_t w : widths)
        rule.emplace_back(w, '-');
    line(rule);
    for (const auto& row : m_rows)
        line(row);
}

} // namespace headroom::cli
