#include "headroom/core/weightformat.h"

#include "headroom/core/ggufpreset.h"
#include "headroom/formats/ggmltypes.h"

#include <algorithm>
#include <cctype>

namespace headroom {

namespace {

WeightFormat floatFormat(const char* id, std::uint32_t bits, const char* description)
{
    WeightFormat f;
    f.id = id;
    f.description = description;
    f.kind = FormatKind::Float;
    f.bits = bits;
    f.smallTensorBytes = bits / 8;
    f.quantizesEmbeddings = true;
    return f;
}

WeightFormat symmetricFormat(std::uint32_t bits, ScaleGranularity granularity, std::uint32_t group)
{
    WeightFormat f;
    f.kind = FormatKind::SymmetricInt;
    f.bits = bits;
    f.granularity = granularity;
    f.groupSize = group;
    f.scaleBytes = 2; // one fp16 scale (BRIEF §1.2: "int4 with one fp16 scale per group of 128")
    f.smallTensorBytes = 2;
    f.quantizesEmbeddings = false;
    const std::string b = std::to_string(bits);
    switch (granularity) {
    case ScaleGranularity::Tensor:
        f.id = "int" + b;
        f.description = "symmetric absmax int" + b + ", one fp16 scale per tensor";
        break;
    case ScaleGranularity::Row:
        f.id = "int" + b + "-row";
        f.description = "symmetric absmax int" + b + ", one fp16 scale per row";
        break;
    case ScaleGranularity::Group:
        f.id = "int" + b + "-g" + std::to_string(group);
        f.description = "symmetric absmax int" + b + ", one fp16 scale per group of " + std::to_string(group);
        break;
    }
    return f;
}

WeightFormat nf4Format(const char* id, std::uint32_t scaleBytes, bool doubleQuant, const char* description)
{
    WeightFormat f;
    f.id = id;
    f.description = description;
    f.kind = FormatKind::Nf4;
    f.bits = 4;
    f.granularity = ScaleGranularity::Group;
    f.groupSize = 64;
    f.scaleBytes = scaleBytes;
    f.doubleQuant = doubleQuant;
    f.smallTensorBytes = 2;
    f.quantizesEmbeddings = false;
    return f;
}

WeightFormat gptqAwqFormat(const char* id, bool groupIndex, const char* description)
{
    WeightFormat f;
    f.id = id;
    f.description = description;
    f.kind = FormatKind::GptqAwq;
    f.bits = 4;
    f.granularity = ScaleGranularity::Group;
    f.groupSize = 128;
    f.scaleBytes = 2;
    f.zeroBits = 4;
    f.groupIndex = groupIndex;
    f.smallTensorBytes = 2;
    f.quantizesEmbeddings = false;
    return f;
}

// llama-quantize presets; ids are the lower-case names, "gguf-" prefixed where a GGML type has it.
void appendGgufPresets(std::vector<WeightFormat>& v)
{
    const std::size_t plainCount = v.size();
    for (const GgufPreset& p : ggufPresets()) {
        const formats::GgmlType* t = formats::ggmlType(p.defaultType);
        WeightFormat f;
        f.id = ggufPresetId(p);
        for (std::size_t i = 0; i < plainCount; ++i)
            if (v[i].id == asciiLower(p.name)) // a dated rule is prefixed as its undated preset is
                f.id = "gguf-" + f.id;
        f.description = std::string("GGUF ") + p.name
            + (p.rulesBuild != 0 ? " as llama-quantize wrote it at build " + std::to_string(p.rulesBuild) + ": "
                                 : std::string(" as llama-quantize writes it: "))
            + t->name + " with the quantizer's per-tensor upgrades (output, attn_v, ffn_down, ...)";
        f.ggufRulesBuild = p.rulesBuild;
        f.kind = FormatKind::Ggml;
        f.bits = 0;
        f.ggmlType = t->id;
        f.ggmlBlockSize = t->blockSize;
        f.ggmlTypeSize = t->typeSize;
        f.ggufFileType = p.fileType;
        f.smallTensorBytes = 4;
        f.quantizesEmbeddings = true;
        v.push_back(f);
    }
}

std::vector<WeightFormat> makeBuiltins()
{
    std::vector<WeightFormat> v;
    v.push_back(floatFormat("fp32", 32, "IEEE float32"));
    v.push_back(floatFormat("fp16", 16, "IEEE float16"));
    v.push_back(floatFormat("bf16", 16, "bfloat16"));
    {
        WeightFormat f;
        f.id = "fp8";
        f.description = "float8 e4m3 with one fp32 scale per tensor (vLLM fp8; lm_head and embeddings stay fp16)";
        f.kind = FormatKind::Fp8;
        f.bits = 8;
        f.scaleBytes = 4;
        f.smallTensorBytes = 2;
        f.quantizesEmbeddings = false;
        v.push_back(f);
    }
    v.push_back(symmetricFormat(8, ScaleGranularity::Tensor, 0));
    v.push_back(symmetricFormat(8, ScaleGranularity::Row, 0));
    v.push_back(symmetricFormat(4, ScaleGranularity::Tensor, 0));
    v.push_back(symmetricFormat(4, ScaleGranularity::Row, 0));
    for (std::uint32_t g : {32u, 64u, 128u})
        v.push_back(symmetricFormat(4, ScaleGranularity::Group, g));
    v.push_back(nf4Format("nf4-b64", 2, false, "NF4 code book, one fp16 absmax per 64 weights"));
    v.push_back(nf4Format("nf4-bnb", 4, false, "bitsandbytes NF4, one fp32 absmax per 64 weights"));
    v.push_back(nf4Format("nf4-bnb-dq", 4, true,
                          "bitsandbytes NF4 with double quantization (8-bit absmax per 64, fp32 per 256 blocks)"));
    v.push_back(gptqAwqFormat("gptq-g128", true, "GPTQ 4-bit, fp16 scales and 4-bit zeros per 128, g_idx"));
    v.push_back(gptqAwqFormat("awq-g128", false, "AWQ 4-bit, fp16 scales and 4-bit zeros per 128"));
    for (const auto& t : formats::kGgmlTypes) {
        if (t.blockSize == 0 || !t.quantized)
            continue;
        WeightFormat f;
        f.id = asciiLower(t.name);
        f.description = std::string("GGML ") + t.name + ": " + std::to_string(t.typeSize) + " B per "
            + std::to_string(t.blockSize) + " weights";
        f.kind = FormatKind::Ggml;
        f.bits = 0;
        f.ggmlType = t.id;
        f.ggmlBlockSize = t.blockSize;
        f.ggmlTypeSize = t.typeSize;
        f.smallTensorBytes = 4; // GGUF files keep norms and biases in f32
        f.quantizesEmbeddings = true;
        v.push_back(f);
    }
    appendGgufPresets(v);
    return v;
}

} // namespace

double WeightFormat::bitsPerWeight() const
{
    switch (kind) {
    case FormatKind::Float:
    case FormatKind::Fp8:
        return bits;
    case FormatKind::SymmetricInt:
        return granularity == ScaleGranularity::Group ? bits + 8.0 * scaleBytes / groupSize : bits;
    case FormatKind::Nf4:
        if (doubleQuant) // QLoRA §3: 8-bit absmax per block of 64, fp32 per 256 absmax blocks
            return bits + 8.0 / groupSize + 32.0 / (groupSize * 256.0);
        return bits + 8.0 * scaleBytes / groupSize;
    case FormatKind::GptqAwq:
        return bits + (8.0 * scaleBytes + zeroBits) / groupSize;
    case FormatKind::Ggml:
        return 8.0 * ggmlTypeSize / ggmlBlockSize;
    }
    return bits;
}

double WeightFormat::nominalBitsPerWeight() const { return bitsPerWeight(); }

bool ggmlRowAligned(const WeightFormat& format, std::uint64_t cols)
{
    return format.kind != FormatKind::Ggml || cols % format.ggmlBlockSize == 0;
}

Bytes matrixBytes(const WeightFormat& f, std::uint64_t rows, std::uint64_t cols)
{
    const std::uint64_t n = checkedMul(rows, cols, "tensor elements");
    switch (f.kind) {
    case FormatKind::Float:
        return Bytes{checkedMul(n, f.bits / 8, "tensor bytes")};
    case FormatKind::Fp8:
        return Bytes{checkedAdd(n, f.scaleBytes, "tensor bytes")};
    case FormatKind::SymmetricInt: {
        std::uint64_t scales = 1;
        std::uint64_t data = 0;
        if (f.granularity == ScaleGranularity::Tensor) {
            data = ceilDiv(checkedMul(n, f.bits, "bits"), 8);
        } else {
            data = checkedMul(rows, ceilDiv(checkedMul(cols, f.bits, "bits"), 8), "tensor bytes");
            scales = f.granularity == ScaleGranularity::Row ? rows : checkedMul(rows, ceilDiv(cols, f.groupSize));
        }
        return Bytes{checkedAdd(data, checkedMul(scales, f.scaleBytes), "tensor bytes")};
    }
    case FormatKind::Nf4: {
        // bitsandbytes quantizes the flattened tensor in blocks of 64 (QLoRA §3).
        const std::uint64_t data = ceilDiv(n, 2);
        const std::uint64_t blocks = ceilDiv(n, f.groupSize);
        const std::uint64_t absmax = f.doubleQuant ? checkedAdd(blocks, checkedMul(ceilDiv(blocks, 256), 4))
                                                   : checkedMul(blocks, f.scaleBytes);
        return Bytes{checkedAdd(data, absmax, "tensor bytes")};
    }
    case FormatKind::GptqAwq: {
        // qweight int32 [K/8, N], scales fp16 [K/g, N], qzeros int32 [K/g, N/8], g_idx int32 [K]
        // with K = cols (input features) and N = rows (output features).
        const std::uint64_t data = checkedMul(rows, ceilDiv(checkedMul(cols, f.bits), 8), "tensor bytes");
        const std::uint64_t groups = ceilDiv(cols, f.groupSize);
        const std::uint64_t scales = checkedMul(checkedMul(groups, rows), f.scaleBytes);
        const std::uint64_t zeros = checkedMul(groups, ceilDiv(checkedMul(rows, f.zeroBits), 8));
        const std::uint64_t gidx = f.groupIndex ? checkedMul(cols, 4) : 0;
        return Bytes{checkedAdd(checkedAdd(data, scales), checkedAdd(zeros, gidx), "tensor bytes")};
    }
    case FormatKind::Ggml:
        // ggml_row_size(type, ne0) * ne1 (ggml.c); callers check ggmlRowAligned first.
        return Bytes{checkedMul(rows, checkedMul(ceilDiv(cols, f.ggmlBlockSize), f.ggmlTypeSize), "tensor bytes")};
    }
    return Bytes{};
}

Bytes smallTensorBytes(const WeightFormat& format, std::uint64_t elements)
{
    return Bytes{checkedMul(elements, format.smallTensorBytes, "tensor bytes")};
}

const std::vector<WeightFormat>& builtinFormats()
{
    static const std::vector<WeightFormat> formats = makeBuiltins();
    return formats;
}

std::optional<WeightFormat> findFormat(std::string_view idText)
{
    std::string id = asciiLower(idText);
    if (id == "f32" || id == "float32")
        id = "fp32";
    else if (id == "f16" || id == "float16" || id == "half")
        id = "fp16";
    else if (id == "bfloat16")
        id = "bf16";
    else if (id == "fp8_e4m3" || id == "fp8-e4m3" || id == "float8")
        id = "fp8";
    else if (id == "int4-g" || id == "int4_g128")
        id = "int4-g128";
    for (const WeightFormat& f : builtinFormats())
        if (f.id == id)
            return f;
    if (id.rfind("gguf-", 0) == 0)
        for (const WeightFormat& f : builtinFormats())
            if (f.ggufFileType != 0 && f.id == id.substr(5))
                return f;
    // int4-gN / int8-gN for any power-of-two N from 8 to 4096.
    for (std::uint32_t bits : {4u, 8u}) {
        const std::string prefix = "int" + std::to_string(bits) + "-g";
        if (id.rfind(prefix, 0) != 0)
            continue;
        const std::string digits = id.substr(prefix.size());
        if (digits.empty() || digits.size() > 4
            || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            return std::nullopt;
        const auto g = static_cast<std::uint32_t>(std::stoul(digits));
        if (g < 8 || g > 4096 || (g & (g - 1)) != 0)
            return std::nullopt;
        return symmetricFormat(bits, ScaleGranularity::Group, g);
    }
    return std::nullopt;
}

} // namespace headroom
