#pragma once
// Reads a model's own files (config.json, a model directory, .safetensors or .gguf) on a
// worker: a big GGUF's header can be slow on a network disk. A newer import supersedes an older
// one, whose result is dropped.

#include <QObject>
#include <QString>

// After the Qt headers: moc 6.4 fails to parse <compare> when it comes first.
#include "headroom/core/profiles.h"

namespace headroom::app {

class ModelImporter : public QObject
{
    Q_OBJECT
public:
    explicit ModelImporter(QObject* parent = nullptr);

    void import(const QString& path, const ProfileSet& profiles);
    bool isBusy() const { return m_busy; }

Q_SIGNALS:
    void imported(const headroom::ModelProfile& model);
    void failed(const QString& path, const QString& message);
    void busyChanged(bool busy);

private:
    std::uint64_t m_generation = 0;
    bool m_busy = false;
};

} // namespace headroom::app
