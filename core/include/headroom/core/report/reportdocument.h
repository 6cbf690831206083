#pragma once
/// @file reportdocument.h
/// A report laid out for people, independent of the output format: headed sections of
/// paragraphs, tables, code blocks and charts (as data). The Markdown renderer here and the
/// HTML/PDF renderers of app/report draw the same document, so every format says the same thing.
/// Also the Markdown and CSV renderers (Qt-free).

#include "headroom/core/report/report.h"

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace headroom::report {

/// How a table cell reads.
enum class CellStatus {
    Plain, ///< no judgement
    Pass,  ///< fits / probe passed (green in HTML/PDF, "yes" in text)
    Less,  ///< fits with less than asked, or partially offloaded (yellow); the cell names the limit
    Fail,  ///< does not fit / probe failed (red)
};

/// A table: header, rows of text cells; numeric columns are right-aligned.
struct Table {
    std::string caption;                          ///< one line above the table; may be empty
    std::vector<std::string> header;              ///< column titles
    std::vector<bool> numeric;                    ///< per column: right-align
    std::vector<std::vector<std::string>> rows;   ///< [row][column] display text ("12.00 GiB")
    std::vector<std::vector<CellStatus>> status;  ///< [row][column]; empty or same shape as rows
    /// The leading columns that name a row (model, format, size): a renderer that splits a table
    /// too wide for its page into parts repeats them in every part; 0: never split.
    std::size_t keyColumns = 0;
};

/// One line of a line chart: points (x[i], y[i]).
struct Series {
    std::string name;          ///< legend text
    std::vector<double> x;     ///< x values (users: 1, 2, 4, ...)
    std::vector<double> y;     ///< y values, same length
};

/// A chart as data; the renderers draw it as vectors.
struct Chart {
    /// What is drawn.
    enum class Kind {
        Lines,        ///< one polyline with markers per series over x/y axes (log2 or linear)
        StackedBars,  ///< one horizontal bar per category, split into segments
    };
    Kind kind = Kind::Lines;
    std::string title;                             ///< above the plot
    std::string xLabel;                            ///< axis title, with its unit
    std::string yLabel;                            ///< axis title, with its unit
    bool logX = false;                             ///< Lines: log2 x axis
    bool logY = false;                             ///< Lines: log2 y axis
    std::vector<Series> series;                    ///< Lines
    std::vector<std::string> categories;           ///< StackedBars: bar labels, top to bottom
    std::vector<std::string> segmentNames;         ///< StackedBars: legend, left to right
    std::vector<std::vector<double>> segments;     ///< StackedBars: [category][segment] value in the x unit
    std::vector<std::string> barLabels;            ///< StackedBars: text after each bar ("23.64 GiB card")
};

/// A piece of a section.
struct Block {
    /// Which member is set.
    enum class Kind { Paragraph, Table, Code, Chart };
    Kind kind = Kind::Paragraph;
    std::string text;    ///< Paragraph, Code (a shell command)
    Table table;         ///< Table
    Chart chart;         ///< Chart
};

/// A headed section.
struct Section {
    std::string heading;         ///< "What fits"
    int level = 2;               ///< 2 section, 3 subsection
    std::vector<Block> blocks;
};

/// The whole report for people.
struct Document {
    std::string title;                 ///< "Capacity report"
    std::string subtitle;              ///< "llama-3.1-8b int4-g128 on rtx-4060, rtx-4090 under vLLM"
    std::string meta;                  ///< "Headroom 0.1.0 · 2025-11-29T16:04:00Z · report schema 1"
    std::vector<Section> sections;
};

/// Lays out @p reportJson (as written by buildReportJson; validated first). Errors: not JSON, not
/// matching the schema.
tl::expected<Document, ReportError> layoutReport(const std::string& reportJson);

/// GitHub-flavoured Markdown: headings, pipe tables (numeric columns right-aligned), fenced
/// shell blocks for the launch commands. Charts are left out: their data is in the tables.
std::string renderMarkdown(const Document& document);

/// The report as Markdown (layoutReport + renderMarkdown).
tl::expected<std::string, ReportError> renderReportMarkdown(const std::string& reportJson);

/// The report as CSV (RFC 4180, comma, CRLF-free "\n" lines, header row): one row per plan with
/// the inputs, the bill in bytes, the capacity in tokens and the launch point. Bytes and tokens
/// are plain integers so that spreadsheets sort them.
tl::expected<std::string, ReportError> renderReportCsv(const std::string& reportJson);

} // namespace headroom::report
