#include "modelimporter.h"

#include "headroom/core/resolve.h"

#include <QFuture>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace headroom::app {

ModelImporter::ModelImporter(QObject* parent)
    : QObject(parent)
{
}

void ModelImporter::import(const QString& path, const ProfileSet& profiles)
{
    const std::uint64_t generation = ++m_generation;
    if (!m_busy) {
        m_busy = true;
        Q_EMIT busyChanged(true);
    }
    QPointer<ModelImporter> self(this);
    using Result = tl::expected<ModelProfile, std::string>;
    QtConcurrent::run([arg = path.toStdString(), profiles]() -> Result {
        // Importers return errors as values; anything thrown still becomes a message.
        try {
            return resolveModel(arg, profiles);
        } catch (const std::exception& e) {
            return tl::unexpected(std::string("cannot read ") + arg + ": " + e.what());
        }
    })
        .then(this, [self, generation, path](const Result& result) {
            if (!self || generation != self->m_generation)
                return;
            self->m_busy = false;
            Q_EMIT self->busyChanged(false);
            if (result)
                Q_EMIT self->imported(*result);
            else
                Q_EMIT self->failed(path, QString::fromStdString(result.error()));
        });
}

} // namespace headroom::app
