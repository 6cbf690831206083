#pragma once
// Finds the models the person already has (the Hugging Face hub cache, Ollama's store, LM
// Studio's folder: core/stores/localstores.h) on a worker, for the model picker: each is named
// by its store's name, with its path in the tooltip. Reading every header of a large store can
// take seconds; a newer scan supersedes an older one.

#include <QObject>

// After the Qt headers: moc 6.4 fails to parse <compare> when it comes first.
#include "headroom/core/modelprofile.h"

#include <vector>

namespace headroom::app {

class LocalModelsScanner : public QObject
{
    Q_OBJECT
public:
    explicit LocalModelsScanner(QObject* parent = nullptr);

    /// Scans the standard locations of the process environment (HF_HUB_CACHE, HF_HOME,
    /// OLLAMA_MODELS, HOME).
    void scan();

Q_SIGNALS:
    /// The models that imported, in store order (hub caches, Ollama, LM Studio).
    void found(const std::vector<headroom::ModelProfile>& models);

private:
    std::uint64_t m_generation = 0;
};

} // namespace headroom::app
