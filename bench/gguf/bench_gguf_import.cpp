// Times Headroom's GGUF import (importModel: header, tensor table, architecture) of one file and
// prints one JSON line: median and minimum wall time over N runs, and the process's peak
// resident memory (VmHWM). bench/gguf/run.sh runs it beside the @huggingface/gguf peer.
//
//   bench_gguf_import FILE [RUNS]          time the import of FILE (default 20 runs)
//   bench_gguf_import --make-sparse FILE   write a llama-shaped header whose 20 f32 tensors of
//                                          32768 x 16384 (2 GiB each) make a sparse 42.9 GB file

#include "headroom/core/importers/importedmodel.h"

#include <headroom/formats/ggmltypes.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

long peakRssKiB()
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stol(line.substr(6));
    return -1;
}

void put32(std::vector<std::uint8_t>& b, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put64(std::vector<std::uint8_t>& b, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void putStr(std::vector<std::uint8_t>& b, const std::string& s)
{
    put64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
}

int makeSparse(const char* path)
{
    std::vector<std::uint8_t> b{'G', 'G', 'U', 'F'};
    put32(b, 3);
    const int tensors = 20;
    put64(b, tensors);
    put64(b, 4);
    putStr(b, "general.architecture");
    put32(b, 8);
    putStr(b, "llama");
    for (const char* k : {"llama.block_count", "llama.embedding_length", "llama.attention.head_count"}) {
        putStr(b, k);
        put32(b, 4);
        put32(b, std::strcmp(k, "llama.block_count") == 0 ? 20 : std::strcmp(k, "llama.embedding_length") == 0 ? 32768 : 64);
    }
    const std::uint64_t bytes = 32768ull * 16384 * 4;
    for (int i = 0; i < tensors; ++i) {
        putStr(b, "blk." + std::to_string(i) + ".ffn_up.weight");
        put32(b, 2);
        put64(b, 32768);
        put64(b, 16384);
        put32(b, 0);
        put64(b, static_cast<std::uint64_t>(i) * bytes);
    }
    const std::uint64_t dataStart = (b.size() + 31) / 32 * 32;
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
    if (::truncate(path, static_cast<off_t>(dataStart + tensors * bytes)) != 0) {
        std::perror("truncate");
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc >= 3 && std::strcmp(argv[1], "--make-sparse") == 0)
        return makeSparse(argv[2]);
    if (argc < 2) {
        std::cerr << "usage: bench_gguf_import FILE [RUNS] | --make-sparse FILE\n";
        return 1;
    }
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
    std::vector<double> ms;
    headroom::ImportedModel last;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto model = headroom::importModel(argv[1]);
        const auto t1 = std::chrono::steady_clock::now();
        if (!model) {
            std::cerr << headroom::toString(model.error()) << "\n";
            return 1;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        last = std::move(*model);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("{\"tool\":\"headroom\",\"file\":\"%s\",\"runs\":%d,\"median_ms\":%.3f,\"min_ms\":%.3f,"
                "\"peak_rss_kib\":%ld,\"tensors\":%llu,\"parameters\":%llu,\"metadata_hash\":\"%s\"}\n",
                argv[1], runs, ms[ms.size() / 2], ms.front(), peakRssKiB(),
                static_cast<unsigned long long>(last.tensorCount), static_cast<unsigned long long>(last.parameters),
                last.contentHash.c_str());
    return 0;
}
