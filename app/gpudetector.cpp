#include "gpudetector.h"

#include <QProcess>
#include <QStandardPaths>

namespace headroom::app {

std::vector<Card> parseNvidiaSmi(const QString& output, const ProfileSet& profiles)
{
    std::vector<Card> cards;
    for (const QString& line : output.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QStringList parts = line.split(QLatin1Char(','));
        if (parts.size() < 3)
            continue;
        bool okIndex = false;
        bool okMemory = false;
        const int index = parts[0].trimmed().toInt(&okIndex);
        const qulonglong mib = parts[2].trimmed().toULongLong(&okMemory);
        if (!okIndex || !okMemory || mib == 0)
            continue;
        Card card;
        const std::string name = parts[1].trimmed().toStdString();
        for (const Card& profile : profiles.cards)
            if (profile.name == name) {
                card = profile;
                break;
            }
        card.id = "gpu" + std::to_string(index);
        card.name = name;
        card.totalBytes = Bytes{static_cast<std::uint64_t>(mib) * kMiB};
        card.memoryClass = formatBytes(card.totalBytes);
        card.source = "nvidia-smi on this machine";
        card.anonymous = false;
        cards.push_back(std::move(card));
    }
    return cards;
}

GpuDetector::GpuDetector(QObject* parent)
    : QObject(parent)
{
}

void GpuDetector::start(const ProfileSet& profiles)
{
    const QString smi = QStandardPaths::findExecutable(QStringLiteral("nvidia-smi"));
    if (smi.isEmpty()) {
        Q_EMIT detected({});
        return;
    }
    if (m_process)
        return;
    m_process = new QProcess(this);
    connect(m_process, &QProcess::finished, this, [this, profiles](int code, QProcess::ExitStatus status) {
        const QString out = QString::fromLocal8Bit(m_process->readAllStandardOutput());
        m_process->deleteLater();
        m_process = nullptr;
        Q_EMIT detected(code == 0 && status == QProcess::NormalExit ? parseNvidiaSmi(out, profiles) : std::vector<Card>{});
    });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || !m_process)
            return;
        m_process->deleteLater();
        m_process = nullptr;
        Q_EMIT detected({});
    });
    m_process->start(smi, {QStringLiteral("--query-gpu=index,name,memory.total"), QStringLiteral("--format=csv,noheader,nounits")});
}

} // namespace headroom::app
