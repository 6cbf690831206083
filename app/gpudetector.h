#pragma once
// The GPUs of this machine, as cards: asks nvidia-smi in a separate process (never blocking the
// GUI thread), and matches each name to a card profile for its bandwidth and peak.

#include <QObject>
#include <QString>

// After the Qt headers: moc 6.4 fails to parse <compare> when it comes first.
#include "headroom/core/profiles.h"

#include <vector>

class QProcess;

namespace headroom::app {

/// Cards from `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits`
/// output (one "0, NVIDIA GeForce RTX 4090, 24564" line per GPU; memory in MiB). Ids are
/// "gpu0", "gpu1", ...; bandwidth and peak come from the profile with the same name.
std::vector<Card> parseNvidiaSmi(const QString& output, const ProfileSet& profiles);

class GpuDetector : public QObject
{
    Q_OBJECT
public:
    explicit GpuDetector(QObject* parent = nullptr);
    /// Starts the query; detected() follows (with no cards when nvidia-smi is absent or fails).
    void start(const ProfileSet& profiles);

Q_SIGNALS:
    void detected(const std::vector<headroom::Card>& cards);

private:
    QProcess* m_process = nullptr;
};

} // namespace headroom::app
