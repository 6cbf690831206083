// libFuzzer target: the engine start-up log parser (issue 14: vLLM, SGLang, TGI, TensorRT-LLM,
// llama.cpp, Ollama lines), its summary and its term look-ups.

#include <headroom/core/enginelog/enginelog.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto log = headroom::parseEngineLog(text);
    if (log) {
        (void)log->summary();
        (void)log->value("weights");
        (void)log->sumOverDevices("kv_buffer");
    }
    (void)headroom::stripAnsi(text.substr(0, 4096));
    return 0;
}
