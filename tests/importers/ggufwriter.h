#pragma once
// A small GGUF writer for tests only: builds valid files (any version, either byte order) and,
// through its raw hooks, one corrupt file per failure class of the reader.
// Layout per ggml docs/gguf.md: magic, version, tensor_count, kv_count, KVs, tensor infos,
// padding to the alignment, tensor data (each tensor padded to the alignment).

#include <headroom/formats/ggmltypes.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace headroom::test {

class GgufWriter {
public:
    std::uint32_t version = 3;      ///< 1 writes 32-bit counts, lengths and dims
    bool bigEndian = false;         ///< byte-swap every number (v3 big-endian files)
    std::uint64_t alignment = 32;   ///< used for padding (write general.alignment yourself to change the reader's)
    bool writeData = true;          ///< append zeroed tensor data (false: header + padding only)
    std::optional<std::uint64_t> tensorCountOverride; ///< lie about the tensor count
    std::optional<std::uint64_t> kvCountOverride;     ///< lie about the KV count
    std::string magic = "GGUF";

    // --- encoders (honour version and byte order) ---
    std::vector<std::uint8_t> u8(std::uint8_t v) const { return {v}; }
    std::vector<std::uint8_t> u16(std::uint16_t v) const { return num(v); }
    std::vector<std::uint8_t> u32(std::uint32_t v) const { return num(v); }
    std::vector<std::uint8_t> i32(std::int32_t v) const { return num(v); }
    std::vector<std::uint8_t> u64(std::uint64_t v) const { return num(v); }
    std::vector<std::uint8_t> f32(float v) const { return num(v); }
    /// A count or length: u32 in v1, u64 later.
    std::vector<std::uint8_t> count(std::uint64_t v) const
    {
        return version == 1 ? num(static_cast<std::uint32_t>(v)) : num(v);
    }
    std::vector<std::uint8_t> str(const std::string& s) const
    {
        auto out = count(s.size());
        out.insert(out.end(), s.begin(), s.end());
        return out;
    }

    // --- metadata ---
    /// A KV with an arbitrary type id and an already encoded payload.
    void kvRaw(const std::string& key, std::uint32_t type, std::vector<std::uint8_t> payload)
    {
        m_kvs.push_back({key, type, std::move(payload)});
    }
    void kvU32(const std::string& key, std::uint32_t v) { kvRaw(key, 4, u32(v)); }
    void kvI32(const std::string& key, std::int32_t v) { kvRaw(key, 5, i32(v)); }
    void kvU64(const std::string& key, std::uint64_t v) { kvRaw(key, 10, u64(v)); }
    void kvF32(const std::string& key, float v) { kvRaw(key, 6, f32(v)); }
    void kvBool(const std::string& key, bool v) { kvRaw(key, 7, u8(v ? 1 : 0)); }
    void kvString(const std::string& key, const std::string& v) { kvRaw(key, 8, str(v)); }
    void kvU32Array(const std::string& key, const std::vector<std::uint32_t>& v)
    {
        auto p = u32(4);
        append(p, count(v.size()));
        for (auto x : v)
            append(p, u32(x));
        kvRaw(key, 9, p);
    }
    void kvStringArray(const std::string& key, const std::vector<std::string>& v)
    {
        auto p = u32(8);
        append(p, count(v.size()));
        for (const auto& s : v)
            append(p, str(s));
        kvRaw(key, 9, p);
    }
    /// An array nested @p depth levels (depth 1 = a plain array of one u8).
    std::vector<std::uint8_t> nestedArray(int depth) const
    {
        if (depth <= 1) {
            auto p = u32(0);
            append(p, count(1));
            p.push_back(7);
            return p;
        }
        auto p = u32(9);
        append(p, count(1));
        append(p, nestedArray(depth - 1));
        return p;
    }

    // --- tensors ---
    /// A tensor info; its offset is the running padded offset unless @p offset is given.
    void tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type,
                std::optional<std::uint64_t> offset = std::nullopt)
    {
        const std::uint64_t bytes = tensorBytes(dims, type);
        m_tensors.push_back({name, std::move(dims), type, offset.value_or(m_nextOffset), bytes});
        m_nextOffset += (bytes + alignment - 1) / alignment * alignment;
    }
    /// ggml_nbytes from the formats table (0 for unsizable types).
    static std::uint64_t tensorBytes(const std::vector<std::uint64_t>& dims, std::uint32_t type)
    {
        const auto* t = formats::ggmlType(type);
        if (!t || t->blockSize == 0)
            return 0;
        std::uint64_t bytes = (dims.empty() ? 1 : dims[0]) / t->blockSize * t->typeSize;
        for (std::size_t i = 1; i < dims.size(); ++i)
            bytes *= dims[i];
        return bytes;
    }

    /// Bytes up to the end of the tensor infos.
    std::vector<std::uint8_t> header() const
    {
        std::vector<std::uint8_t> out(magic.begin(), magic.end());
        append(out, u32(version));
        append(out, count(tensorCountOverride.value_or(m_tensors.size())));
        append(out, count(kvCountOverride.value_or(m_kvs.size())));
        for (const auto& kv : m_kvs) {
            append(out, str(kv.key));
            append(out, u32(kv.type));
            append(out, kv.payload);
        }
        for (const auto& t : m_tensors) {
            append(out, str(t.name));
            append(out, u32(static_cast<std::uint32_t>(t.dims.size())));
            for (auto d : t.dims)
                append(out, version == 1 ? num(static_cast<std::uint32_t>(d)) : num(d));
            append(out, u32(t.type));
            append(out, u64(t.offset));
        }
        return out;
    }
    /// Offset of the data section (header padded to the alignment when there are tensors).
    std::uint64_t dataOffset() const
    {
        const std::uint64_t h = header().size();
        return m_tensors.empty() ? h : (h + alignment - 1) / alignment * alignment;
    }
    /// Bytes of the data section: last offset + last tensor's bytes.
    std::uint64_t dataBytes() const
    {
        return m_tensors.empty() ? 0 : m_tensors.back().offset + m_tensors.back().bytes;
    }
    /// The whole file (data zero-filled when writeData).
    std::vector<std::uint8_t> bytes() const
    {
        auto out = header();
        if (!m_tensors.empty() && writeData)
            out.resize(static_cast<std::size_t>(dataOffset() + dataBytes()), 0);
        return out;
    }

private:
    struct Kv {
        std::string key;
        std::uint32_t type;
        std::vector<std::uint8_t> payload;
    };
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> dims;
        std::uint32_t type;
        std::uint64_t offset;
        std::uint64_t bytes;
    };
    template <typename T> std::vector<std::uint8_t> num(T v) const
    {
        std::vector<std::uint8_t> out(sizeof(T));
        std::memcpy(out.data(), &v, sizeof(T));
        if (bigEndian)
            std::reverse(out.begin(), out.end());
        return out;
    }
    static void append(std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) { a.insert(a.end(), b.begin(), b.end()); }

    std::vector<Kv> m_kvs;
    std::vector<Tensor> m_tensors;
    std::uint64_t m_nextOffset = 0;
};

} // namespace headroom::test
