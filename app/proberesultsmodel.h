#pragma once
// Predicted against measured, one row per checked quantity, with its verdict: pass or FAIL
// (coloured) against a stated criterion; "not supported", "cancelled" or "measured" (no criterion,
// e.g. a calibration row) apart, uncoloured.

#include "probebackend.h"

#include <QAbstractTableModel>

namespace headroom::app {

class ProbeResultsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Probe, Quantity, Predicted, Measured, Difference, Verdict, Note, ColumnCount };
    enum Role { RawRole = Qt::UserRole };

    explicit ProbeResultsModel(QObject* parent = nullptr);

    void setRows(std::vector<ProbeRow> rows);
    const std::vector<ProbeRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// "12,288 B (12.00 KiB)", "31,600 tokens", "1.25 ms", "6.80 GB/s", "24.8 GFLOP/s".
    static QString valueText(ProbeUnit unit, std::uint64_t value);
    /// "pass", "FAIL", "not supported", "cancelled", "measured".
    static QString verdictText(ProbeVerdict verdict);

private:
    std::vector<ProbeRow> m_rows;
};

} // namespace headroom::app
