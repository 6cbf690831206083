#include "localmodelsscanner.h"

#include "headroom/core/stores/localstores.h"

#include <QFuture>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace headroom::app {

LocalModelsScanner::LocalModelsScanner(QObject* parent)
    : QObject(parent)
{
}

void LocalModelsScanner::scan()
{
    const std::uint64_t generation = ++m_generation;
    QPointer<LocalModelsScanner> self(this);
    QtConcurrent::run([]() {
        std::vector<ModelProfile> out;
        for (const LocalModel& m : findLocalModels(defaultLocalStoreRoots()))
            if (auto p = localModelProfile(m))
                out.push_back(std::move(*p));
        return out;
    }).then(this, [self, generation](const std::vector<ModelProfile>& models) {
        if (self && generation == self->m_generation)
            Q_EMIT self->found(models);
    });
}

} // namespace headroom::app
