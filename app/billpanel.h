#pragma once
// The Memory bill tab: one row per slice of the card at the chosen point (weights, each
// overhead, KV, free, the engine's reserve). Its model is BreakdownModel.

#include "headroom/core/plan.h"

#include <QTableView>

namespace headroom::app {

class BreakdownModel;

class BillPanel : public QTableView
{
    Q_OBJECT
public:
    explicit BillPanel(QWidget* parent = nullptr);

    void setPlan(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens);
    void clear();
    BreakdownModel* breakdown() const { return m_model; }

private:
    BreakdownModel* m_model = nullptr;
};

} // namespace headroom::app
