#pragma once
// HTML and PDF renderings of a Headroom capacity report (headroom_report_qt).
//
// Input: the report JSON text that headroom::buildReportJson() writes (core/report/report.h);
// it is validated against the report schema first. Both renderers draw the same document as
// the Markdown renderer of core (headroom::report::layoutReport), with charts as vectors:
// - HTML: one standalone file (inline CSS, charts as inline SVG); opens in any browser.
// - PDF: A4 portrait through QTextDocument + QPdfWriter, charts painted by QPainter into the PDF
//   (vector paths and text, not images), page numbers at the bottom.
// Files are written atomically (headroom::writeFileAtomically): a failure leaves no partial file
// and keeps an existing file as it was.
// Needs a QGuiApplication (fonts); headless, use QT_QPA_PLATFORM=offscreen (headroom-render sets it).

#include "headroom/core/report/reportdocument.h"

#include <QByteArray>
#include <QString>

#include <memory>
#include <string>

class QPagedPaintDevice;
class QTextDocument;

namespace headroom::report {

/// Writes the report @p reportJson as standalone HTML to @p path. On failure returns false and
/// sets @p error (when not null) to a message naming the problem (schema, path and reason).
bool renderReportHtml(const std::string& reportJson, const QString& path, QString* error);

/// Writes the report @p reportJson as an A4 PDF to @p path. Same errors as renderReportHtml.
bool renderReportPdf(const std::string& reportJson, const QString& path, QString* error);

/// The standalone HTML text of @p document (for previews and tests).
QString reportHtml(const Document& document);

/// @p document laid out on the pages of @p device as the PDF sets it (A4 at 300 dpi, 15 mm
/// margins; tables too wide for the page in parts that repeat their key columns): its paint
/// device and page size set, ready for pageCount(), for a check of every table cell's lines, or
/// for drawing page by page; no heading, table caption or table header row is left at the foot
/// of a page without what follows it (keepWithNext). The document owns its chart handler.
std::unique_ptr<QTextDocument> reportPrintDocument(const Document& document, QPagedPaintDevice& device);
/// Moves to the next page every heading, table caption (the paragraph right before a table) and
/// table header row whose following content starts on a later page, with the headings right
/// above it on the same page (QTextDocument has no keep-with-next): a page break before it. One
/// pass in document order, since a break only moves what comes after it. @p doc is paginated
/// (its pageSize set).
void keepWithNext(QTextDocument& doc);
/// The PDF bytes of @p document (reportPrintDocument on a QPdfWriter, a page number on each page).
QByteArray reportPdf(const Document& document);

/// @p document as a QTextDocument (the one the PDF prints), with the charts as vector objects;
/// for an in-app preview (QTextBrowser::setDocument) or a raster check (drawContents).
/// The returned document owns its chart handler.
std::unique_ptr<QTextDocument> reportTextDocument(const Document& document);

} // namespace headroom::report
