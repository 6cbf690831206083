// Text Generation Inference start-up lines (router/src/main.rs, launcher) at 2.x.
#include "enginelogshared.h"

namespace headroom::enginelog {

void readTgiLine(Parser& p, std::string_view l)
{
    const auto has = [&](std::string_view k) { return l.find(k) != std::string_view::npos; };
    if (has("text_generation_launcher") || has("text_generation_router"))
        p.vote("tgi", 2);
    if (has("Setting max batch total tokens to ")) {
        p.vote("tgi", 2);
        p.count("max_batch_total_tokens", numberAfter(l, "Setting max batch total tokens to "), LogUnit::Tokens);
    }
    if (const auto at = l.find("cuda graphs ["); at != std::string_view::npos) {
        const auto close = l.find(']', at);
        if (close != std::string_view::npos)
            p.setting("cuda-graphs", std::string(l.substr(at + 13, close - at - 13)));
    }
    if (has("text_generation_launcher: Args {") || has("Args { "))
        if (const auto at = l.find('{'); at != std::string_view::npos)
            readKeyValues(p, l.substr(at + 1));
    if (const auto at = l.find("version: \""); at != std::string_view::npos && has("text_generation"))
        p.version(wordAfter(l, "version: \""), "tgi");
}

} // namespace headroom::enginelog
