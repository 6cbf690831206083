// The catalog in the app: estimated card totals say so, and the model picker searches.
#include "apptestutils.h"
#include "choicespanel.h"
#include "mainwindow.h"

#include <catch2/catch.hpp>

#include <QComboBox>
#include <QCompleter>
#include <QLineEdit>

using namespace headroom;
using namespace headroom::app;
using headroom::app::test::catalog;

namespace {

MainWindow::Options windowOptions()
{
    MainWindow::Options o;
    o.useSettings = false;
    o.detectGpus = false;
    o.probeBackend = std::make_shared<test::FakeProbeBackend>();
    return o;
}

} // namespace

TEST_CASE("a card without a public driver total is labelled estimated", "[window][catalog]")
{
    Card measured;
    measured.name = "NVIDIA GeForce RTX 3070";
    measured.totalBytes = Bytes{7967ull * 1048576};
    Card estimated = measured;
    estimated.name = "Intel(R) Arc(TM) A770 Graphics";
    estimated.totalEstimated = true;
    CHECK_FALSE(cardLabel(measured).contains(QStringLiteral("estimated")));
    CHECK(cardLabel(estimated).endsWith(QStringLiteral(", estimated)")));
}

TEST_CASE("typing in the model picker finds models by any part of their name", "[window][catalog]")
{
    MainWindow w(catalog(), windowOptions());
    QComboBox* combo = w.modelCombo();
    REQUIRE(combo->isEditable());
    QCompleter* completer = combo->completer();
    REQUIRE(completer != nullptr);
    CHECK(completer->filterMode() == Qt::MatchContains);
    completer->setCompletionPrefix(QStringLiteral("a3b"));
    REQUIRE(completer->completionCount() >= 1);
    CHECK(completer->currentCompletion().contains(QStringLiteral("30B-A3B")));
}
