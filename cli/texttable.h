#pragma once
// Aligned plain-text tables for the terminal: text columns left, numeric columns right.

#include <ostream>
#include <string>
#include <vector>

namespace headroom::cli {

class TextTable {
public:
    enum class Align { Left, Right };

    /// Adds a column with a header.
    void addColumn(std::string header, Align align = Align::Left);
    /// Wraps the cells of column @p column at spaces to lines of at most @p chars characters (a
    /// word longer than that stays whole); a row then takes as many lines as its tallest cell.
    void setWrap(std::size_t column, std::size_t chars);
    /// Adds a row; missing cells are empty.
    void addRow(std::vector<std::string> cells);
    /// Prints the header, a rule, and the rows, columns two spaces apart.
    void print(std::ostream& out, const std::string& indent = "") const;

private:
    std::vector<std::string> m_headers;
    std::vector<Align> m_aligns;
    std::vector<std::size_t> m_wrap; ///< per column: wrap width in characters, 0 for none
    std::vector<std::vector<std::string>> m_rows;
};

/// @p text in lines of at most @p width display characters, broken at spaces (a word longer
/// than that stays whole on its own line; 0: one line).
std::vector<std::string> wrapText(const std::string& text, std::size_t width);

/// Display width of UTF-8 text (counts code points).
std::size_t displayWidth(const std::string& s);

} // namespace headroom::cli
