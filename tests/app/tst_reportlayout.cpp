// The PDF and HTML reports as laid out: with ten cards no number, unit or card name is broken
// across lines in any table cell (a line of a cell breaks only at a space, or after a hyphen
// before a letter), the What fits table is set in parts that each fit the page, and the HTML
// keeps every figure with its unit.

#include "apptestutils.h"
#include "exportactions.h"
#include "mainwindow.h"

#include "report/reportrender.h"

#include "headroom/core/report/reportdocument.h"

#include <catch2/catch.hpp>

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextLayout>
#include <QTextTable>

using namespace headroom;
using namespace headroom::app;
using namespace headroom::app::test;

namespace {

// The ten cards of the review's screenshot 14, the longest ids among them.
const std::vector<std::string> kTenCards{"a10",      "a100-80gb", "a40",      "h100-sxm",         "l4",
                                         "rtx-3090", "rtx-4060",  "rtx-4080", "rtx-4060-ti-16gb", "rtx-5090"};

// The app's export of its matrix (every weight format on ten cards, or on the default three) as
// a report document.
report::Document tenCardReport(const std::vector<std::string>& cards = kTenCards)
{
    MainWindow::Options o;
    o.useSettings = false;
    o.detectGpus = false;
    o.probeBackend = std::make_shared<FakeProbeBackend>();
    o.cardArgs = cards;
    MainWindow w(catalog(), o);
    auto json = capacityReportJson(w.exportState(), "2026-12-01T00:00:00Z");
    REQUIRE(json);
    auto doc = report::layoutReport(*json);
    REQUIRE(doc);
    return *doc;
}

// A report laid out on A4 pages at 300 dpi as the PDF sets it (the writer outlives the document).
struct PrintedReport {
    explicit PrintedReport(const report::Document& d)
    {
        buffer.open(QIODevice::WriteOnly);
        writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        writer.setResolution(300);
        doc = report::reportPrintDocument(d, writer);
    }
    QByteArray bytes;
    QBuffer buffer{&bytes};
    QPdfWriter writer{&buffer};
    std::unique_ptr<QTextDocument> doc;
};

void collectTables(QTextFrame* frame, std::vector<QTextTable*>& out)
{
    for (QTextFrame* child : frame->childFrames()) {
        if (auto* table = qobject_cast<QTextTable*>(child))
            out.push_back(table);
        collectTables(child, out);
    }
}

// Where a line of @p text that starts at @p pos breaks a token: empty when the break is at a
// space (not between a number and its unit) or after a hyphen before a letter.
QString brokenToken(const QString& text, int pos)
{
    static const QRegularExpression unit(QStringLiteral("^(B|KiB|MiB|GiB|TiB|GB|MB|ms|%|tokens|users)\\b"));
    const QChar prev = text.at(pos - 1);
    const QChar next = text.at(pos);
    if (prev == QLatin1Char(' ')) {
        const bool unitCut = pos >= 2 && text.at(pos - 2).isDigit() && unit.match(text.mid(pos)).hasMatch();
        return unitCut ? text.left(pos) + QStringLiteral(" | ") + text.mid(pos) : QString();
    }
    if (prev == QLatin1Char('-') && next.isLetter())
        return {};
    return text.left(pos) + QStringLiteral(" | ") + text.mid(pos);
}

} // namespace

TEST_CASE("the PDF of a ten-card report breaks no number, unit or name across lines", "[report][layout]")
{
    PrintedReport printed(tenCardReport());
    QTextDocument* doc = printed.doc.get();
    REQUIRE(doc->pageCount() >= 2);

    std::vector<QTextTable*> tables;
    collectTables(doc->rootFrame(), tables);
    REQUIRE(tables.size() >= 4);
    int cells = 0;
    int wrapped = 0;
    int whatFitsParts = 0;
    QStringList cardsSeen;
    for (QTextTable* table : tables) {
        INFO("a table of " << table->columns() << " columns");
        CHECK(table->columns() <= 9);
        const QString first = table->cellAt(0, 0).firstCursorPosition().block().text();
        const bool whatFits = first == QStringLiteral("model") && table->columns() > 3
            && table->cellAt(0, 1).firstCursorPosition().block().text() == QStringLiteral("weights");
        for (int r = 0; r < table->rows(); ++r)
            for (int c = 0; c < table->columns(); ++c) {
                const QTextTableCell cell = table->cellAt(r, c);
                if (whatFits && r == 0 && c >= 3)
                    cardsSeen << cell.firstCursorPosition().block().text();
                for (QTextBlock b = cell.firstCursorPosition().block(); b.isValid(); b = b.next()) {
                    ++cells;
                    const QTextLayout* layout = b.layout();
                    REQUIRE(layout);
                    for (int i = 1; i < layout->lineCount(); ++i) {
                        ++wrapped;
                        INFO("row " << r << ", column " << c << ": " << b.text().toStdString());
                        CHECK(brokenToken(b.text(), layout->lineAt(i).textStart()).toStdString() == "");
                    }
                    if (b == cell.lastCursorPosition().block())
                        break;
                }
            }
        whatFitsParts += whatFits;
    }
    CHECK(cells > 500);
    CHECK(wrapped > 0); // long reasons do wrap, at spaces
    // Ten cards: the What fits table in two parts of five cards, every card once.
    CHECK(whatFitsParts == 2);
    QStringList expected;
    for (const std::string& c : kTenCards)
        expected << QString::fromStdString(c);
    cardsSeen.sort();
    expected.sort();
    CHECK(cardsSeen.join(',').toStdString() == expected.join(',').toStdString());
}

TEST_CASE("the HTML of a ten-card report keeps every figure with its unit", "[report][layout]")
{
    const QString html = report::reportHtml(tenCardReport());
    // A space between a number and its unit inside a cell would let the browser break it.
    static const QRegularExpression cut(QStringLiteral("<td[^>]*>[^<]*\\d (B|KiB|MiB|GiB|TiB|ms|tokens)\\b"));
    const auto m = cut.match(html);
    INFO(m.captured(0).toStdString());
    CHECK_FALSE(m.hasMatch());
    CHECK(html.contains(QStringLiteral("GiB")));
    CHECK(html.contains(QChar(0x00A0)));
}

namespace {

int pageOf(const QTextBlock& b, double pageHeight)
{
    const QRectF rect = b.document()->documentLayout()->blockBoundingRect(b);
    const double y = rect.top() + (b.layout()->lineCount() > 0 ? b.layout()->lineAt(0).y() : 0.0);
    return static_cast<int>((y + 0.5) / pageHeight);
}

QTextBlock bodyStart(QTextTable* t) { return t->cellAt(t->rows() > 1 ? 1 : 0, 0).firstCursorPosition().block(); }

// Headings, table captions and table header rows left at a page's foot, as "page N: text".
QStringList orphans(QTextDocument& doc)
{
    QStringList out;
    const double h = doc.pageSize().height();
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
        if (QTextTable* t = QTextCursor(b).currentTable()) {
            if (b == t->cellAt(0, 0).firstCursorPosition().block() && pageOf(bodyStart(t), h) > pageOf(b, h))
                out << QStringLiteral("page %1: header row %2").arg(pageOf(b, h) + 1).arg(b.text());
            continue;
        }
        const QTextBlock next = b.next();
        if (!next.isValid())
            break;
        QTextTable* nextTable = QTextCursor(next).currentTable();
        if ((b.blockFormat().headingLevel() == 0 && !nextTable) || next.blockFormat().headingLevel() > 0)
            continue;
        if (pageOf(nextTable ? bodyStart(nextTable) : next, h) > pageOf(b, h))
            out << QStringLiteral("page %1: %2").arg(pageOf(b, h) + 1).arg(b.text());
    }
    return out;
}

} // namespace

TEST_CASE("the PDF leaves no heading, caption or table header at the foot of a page", "[report][layout]")
{
    // The app's export on its three default cards (1 model x its 13 formats: a heading "Memory
    // bill, per device" and its table's header row were left at the foot of page 4), and on ten.
    for (const auto& cards : {std::vector<std::string>{"rtx-4060", "rtx-4060-ti-16gb", "rtx-4090"}, kTenCards}) {
        PrintedReport printed(tenCardReport(cards));
        QTextDocument* doc = printed.doc.get();
        INFO(cards.size() << " cards, " << doc->pageCount() << " pages");
        CHECK(doc->pageCount() >= 3);
        CHECK(doc->pageCount() <= (cards.size() == 3 ? 10 : 24)); // a few pages, not the 42 of the review
        CHECK(orphans(*doc).join(QStringLiteral("; ")).toStdString() == "");
    }
}
