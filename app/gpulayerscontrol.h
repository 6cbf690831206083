#pragma once
// The GPU-layers slider of the detail view (LM Studio's "GPU offload" slider): 0 .. n_layer + 1 as
// llama.cpp counts -ngl (the output layer included), starting at the plan's automatic split (the
// engine's own placement: llama.cpp --fit, Ollama's estimator). Moving it asks for that --offload N;
// the detail panel re-plans through core and shows the new bar, verdict and speed. "Automatic"
// goes back to the engine's own split. An engine that keeps every layer on the GPU shows why not.

#include <QWidget>

#include <cstdint>
#include <optional>

class QLabel;
class QPushButton;
class QSlider;

namespace headroom::app {

class GpuLayersControl : public QWidget
{
    Q_OBJECT
public:
    explicit GpuLayersControl(QWidget* parent = nullptr);

    /// Shows the range 0..@p totalLayers with the slider at @p shownLayers, without emitting;
    /// @p automatic: the shown split is the engine's own (no --offload asked).
    void setLayers(std::uint32_t totalLayers, std::uint32_t shownLayers, bool automatic);
    /// Disables and hides the slider, keeping @p why as its summary (no layer offload in this engine, no plan).
    void setUnavailable(const QString& why);
    /// The words after the slider: the split, its placement and speed, from the plan on show.
    void setSummary(const QString& richText);

    /// The layers asked for, or nullopt for the engine's own split.
    std::optional<std::uint32_t> chosen() const { return m_chosen; }
    QSlider* slider() const { return m_slider; }
    QPushButton* automaticButton() const { return m_automatic; }
    QLabel* valueLabel() const { return m_value; }
    QLabel* summary() const { return m_summary; }

Q_SIGNALS:
    /// The person moved the slider (a layer count) or pressed Automatic (nullopt).
    void gpuLayersChosen(std::optional<std::uint32_t> layers);

private:
    void showValue();

    QLabel* m_caption = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_value = nullptr;
    QPushButton* m_automatic = nullptr;
    QLabel* m_summary = nullptr;
    std::optional<std::uint32_t> m_chosen;
};

} // namespace headroom::app
