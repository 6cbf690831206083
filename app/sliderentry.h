#pragma once
// A labelled slider with typed entry for a count (context tokens, users, micro-batch). The
// slider walks a log-like ladder of round values (1, 1.25, 1.5, 1.75 x 2^k); the spin box takes
// any value in range.

#include <QWidget>

#include <cstdint>
#include <vector>

class QLabel;
class QSlider;
class QSpinBox;

namespace headroom::app {

class SliderEntry : public QWidget
{
    Q_OBJECT
public:
    SliderEntry(const QString& label, std::uint64_t minimum, std::uint64_t maximum, std::uint64_t value,
                QWidget* parent = nullptr);

    std::uint64_t value() const { return m_value; }
    void setValue(std::uint64_t value);
    void setRange(std::uint64_t minimum, std::uint64_t maximum);
    std::uint64_t minimum() const { return m_min; }
    std::uint64_t maximum() const { return m_max; }

    QSlider* slider() const { return m_slider; }
    QSpinBox* spinBox() const { return m_spin; }
    /// The message shown when a typed value was out of range (hidden otherwise).
    QLabel* message() const { return m_message; }
    /// The ladder the slider walks.
    const std::vector<std::uint64_t>& ladder() const { return m_ladder; }

Q_SIGNALS:
    void valueChanged(std::uint64_t value);

private:
    void rebuildLadder();
    void showValue();
    void commit(std::uint64_t value);

    QLabel* m_label = nullptr;
    QSlider* m_slider = nullptr;
    QSpinBox* m_spin = nullptr;
    QLabel* m_message = nullptr;
    std::vector<std::uint64_t> m_ladder;
    std::uint64_t m_min = 1;
    std::uint64_t m_max = 1;
    std::uint64_t m_value = 1;
};

} // namespace headroom::app
