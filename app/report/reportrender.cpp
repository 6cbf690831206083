#include "reportrender.h"

#include "chartpainter.h"

#include "headroom/core/atomicfile.h"

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QPageLayout>
#include <QPageSize>
#include <QPaintDevice>
#include <QPainter>
#include <QPagedPaintDevice>
#include <QPalette>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QTextCharFormat>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextObjectInterface>
#include <QTextTable>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace headroom::report {

namespace {

constexpr int kChartObjectType = QTextFormat::UserObject + 1;
// The PDF: A4 portrait at 300 dpi, 15 mm margins on every side.
constexpr double kPdfMarginMm = 15;
constexpr int kPdfDpi = 300;
constexpr int kChartIndexProperty = QTextFormat::UserProperty + 1;

QString q(const std::string& s) { return QString::fromStdString(s); }
QString esc(const std::string& s) { return q(s).toHtmlEscaped(); }

// A figure keeps its unit on its line: the space between a number and the unit after it
// ("14.96 GiB", "4 users", "12.5 ms") becomes a no-break space, in HTML and in the PDF alike.
QString keepFiguresWhole(QString text)
{
    static const QRegularExpression figure(QStringLiteral("(\\d) (?=(B|KiB|MiB|GiB|TiB|PiB|KB|MB|GB|TB|GB/s|ms|s|%|x|"
                                                          "tokens?|users?|layers?|bpw|tokens/s)(\\W|$))"));
    return text.replace(figure, QStringLiteral("\\1") + QChar(0x00A0));
}

// A cell's text for HTML: escaped, its figures whole.
QString cellHtml(const std::string& s) { return keepFiguresWhole(q(s)).toHtmlEscaped(); }

QString statusClass(const Table& t, std::size_t r, std::size_t c)
{
    if (r >= t.status.size() || c >= t.status[r].size())
        return {};
    switch (t.status[r][c]) {
    case CellStatus::Pass:
        return QStringLiteral("pass");
    case CellStatus::Less:
        return QStringLiteral("less");
    case CellStatus::Fail:
        return QStringLiteral("fail");
    case CellStatus::Plain:
        break;
    }
    return {};
}

bool isNumeric(const Table& t, std::size_t c) { return c < t.numeric.size() && t.numeric[c]; }

// Tables of more columns than this are set compact in HTML (class "wide").
constexpr std::size_t kWideColumns = 8;

// The HTML of one table. `forPrint`: the QTextDocument subset (attributes, no classes).
QString tableHtml(const Table& t, bool forPrint)
{
    QString out;
    // Many columns (a What fits table of many cards): compact cells that fit the page's column.
    const bool wide = t.header.size() > kWideColumns;
    if (!t.caption.empty())
        out += QStringLiteral("<p class=\"caption\"><b>%1</b></p>\n").arg(esc(t.caption));
    // <thead>: QTextDocument repeats the header row on every page the table continues on.
    out += forPrint ? QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\" style=\"border-collapse:collapse; "
                                     "border-color:#b0b0b0;\">\n<thead><tr>")
                    : QStringLiteral("<div class=\"scroll\"><table%1>\n<thead><tr>").arg(wide ? " class=\"wide\"" : "");
    for (std::size_t c = 0; c < t.header.size(); ++c) {
        const bool num = isNumeric(t, c);
        // A wide table's headers (card ids) may break after their hyphens.
        const QString header = wide ? esc(t.header[c]).replace(QLatin1Char('-'), QStringLiteral("-<wbr>")) : esc(t.header[c]);
        out += forPrint ? QStringLiteral("<th bgcolor=\"#ececec\" align=\"%1\">%2</th>").arg(num ? "right" : "left", esc(t.header[c]))
                        : QStringLiteral("<th%1>%2</th>").arg(num ? " class=\"num\"" : "", header);
    }
    out += forPrint ? QStringLiteral("</tr></thead>\n") : QStringLiteral("</tr></thead>\n<tbody>\n");
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
        out += QStringLiteral("<tr>");
        for (std::size_t c = 0; c < t.rows[r].size(); ++c) {
            const QString status = statusClass(t, r, c);
            const bool num = isNumeric(t, c);
            if (forPrint) {
                const QString bg = status == "pass" ? QStringLiteral(" bgcolor=\"#dcf0dc\"")
                    : status == "less"             ? QStringLiteral(" bgcolor=\"#fff1bf\"")
                    : status == "fail"             ? QStringLiteral(" bgcolor=\"#f6d5d5\"")
                                                   : QString();
                out += QStringLiteral("<td align=\"%1\"%2>%3</td>").arg(num ? "right" : "left", bg, cellHtml(t.rows[r][c]));
            } else {
                QStringList classes;
                if (num)
                    classes << QStringLiteral("num");
                if (!status.isEmpty())
                    classes << status;
                out += QStringLiteral("<td%1>%2</td>")
                           .arg(classes.isEmpty() ? QString() : " class=\"" + classes.join(' ') + "\"", cellHtml(t.rows[r][c]));
            }
        }
        out += QStringLiteral("</tr>\n");
    }
    out += forPrint ? QStringLiteral("</table>\n") : QStringLiteral("</tbody></table></div>\n");
    return out;
}

// The PDF sets at most this many columns in one table (A4 portrait, 8.5 pt): a wider table with
// key columns is set in parts that repeat them, so that every figure keeps its whole width.
constexpr std::size_t kPrintColumns = 9;

// @p t in parts of at most kPrintColumns columns, each with t's key columns first.
std::vector<Table> printParts(const Table& t)
{
    if (t.header.size() <= kPrintColumns || t.keyColumns == 0 || t.keyColumns >= kPrintColumns)
        return {t};
    const std::size_t perPart = kPrintColumns - t.keyColumns;
    const std::size_t others = t.header.size() - t.keyColumns;
    const std::size_t parts = (others + perPart - 1) / perPart;
    // Parts of even width (10 cards: 5 + 5, not 6 + 4).
    const std::size_t width = (others + parts - 1) / parts;
    std::vector<Table> out;
    for (std::size_t first = t.keyColumns; first < t.header.size(); first += width) {
        const std::size_t last = std::min(first + width, t.header.size());
        std::vector<std::size_t> columns;
        for (std::size_t c = 0; c < t.keyColumns; ++c)
            columns.push_back(c);
        for (std::size_t c = first; c < last; ++c)
            columns.push_back(c);
        Table part;
        part.caption = out.empty() ? t.caption
                                   : (t.caption.empty() ? std::string("continued") : t.caption + " (continued)");
        part.keyColumns = t.keyColumns;
        for (std::size_t c : columns) {
            part.header.push_back(t.header[c]);
            part.numeric.push_back(c < t.numeric.size() && t.numeric[c]);
        }
        for (std::size_t r = 0; r < t.rows.size(); ++r) {
            std::vector<std::string> row;
            std::vector<CellStatus> status;
            for (std::size_t c : columns) {
                row.push_back(c < t.rows[r].size() ? t.rows[r][c] : std::string());
                status.push_back(r < t.status.size() && c < t.status[r].size() ? t.status[r][c] : CellStatus::Plain);
            }
            part.rows.push_back(std::move(row));
            part.status.push_back(std::move(status));
        }
        out.push_back(std::move(part));
    }
    return out;
}

const char* kCss = R"CSS(
body { font-family: "DejaVu Sans", Verdana, sans-serif; font-size: 14px; color: #222; max-width: 1040px; margin: 24px auto; padding: 0 18px; line-height: 1.4; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 34px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 16px; margin-top: 26px; }
.subtitle { font-size: 16px; font-weight: bold; margin: 4px 0; }
.meta { color: #666; margin-top: 2px; }
.caption { margin: 14px 0 4px; }
table { border-collapse: collapse; margin: 4px 0 14px; }
th, td { border: 1px solid #c8c8c8; padding: 3px 8px; vertical-align: top; }
th { background: #eeeeee; text-align: left; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.pass { background: #dcf0dc; }
td.less { background: #fff1bf; }
td.fail { background: #f6d5d5; }
td.less, td.fail { white-space: normal; }
.scroll { max-width: 100%; overflow-x: auto; }
table.wide { font-size: 12px; line-height: 1.25; }
table.wide th, table.wide td { padding: 2px 4px; }
table.wide th.num { white-space: normal; }
pre { background: #f5f5f5; border: 1px solid #e0e0e0; padding: 8px 10px; overflow-x: auto; font-size: 13px; }
figure { margin: 8px 0 16px; }
figure svg { max-width: 100%; height: auto; }
)CSS";

constexpr double kWebChartWidth = 960;

class ChartObject : public QObject, public QTextObjectInterface {
    Q_OBJECT
    Q_INTERFACES(QTextObjectInterface)
public:
    explicit ChartObject(std::vector<Chart> charts, QObject* parent) : QObject(parent), m_charts(std::move(charts)) {}

    QSizeF intrinsicSize(QTextDocument* doc, int, const QTextFormat& format) override
    {
        const double scale = deviceScale(doc->documentLayout()->paintDevice());
        const double width = availableWidth(doc);
        const Chart* chart = chartOf(format);
        return QSizeF(width, chart ? chartHeight(*chart, width / scale) * scale : 10);
    }

    void drawObject(QPainter* painter, const QRectF& rect, QTextDocument*, int, const QTextFormat& format) override
    {
        const Chart* chart = chartOf(format);
        if (!chart)
            return;
        // Printing lays the document out in printer pixels (300 dpi); charts are drawn in 96 dpi
        // pixels, so scale them like the text around them.
        const double scale = deviceScale(painter->device());
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        painter->translate(rect.topLeft());
        painter->scale(scale, scale);
        PainterCanvas canvas(*painter);
        drawChart(*chart, QRectF(0, 0, rect.width() / scale, rect.height() / scale), canvas);
        painter->restore();
    }

private:
    static double deviceScale(const QPaintDevice* device)
    {
        return device && device->logicalDpiY() > 0 ? device->logicalDpiY() / 96.0 : 1.0;
    }

    // The width of the text column. QTextDocument::print() gives the clone the printer's page
    // width in device pixels but 2 cm side margins in 96 dpi pixels, which its layout scales to
    // the device (QTextDocumentLayoutPrivate::layoutFrame): scale them the same way here.
    static double availableWidth(QTextDocument* doc)
    {
        const double scale = deviceScale(doc->documentLayout()->paintDevice());
        double width = doc->pageSize().width() > 0 ? doc->pageSize().width() : doc->textWidth();
        if (width <= 0)
            width = 680 * scale;
        const QTextFrameFormat root = doc->rootFrame()->frameFormat();
        width -= (root.leftMargin() + root.rightMargin() + 2 * root.padding() + 2 * root.border() + 8) * scale;
        return std::max(width, 320.0 * scale);
    }

    const Chart* chartOf(const QTextFormat& format) const
    {
        const int i = format.intProperty(kChartIndexProperty);
        return i >= 0 && static_cast<std::size_t>(i) < m_charts.size() ? &m_charts[static_cast<std::size_t>(i)] : nullptr;
    }

    std::vector<Chart> m_charts;
};

QString chartMarker(std::size_t i) { return QStringLiteral("@@CHART%1@@").arg(i); }

// The QTextDocument HTML subset; charts as markers that reportTextDocument replaces by objects.
QString printHtml(const Document& d, std::vector<Chart>& charts)
{
    QString out = QStringLiteral("<html><body>");
    out += QStringLiteral("<h1>%1</h1>").arg(esc(d.title));
    if (!d.subtitle.empty())
        out += QStringLiteral("<p><b>%1</b></p>").arg(esc(d.subtitle));
    if (!d.meta.empty())
        out += QStringLiteral("<p><font color=\"#666666\">%1</font></p>").arg(esc(d.meta));
    for (const Section& s : d.sections) {
        out += QStringLiteral("<h%1>%2</h%1>\n").arg(s.level).arg(esc(s.heading));
        for (const Block& b : s.blocks) {
            switch (b.kind) {
            case Block::Kind::Paragraph:
                out += QStringLiteral("<p>%1</p>\n").arg(esc(b.text));
                break;
            case Block::Kind::Code:
                out += QStringLiteral("<p style=\"white-space:pre-wrap; font-family:'DejaVu Sans Mono'; font-size:7.5pt; "
                                      "background-color:#f3f3f3;\">%1</p>\n")
                           .arg(esc(b.text));
                break;
            case Block::Kind::Table:
                for (const Table& part : printParts(b.table))
                    out += tableHtml(part, true);
                break;
            case Block::Kind::Chart:
                out += QStringLiteral("<p>%1</p>\n").arg(chartMarker(charts.size()));
                charts.push_back(b.chart);
                break;
            }
        }
    }
    return out + QStringLiteral("</body></html>");
}

bool fail(QString* error, const QString& message)
{
    if (error)
        *error = message;
    return false;
}

bool writeAtomically(const QString& path, const QByteArray& bytes, QString* error)
{
    auto written = writeFileAtomically(path.toStdString(), std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    if (!written)
        return fail(error, q(written.error()));
    return true;
}

} // namespace

QString reportHtml(const Document& d)
{
    QString out = QStringLiteral("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%1</title>\n"
                                 "<style>%2</style>\n</head>\n<body>\n")
                      .arg(esc(d.title + (d.subtitle.empty() ? "" : " - " + d.subtitle)), QLatin1String(kCss));
    out += QStringLiteral("<h1>%1</h1>\n").arg(esc(d.title));
    if (!d.subtitle.empty())
        out += QStringLiteral("<p class=\"subtitle\">%1</p>\n").arg(esc(d.subtitle));
    if (!d.meta.empty())
        out += QStringLiteral("<p class=\"meta\">%1</p>\n").arg(esc(d.meta));
    for (const Section& s : d.sections) {
        out += QStringLiteral("<h%1>%2</h%1>\n").arg(s.level).arg(esc(s.heading));
        for (const Block& b : s.blocks) {
            switch (b.kind) {
            case Block::Kind::Paragraph:
                out += QStringLiteral("<p>%1</p>\n").arg(esc(b.text));
                break;
            case Block::Kind::Code:
                out += QStringLiteral("<pre><code>%1</code></pre>\n").arg(esc(b.text));
                break;
            case Block::Kind::Table:
                out += tableHtml(b.table, false);
                break;
            case Block::Kind::Chart: {
                SvgCanvas canvas;
                const double h = chartHeight(b.chart, kWebChartWidth);
                drawChart(b.chart, QRectF(0, 0, kWebChartWidth, h), canvas);
                out += QStringLiteral("<figure>\n%1\n</figure>\n").arg(canvas.svg(kWebChartWidth, h));
                break;
            }
            }
        }
    }
    return out + QStringLiteral("</body>\n</html>\n");
}

std::unique_ptr<QTextDocument> reportTextDocument(const Document& d)
{
    auto doc = std::make_unique<QTextDocument>();
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(8.5);
    doc->setDefaultFont(font);
    doc->setDefaultStyleSheet(QStringLiteral("h1 { font-size: 18pt; } h2 { font-size: 13pt; margin-top: 14px; } "
                                             "h3 { font-size: 10.5pt; margin-top: 10px; } pre { font-size: 8pt; }"));
    std::vector<Chart> charts;
    doc->setHtml(printHtml(d, charts));
    auto* handler = new ChartObject(charts, doc.get());
    doc->documentLayout()->registerHandler(kChartObjectType, handler);
    for (std::size_t i = 0; i < charts.size(); ++i) {
        QTextCursor found = doc->find(chartMarker(i));
        if (found.isNull())
            continue;
        QTextCharFormat format;
        format.setObjectType(kChartObjectType);
        format.setProperty(kChartIndexProperty, static_cast<int>(i));
        found.insertText(QString(QChar::ObjectReplacementCharacter), format);
    }
    return doc;
}

namespace {

// The page (0-based) the first line of @p block starts on, in a document of pages @p pageHeight tall.
int pageOfBlock(const QTextBlock& block, double pageHeight)
{
    const QTextLayout* layout = block.layout();
    const QRectF rect = block.document()->documentLayout()->blockBoundingRect(block);
    const double y = rect.top() + (layout && layout->lineCount() > 0 ? layout->lineAt(0).y() : 0.0);
    return static_cast<int>((y + 0.5) / pageHeight);
}

QTextTable* tableOf(const QTextBlock& block)
{
    return QTextCursor(block).currentTable();
}

// The block a table's first body row starts with (its header row's when it has only that).
QTextBlock firstBodyBlock(QTextTable* table)
{
    return table->cellAt(table->rows() > 1 ? 1 : 0, 0).firstCursorPosition().block();
}

// A page break before @p block, and the whole document laid out again (an incremental layout
// after a format change left the blocks between tables laid out but not drawn).
void breakBefore(QTextDocument& doc, QTextBlock block)
{
    QTextBlockFormat format = block.blockFormat();
    format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
    QTextCursor(block).setBlockFormat(format);
    doc.setPageSize(doc.pageSize());
}

} // namespace

void keepWithNext(QTextDocument& doc)
{
    const double pageHeight = doc.pageSize().height();
    if (pageHeight <= 0)
        return;
    QTextTable* seen = nullptr;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
        QTextTable* table = tableOf(b);
        if (table) {
            // A table the blocks before it did not move: its header row stays with its first row.
            if (table != seen) {
                seen = table;
                const QTextBlock header = table->cellAt(0, 0).firstCursorPosition().block();
                if (pageOfBlock(firstBodyBlock(table), pageHeight) > pageOfBlock(header, pageHeight)) {
                    QTextTableFormat format = table->format();
                    format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
                    table->setFormat(format);
                    doc.setPageSize(doc.pageSize());
                }
            }
            continue;
        }
        const QTextBlock next = b.next();
        if (!next.isValid())
            break;
        QTextTable* nextTable = tableOf(next);
        // A heading, or a table's caption (the paragraph right before it).
        if (b.blockFormat().headingLevel() == 0 && !nextTable)
            continue;
        if (next.blockFormat().headingLevel() > 0)
            continue; // a heading right after a heading: judged with what follows it
        const QTextBlock content = nextTable ? firstBodyBlock(nextTable) : next;
        const int page = pageOfBlock(b, pageHeight);
        if (pageOfBlock(content, pageHeight) <= page)
            continue;
        // Move it, with the headings right above it on the same page, to the next page.
        QTextBlock first = b;
        for (QTextBlock above = b.previous(); above.isValid() && !tableOf(above) && above.blockFormat().headingLevel() > 0
                                              && pageOfBlock(above, pageHeight) == page;
             above = above.previous())
            first = above;
        breakBefore(doc, first);
        if (nextTable)
            seen = nextTable; // it starts after the break, header and first row together
    }
}

std::unique_ptr<QTextDocument> reportPrintDocument(const Document& d, QPagedPaintDevice& device)
{
    auto doc = reportTextDocument(d);
    doc->documentLayout()->setPaintDevice(&device);
    // Margins in 96 dpi pixels: the layout scales the root frame's margins to the device
    // (QTextDocumentLayoutPrivate::layoutFrame), and applies top and bottom on every page.
    QTextFrameFormat root = doc->rootFrame()->frameFormat();
    root.setMargin(kPdfMarginMm / 25.4 * 96.0);
    doc->rootFrame()->setFrameFormat(root);
    doc->setPageSize(QSizeF(device.width(), device.height()));
    keepWithNext(*doc);
    return doc;
}

QByteArray reportPdf(const Document& d)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    {
        QPdfWriter writer(&buffer);
        writer.setTitle(q(d.title));
        writer.setCreator(QStringLiteral("Headroom"));
        writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        writer.setResolution(kPdfDpi);
        auto doc = reportPrintDocument(d, writer);
        // Page by page (QTextDocument::print lays a paginated document out the same way, but
        // draws no page numbers for it).
        const QSizeF page = doc->pageSize();
        const double margin = kPdfMarginMm / 25.4 * kPdfDpi;
        QPainter painter(&writer);
        QFont numberFont = doc->defaultFont();
        numberFont.setPointSizeF(8);
        for (int i = 0; i < doc->pageCount(); ++i) {
            if (i > 0)
                writer.newPage();
            painter.save();
            painter.translate(0, -i * page.height());
            QAbstractTextDocumentLayout::PaintContext context;
            context.clip = QRectF(0, i * page.height(), page.width(), page.height());
            context.palette.setColor(QPalette::Text, Qt::black);
            doc->documentLayout()->draw(&painter, context);
            painter.restore();
            painter.setFont(numberFont);
            painter.setPen(QColor(0x66, 0x66, 0x66));
            painter.drawText(QRectF(margin, page.height() - margin, page.width() - 2 * margin, margin / 2),
                             Qt::AlignRight | Qt::AlignVCenter, QString::number(i + 1));
        }
    }
    buffer.close();
    return bytes;
}

bool renderReportHtml(const std::string& reportJson, const QString& path, QString* error)
{
    auto d = layoutReport(reportJson);
    if (!d)
        return fail(error, q(d.error().message));
    return writeAtomically(path, reportHtml(*d).toUtf8(), error);
}

bool renderReportPdf(const std::string& reportJson, const QString& path, QString* error)
{
    auto d = layoutReport(reportJson);
    if (!d)
        return fail(error, q(d.error().message));
    const QByteArray pdf = reportPdf(*d);
    if (pdf.isEmpty())
        return fail(error, QStringLiteral("the PDF writer produced nothing"));
    return writeAtomically(path, pdf, error);
}

} // namespace headroom::report

#include "reportrender.moc"
