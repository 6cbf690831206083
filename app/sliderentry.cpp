#include "sliderentry.h"

#include <QGridLayout>
#include <QLocale>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <limits>

namespace headroom::app {

namespace {

// A spin box that lets a value out of range be typed in full, then refuses it with a message
// (QSpinBox alone swallows the digits beyond its maximum without a word).
class RangeSpinBox : public QSpinBox
{
public:
    explicit RangeSpinBox(QWidget* parent) : QSpinBox(parent) {}
    std::function<void(qlonglong)> onRejected;

    QValidator::State validate(QString& text, int& pos) const override
    {
        const std::optional<qlonglong> v = parse(text);
        if (v && (*v < minimum() || *v > maximum()))
            return QValidator::Intermediate;
        return QSpinBox::validate(text, pos);
    }

    void fixup(QString& input) const override
    {
        if (const std::optional<qlonglong> v = parse(input); v && (*v < minimum() || *v > maximum()) && onRejected)
            QMetaObject::invokeMethod(const_cast<RangeSpinBox*>(this), [f = onRejected, value = *v] { f(value); }, Qt::QueuedConnection);
        QSpinBox::fixup(input);
    }

private:
    std::optional<qlonglong> parse(QString text) const
    {
        text.remove(locale().groupSeparator());
        text = text.trimmed();
        bool ok = false;
        const qlonglong v = text.toLongLong(&ok);
        return ok ? std::optional<qlonglong>(v) : std::nullopt;
    }
};

} // namespace

SliderEntry::SliderEntry(const QString& label, std::uint64_t minimum, std::uint64_t maximum, std::uint64_t value, QWidget* parent)
    : QWidget(parent)
{
    m_label = new QLabel(label, this);
    m_slider = new QSlider(Qt::Horizontal, this);
    auto* spin = new RangeSpinBox(this);
    m_spin = spin;
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_message->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_message->hide();
    spin->onRejected = [this](qlonglong v) {
        m_message->setText(QStringLiteral("%1 is out of range: %2 to %3 here; kept %4")
                               .arg(QLocale().toString(v), QLocale().toString(static_cast<qulonglong>(m_min)),
                                    QLocale().toString(static_cast<qulonglong>(m_max)), QLocale().toString(static_cast<qulonglong>(m_value))));
        m_message->show();
    };
    m_spin->setKeyboardTracking(false);
    m_spin->setGroupSeparatorShown(true);
    m_spin->setAlignment(Qt::AlignRight);
    m_spin->setMinimumWidth(m_spin->fontMetrics().horizontalAdvance(QStringLiteral("1,048,576")) + 36);
    m_label->setBuddy(m_spin);
    m_slider->setAccessibleName(QString(label).remove(QLatin1Char('&')));
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_label, 0, 0);
    layout->addWidget(m_spin, 0, 1);
    layout->addWidget(m_slider, 1, 0, 1, 2);
    layout->addWidget(m_message, 2, 0, 1, 2);
    layout->setColumnStretch(0, 1);

    m_value = value;
    setRange(minimum, maximum);
    connect(m_slider, &QSlider::valueChanged, this, [this](int position) {
        if (position >= 0 && position < static_cast<int>(m_ladder.size()))
            commit(m_ladder[static_cast<std::size_t>(position)]);
    });
    connect(m_spin, &QSpinBox::valueChanged, this, [this](int v) { commit(static_cast<std::uint64_t>(std::max(v, 0))); });
}

void SliderEntry::rebuildLadder()
{
    m_ladder.clear();
    for (double octave = 1; octave <= static_cast<double>(m_max) * 2; octave *= 2) {
        for (double m : {1.0, 1.25, 1.5, 1.75}) {
            const auto v = static_cast<std::uint64_t>(std::llround(octave * m));
            if (v >= m_min && v <= m_max && (m_ladder.empty() || m_ladder.back() < v))
                m_ladder.push_back(v);
        }
    }
    if (m_ladder.empty() || m_ladder.front() != m_min)
        m_ladder.insert(m_ladder.begin(), m_min);
    if (m_ladder.back() != m_max)
        m_ladder.push_back(m_max);
}

void SliderEntry::setRange(std::uint64_t minimum, std::uint64_t maximum)
{
    constexpr std::uint64_t intMax = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
    m_min = std::max<std::uint64_t>(minimum, 0);
    m_max = std::min(std::max(maximum, m_min), intMax);
    rebuildLadder();
    {
        const QSignalBlocker b1(m_slider);
        const QSignalBlocker b2(m_spin);
        m_slider->setRange(0, static_cast<int>(m_ladder.size()) - 1);
        m_slider->setPageStep(4);
        m_spin->setRange(static_cast<int>(m_min), static_cast<int>(m_max));
    }
    const std::uint64_t clamped = std::clamp(m_value, m_min, m_max);
    if (clamped != m_value)
        commit(clamped);
    else
        showValue();
}

void SliderEntry::showValue()
{
    const QSignalBlocker b1(m_slider);
    const QSignalBlocker b2(m_spin);
    m_spin->setValue(static_cast<int>(m_value));
    // The ladder position at or below the value.
    const auto it = std::upper_bound(m_ladder.begin(), m_ladder.end(), m_value);
    m_slider->setValue(static_cast<int>(std::max<std::ptrdiff_t>(it - m_ladder.begin() - 1, 0)));
}

void SliderEntry::setValue(std::uint64_t value)
{
    commit(std::clamp(value, m_min, m_max));
}

void SliderEntry::commit(std::uint64_t value)
{
    value = std::clamp(value, m_min, m_max);
    const bool changed = value != m_value;
    if (changed)
        m_message->hide();
    m_value = value;
    showValue();
    if (changed)
        Q_EMIT valueChanged(m_value);
}

} // namespace headroom::app
