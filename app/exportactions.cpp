#include "exportactions.h"

#include "headroom/core/planjson.h"

#include <QFile>
#include <QSaveFile>
#include <QStringList>

#include <algorithm>

namespace headroom::app {

QString capacityReportJson(const ExportState& state)
{
    // planToJson/plansToJson give deterministic documents; wrap them without reparsing.
    QString text = QStringLiteral("{\n  \"schema_version\": 1,\n  \"detail\": ");
    text += state.hasDetail ? QString::fromStdString(planToJson(state.detail, -1)) : QStringLiteral("null");
    text += QStringLiteral(",\n  \"matrix\": ");
    text += QString::fromStdString(plansToJson(state.matrixPlans, -1));
    text += QStringLiteral("\n}\n");
    return text;
}

bool exportCapacityReport(const QString& path, const ExportState& state, QString* error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = file.errorString();
        return false;
    }
    file.write(capacityReportJson(state).toUtf8());
    if (!file.commit()) {
        if (error)
            *error = file.errorString();
        return false;
    }
    return true;
}

namespace {

QString vllmQuantization(const std::string& format)
{
    if (format == "awq-g128")
        return QStringLiteral("awq");
    if (format == "gptq-g128")
        return QStringLiteral("gptq");
    if (format == "fp8")
        return QStringLiteral("fp8");
    if (format.rfind("nf4", 0) == 0)
        return QStringLiteral("bitsandbytes");
    return {};
}

QString vllmKvDtype(const std::string& kv)
{
    if (kv == "fp16" || kv == "bf16")
        return QStringLiteral("auto");
    if (kv == "fp8" || kv == "fp8_e4m3" || kv == "fp8_e5m2")
        return QString::fromStdString(kv);
    return {};
}

QString llamaCacheType(const std::string& kv)
{
    if (kv == "fp16")
        return QStringLiteral("f16");
    if (kv == "fp32")
        return QStringLiteral("f32");
    if (kv == "bf16")
        return QStringLiteral("bf16");
    if (kv == "q8_0" || kv == "q4_0" || kv == "q4_1" || kv == "q5_0" || kv == "q5_1" || kv == "iq4_nl")
        return QString::fromStdString(kv);
    return {};
}

} // namespace

QString launchFlags(const PlanResult& plan, LaunchEngine engine)
{
    const QString model = QString::fromStdString(plan.modelId);
    const std::uint64_t users = std::max<std::uint64_t>(plan.users, 1);
    const std::uint64_t context = plan.contextTokens;
    QStringList comments;
    QStringList args;
    if (engine == LaunchEngine::Vllm) {
        args << QStringLiteral("vllm serve %1").arg(model) << QStringLiteral("--max-model-len %1").arg(context)
             << QStringLiteral("--max-num-seqs %1").arg(users)
             << QStringLiteral("--max-num-batched-tokens %1").arg(plan.ubatchTokens);
        // vLLM's own fraction: 1 - utilization_headroom / total (the plan's reserve outside usable).
        for (const OverheadItem& r : plan.reserved)
            if (r.name == "utilization_headroom" && plan.cardTotalBytes.value > 0)
                args << QStringLiteral("--gpu-memory-utilization %1")
                            .arg(1.0 - static_cast<double>(r.bytes.value) / static_cast<double>(plan.cardTotalBytes.value), 0, 'f', 2);
        if (plan.paging.blockTokens > 1)
            args << QStringLiteral("--block-size %1").arg(plan.paging.blockTokens);
        const QString quant = vllmQuantization(plan.formatId);
        if (!quant.isEmpty())
            args << QStringLiteral("--quantization %1").arg(quant);
        else if (plan.formatId != "fp16" && plan.formatId != "bf16")
            comments << QStringLiteral("# weights %1: serve a checkpoint already quantized to this layout")
                            .arg(QString::fromStdString(plan.formatId));
        const QString kv = vllmKvDtype(plan.kvDtypeId);
        if (!kv.isEmpty())
            args << QStringLiteral("--kv-cache-dtype %1").arg(kv);
        else
            comments << QStringLiteral("# KV dtype %1 has no vLLM equivalent").arg(QString::fromStdString(plan.kvDtypeId));
        if (plan.tensorParallel > 1)
            args << QStringLiteral("--tensor-parallel-size %1").arg(plan.tensorParallel);
        if (plan.pipelineParallel > 1)
            args << QStringLiteral("--pipeline-parallel-size %1").arg(plan.pipelineParallel);
    } else {
        // llama.cpp's -c is the total of all slots; each of -np slots gets c / np.
        args << QStringLiteral("llama-server -m %1.gguf").arg(model) << QStringLiteral("-c %1").arg(context * users)
             << QStringLiteral("-np %1").arg(users) << QStringLiteral("-ub %1").arg(plan.ubatchTokens)
             << QStringLiteral("-ngl 999") << QStringLiteral("-fa %1").arg(plan.flashAttention ? QStringLiteral("on") : QStringLiteral("off"));
        const QString kv = llamaCacheType(plan.kvDtypeId);
        if (!kv.isEmpty() && kv != QStringLiteral("f16"))
            args << QStringLiteral("--cache-type-k %1 --cache-type-v %1").arg(kv);
        else if (kv.isEmpty())
            comments << QStringLiteral("# KV dtype %1 has no llama.cpp cache type").arg(QString::fromStdString(plan.kvDtypeId));
        if (plan.tensorParallel * plan.pipelineParallel > 1)
            args << QStringLiteral("--split-mode layer");
    }
    QString out = comments.join(QLatin1Char('\n'));
    if (!out.isEmpty())
        out += QLatin1Char('\n');
    out += args.join(QStringLiteral(" \\\n  "));
    out += QLatin1Char('\n');
    return out;
}

} // namespace headroom::app
