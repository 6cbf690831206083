#include "theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QWidget>

namespace headroom::app {

namespace {

// Existing windows do not all follow a later application palette change (seen with Qt 6.4
// offscreen): give every top-level window the palette too; children inherit it.
void setEverywhere(QApplication& app, const QPalette& palette)
{
    app.setPalette(palette);
    for (QWidget* w : QApplication::topLevelWidgets())
        w->setPalette(palette);
}

} // namespace

void applyTheme(QApplication& app, bool dark)
{
    if (!app.style() || app.style()->name().compare(QStringLiteral("fusion"), Qt::CaseInsensitive) != 0)
        if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion")))
            app.setStyle(fusion);
    if (!dark) {
        setEverywhere(app, app.style()->standardPalette());
        return;
    }
    QPalette p;
    const QColor window(0x2b, 0x2f, 0x33);
    // Base lighter than Window: Fusion outlines check boxes in Window.darker(140), which must
    // stand out against the Base they are filled with.
    const QColor base(0x36, 0x3b, 0x40);
    const QColor text(0xe8, 0xea, 0xed);
    const QColor disabled(0x80, 0x86, 0x8b);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x3d, 0x42, 0x48));
    p.setColor(QPalette::ToolTipBase, QColor(0x3c, 0x41, 0x46));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x3a, 0x3f));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x50, 0x56));
    p.setColor(QPalette::Midlight, QColor(0x40, 0x45, 0x4b));
    p.setColor(QPalette::Mid, QColor(0x5a, 0x60, 0x66));
    p.setColor(QPalette::Dark, QColor(0x18, 0x1a, 0x1c));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7a, 0xc6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x7a, 0xb7, 0xff));
    p.setColor(QPalette::LinkVisited, QColor(0xb3, 0x9d, 0xdb));
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    setEverywhere(app, p);
}

bool isDarkPalette()
{
    return QApplication::palette().color(QPalette::Window).lightness() < 128;
}

} // namespace headroom::app
