#include "gpulayerscontrol.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>

namespace headroom::app {

GpuLayersControl::GpuLayersControl(QWidget* parent) : QWidget(parent)
{
    m_caption = new QLabel(QStringLiteral("GPU layers (-ngl):"));
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setAccessibleName(QStringLiteral("GPU layers"));
    m_slider->setToolTip(QStringLiteral("Layers on the GPU as llama.cpp counts -ngl (the output layer included); the rest stay in "
                                        "host memory. Moving it plans that --offload N."));
    m_slider->setPageStep(4);
    m_slider->setMinimumWidth(160);
    m_caption->setBuddy(m_slider);
    m_value = new QLabel;
    m_value->setMinimumWidth(m_value->fontMetrics().horizontalAdvance(QStringLiteral("888 / 888")));
    m_value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_automatic = new QPushButton(QStringLiteral("&Automatic"));
    m_automatic->setToolTip(QStringLiteral("The engine's own split (llama.cpp --fit, Ollama's estimator)"));
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_caption);
    layout->addWidget(m_slider, 1);
    layout->addWidget(m_value);
    layout->addWidget(m_automatic);
    layout->addWidget(m_summary, 2);

    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        m_chosen = static_cast<std::uint32_t>(value);
        m_automatic->setEnabled(true);
        showValue();
        Q_EMIT gpuLayersChosen(m_chosen);
    });
    connect(m_automatic, &QPushButton::clicked, this, [this] {
        m_chosen.reset();
        Q_EMIT gpuLayersChosen(std::nullopt);
    });
}

void GpuLayersControl::setLayers(std::uint32_t totalLayers, std::uint32_t shownLayers, bool automatic)
{
    const QSignalBlocker block(m_slider);
    show();
    m_slider->setEnabled(true);
    m_slider->setRange(0, static_cast<int>(totalLayers));
    m_slider->setValue(static_cast<int>(std::min(shownLayers, totalLayers)));
    m_automatic->setEnabled(!automatic);
    if (automatic)
        m_chosen.reset();
    else
        m_chosen = shownLayers;
    showValue();
}

void GpuLayersControl::setUnavailable(const QString& why)
{
    const QSignalBlocker block(m_slider);
    m_chosen.reset();
    m_slider->setRange(0, 0);
    m_slider->setEnabled(false);
    m_automatic->setEnabled(false);
    m_value->clear();
    m_summary->setText(why.toHtmlEscaped());
    // No room taken where there is nothing to choose (the Speed per split tab says why).
    hide();
}

void GpuLayersControl::setSummary(const QString& richText)
{
    m_summary->setText(richText);
}

void GpuLayersControl::showValue()
{
    m_value->setText(QStringLiteral("%1 / %2").arg(m_slider->value()).arg(m_slider->maximum()));
}

} // namespace headroom::app
