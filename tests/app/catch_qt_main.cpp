// Catch2 v2's implementation with a QApplication, compiled once (TOOLCHAIN.md §2).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QApplication>

int main(int argc, char** argv)
{
    // catch_discover_tests runs this binary at build time without the ENVIRONMENT property:
    // without a display it would abort and its tests would silently vanish.
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM") && !qEnvironmentVariableIsSet("DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("headroom-tests"));
    QApplication::setApplicationName(QStringLiteral("tst_app"));
    return Catch::Session().run(argc, argv);
}
