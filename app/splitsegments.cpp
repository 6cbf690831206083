#include "splitsegments.h"

namespace headroom::app {

namespace {

using Kind = BillSegment::Kind;

Kind kindOf(const SplitBillItem& item)
{
    if (item.name == "gpu_weights_bytes" || item.name == "host_weights_bytes")
        return Kind::Weights;
    if (item.name == "gpu_kv_buffer_bytes" || item.name == "host_kv_buffer_bytes")
        return Kind::Kv;
    return Kind::Overhead;
}

BillSegment segmentOf(const SplitBillItem& item)
{
    return {kindOf(item), QString::fromStdString(item.label), item.bytes, QString::fromStdString(item.note)};
}

} // namespace

std::vector<BillSegment> gpuSplitSegments(const PlanResult& plan, const SplitBill& bill)
{
    std::vector<BillSegment> out;
    if (bill.gpu.empty())
        return out;
    for (const SplitBillItem& item : bill.gpu)
        out.push_back(segmentOf(item));
    const Bytes used = bill.gpuBytes();
    out.push_back({Kind::Free, QStringLiteral("free"), saturatingSub(plan.usableBytes, used),
                   QStringLiteral("usable, not used by this split")});
    for (const OverheadItem& r : plan.reserved)
        out.push_back({Kind::Reserved, QString::fromStdString(r.name), r.bytes, QString::fromStdString(r.note)});
    if (used > plan.usableBytes)
        out.push_back({Kind::Over, QStringLiteral("over by"), saturatingSub(used, plan.usableBytes),
                       QStringLiteral("the GPU side beyond what the engine allows")});
    return out;
}

std::vector<BillSegment> hostSegments(const SplitBill& bill)
{
    std::vector<BillSegment> out;
    for (const SplitBillItem& item : bill.host) {
        BillSegment s = segmentOf(item);
        if (item.name == "host_weights_bytes" && bill.hostWeightsMapped)
            s.note += QStringLiteral("\nmapped file pages (mmap), not a copy: the OS reads them from the model file and "
                                     "may drop them under memory pressure (--no-mmap loads a copy instead)");
        out.push_back(std::move(s));
    }
    return out;
}

} // namespace headroom::app
