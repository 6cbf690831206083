// The link between the ranks (core/interconnect.h): its spellings, the card profiles' defaults,
// the `interconnect` setting and its errors, and what each link prices at TP > 1: vLLM's non-torch
// increase per rank (engines/vllmmemory.h nonTorchTensorParallelBytes) and SGLang's distributed
// init ("Init torch distributed ends. mem usage=X GB": 0.13 on 4 x L4, 2.01 on 8 x H200 NVSwitch).

#include "archfixtures.h"
#include "fixtures.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/engines/vllmmemory.h"
#include "headroom/core/interconnect.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

constexpr double kGiBd = 1073741824.0;

ProfileSet builtin()
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    INFO((set ? std::string() : toString(set.error())));
    REQUIRE(set);
    return *set;
}

PlanRequest request(const ProfileSet& set, const std::string& engine, const std::string& card,
                    std::vector<EngineSetting> settings)
{
    PlanRequest r;
    const Architecture arch = test::llama31_8b();
    r.model.id = arch.family;
    r.model.architecture = arch;
    r.format = *findFormat("bf16");
    r.kvDtype = *findKvDtype("bf16");
    const Card* c = set.findCard(card);
    REQUIRE(c);
    r.card = *c;
    auto e = resolveEngine(engine, set);
    INFO(engine << ": " << (e ? std::string() : e.error()));
    REQUIRE(e);
    r.engine = *e;
    r.engineSettings = std::move(settings);
    return r;
}

const OverheadItem* findItem(const PlanResult& p, const std::string& name)
{
    for (const OverheadItem& i : p.overheads)
        if (i.name == name)
            return &i;
    return nullptr;
}

std::string settingText(const PlanResult& p, const std::string& key)
{
    for (const SettingValue& v : p.engineSettings)
        if (v.key == key)
            return v.text;
    return {};
}

} // namespace

TEST_CASE("Interconnect names parse and print both ways", "[interconnect]")
{
    for (Interconnect link : {Interconnect::NvSwitch, Interconnect::NvLink, Interconnect::PciePeer, Interconnect::Pcie,
                              Interconnect::Network}) {
        const auto back = parseInterconnect(interconnectName(link));
        REQUIRE(back);
        CHECK(*back == link);
    }
    CHECK(interconnectNames() == std::vector<std::string>{"nvswitch", "nvlink", "pcie-p2p", "pcie", "network"});
    CHECK_FALSE(parseInterconnect("NVSwitch")); // case-sensitive, as the setting's choices
    CHECK_FALSE(parseInterconnect("infiniband"));
    CHECK_FALSE(parseInterconnect(""));
    CHECK(kDefaultInterconnect == Interconnect::NvSwitch);
}

TEST_CASE("Card profiles carry the link of a multi-GPU node", "[interconnect]")
{
    const ProfileSet set = builtin();
    const auto linkOf = [&](const char* id) {
        const Card* c = set.findCard(id);
        REQUIRE(c);
        return c->interconnect;
    };
    CHECK(linkOf("h100-sxm") == Interconnect::NvSwitch);
    CHECK(linkOf("h200") == Interconnect::NvSwitch);
    CHECK(linkOf("a100-80gb") == Interconnect::NvSwitch);
    CHECK(linkOf("v100-32gb") == Interconnect::NvLink);
    CHECK(linkOf("l40s") == Interconnect::Pcie);
    CHECK(linkOf("l4") == Interconnect::Pcie);
    CHECK(linkOf("rtx-4090") == Interconnect::Pcie);
    CHECK_FALSE(linkOf("mi300x")); // not an NCCL node: no link, the default applies
    CHECK_FALSE(anonymousCard("80GiB", Bytes{80ull << 30}).interconnect);
}

TEST_CASE("vLLM non-torch increase per rank at TP > 1 by link", "[interconnect][vllm]")
{
    using vllm::nonTorchBytes;
    const Bytes single10{139'586'437}; // vllm-0.9 profile: 0.13 GiB
    const Bytes single19{268'435'456}; // vllm profile: 0.25 GiB
    const auto gib = [](Bytes b) { return static_cast<double>(b.value) / kGiBd; };

    // NVSwitch: vLLM's printed H100 figures; NVLink without a switch takes them as an upper bound.
    CHECK(gib(nonTorchBytes("0.19.0", 2, 1, single19, Interconnect::NvSwitch)) == Approx(2.1).margin(0.001));
    CHECK(gib(nonTorchBytes("0.10.1.1", 2, 1, single10, Interconnect::NvSwitch)) == Approx(0.55).margin(0.001));
    CHECK(nonTorchBytes("0.19.0", 4, 1, single19, Interconnect::NvLink)
          == nonTorchBytes("0.19.0", 4, 1, single19, Interconnect::NvSwitch));
    // The default link is NVSwitch.
    CHECK(nonTorchBytes("0.19.0", 2, 1, single19) == nonTorchBytes("0.19.0", 2, 1, single19, Interconnect::NvSwitch));

    // No P2P, or across nodes: NCCL's buffers in host memory, the single-GPU figure.
    CHECK(nonTorchBytes("0.10.1.1", 2, 1, single10, Interconnect::Pcie) == single10);
    CHECK(nonTorchBytes("0.10.1.1", 2, 1, single10, Interconnect::Network) == single10);
    CHECK(nonTorchBytes("0.24.0", 4, 1, single19, Interconnect::Pcie) == single19);

    // P2P over PCIe: + NCCL's P2P buffers of two channels, (512 KiB + 4,800 KiB + 4 MiB) each
    // = 18,816 KiB, + the custom all-reduce's two 8 MiB IPC buffers at TP 2 only.
    constexpr std::uint64_t nccl = 2ull * (524'288 + 4'915'200 + 4'194'304);
    CHECK(nccl == 18'816ull * 1024);
    CHECK(nonTorchBytes("0.19.0", 2, 1, single19, Interconnect::PciePeer).value == single19.value + nccl + (16ull << 20));
    CHECK(nonTorchBytes("0.19.0", 4, 1, single19, Interconnect::PciePeer).value == single19.value + nccl);

    // One rank, PP alone and the V0 rule do not depend on the link.
    CHECK(nonTorchBytes("0.19.0", 1, 1, single19, Interconnect::Pcie) == single19);
    CHECK(gib(nonTorchBytes("0.19.0", 1, 2, single19, Interconnect::Pcie)) == Approx(0.07).margin(0.001));
    CHECK(nonTorchBytes("0.8.5", 4, 1, single19, Interconnect::NvSwitch) == single19); // TotalPeak
}

TEST_CASE("The interconnect setting overrides the card's link and names it in the bill", "[interconnect]")
{
    const ProfileSet set = builtin();

    // vLLM on H100 SXM at TP 2: the profile's nvswitch, 2.1 GiB per rank.
    PlanRequest h100 = request(set, "vllm", "h100-sxm", {{"tensor-parallel-size", "2"}});
    auto p = makePlan(h100);
    REQUIRE(p);
    const OverheadItem* nonTorch = findItem(*p, "non_torch");
    REQUIRE(nonTorch);
    CHECK(static_cast<double>(nonTorch->bytes.value) / kGiBd == Approx(2.1).margin(0.001));
    CHECK(nonTorch->note.find("interconnect=nvswitch (the h100-sxm profile's)") != std::string::npos);
    CHECK(settingText(*p, "interconnect") == "nvswitch");

    // The same node set to pcie: the single-GPU figure, the setting named in the note.
    h100.engineSettings.push_back({"interconnect", "pcie"});
    auto q = makePlan(h100);
    REQUIRE(q);
    nonTorch = findItem(*q, "non_torch");
    REQUIRE(nonTorch);
    CHECK(nonTorch->bytes == h100.engine.runtimeBytes);
    CHECK(nonTorch->note.find("interconnect=pcie (set)") != std::string::npos);
    // 2.1 GiB - 0.25 GiB more for the pool.
    CHECK(static_cast<double>(q->kvBudgetBytes.value - p->kvBudgetBytes.value) / kGiBd == Approx(1.85).margin(0.01));

    // One rank: no link in the settings.
    auto one = makePlan(request(set, "vllm", "l40s", {}));
    REQUIRE(one);
    CHECK(settingText(*one, "interconnect").empty());

    // SGLang's distributed init: 0.13 GB on PCIe L40S, 2.01 GB on an NVSwitch H100 node.
    auto l40s = makePlan(request(set, "sglang", "l40s", {{"tp", "2"}}));
    REQUIRE(l40s);
    const OverheadItem* init = findItem(*l40s, "distributed_init");
    REQUIRE(init);
    CHECK(init->bytes.value == 139'586'437);
    CHECK(init->note.find("interconnect=pcie (the l40s profile's)") != std::string::npos);
    auto sxm = makePlan(request(set, "sglang", "h100-sxm", {{"tp", "4"}}));
    REQUIRE(sxm);
    init = findItem(*sxm, "distributed_init");
    REQUIRE(init);
    CHECK(static_cast<double>(init->bytes.value) / kGiBd == Approx(2.01).margin(0.001));
    // Not scaled by the ranks of the node: SGLang turns NCCL's NVLS off unless --enable-nccl-nvls
    // (entrypoints/engine.py _set_envs_and_config), and the P2P buffers are per ring/tree neighbour,
    // so TP 2 and TP 8 price the TP-8 figure as TP 4 does.
    for (const char* tp : {"2", "8"}) {
        auto other = makePlan(request(set, "sglang", "h100-sxm", {{"tp", tp}}));
        REQUIRE(other);
        const OverheadItem* same = findItem(*other, "distributed_init");
        REQUIRE(same);
        CHECK(same->bytes == init->bytes);
    }
    auto network = makePlan(request(set, "sglang", "h100-sxm", {{"tp", "4"}, {"interconnect", "network"}}));
    REQUIRE(network);
    init = findItem(*network, "distributed_init");
    REQUIRE(init);
    CHECK(init->bytes.value == 139'586'437);
}

TEST_CASE("A bad interconnect value is an error naming the choices", "[interconnect]")
{
    const ProfileSet set = builtin();
    for (const char* engine : {"vllm", "sglang"}) {
        auto p = makePlan(request(set, engine, "h100-sxm", {{"interconnect", "infiniband"}}));
        REQUIRE_FALSE(p);
        INFO(p.error());
        CHECK(p.error().find("'interconnect'") != std::string::npos);
        CHECK(p.error().find("infiniband") != std::string::npos);
        CHECK(p.error().find("pcie-p2p") != std::string::npos);
    }
    // Case-sensitive: the choices are spelled as interconnectName writes them.
    auto parsed = parseEngineSettings(engineFor(EngineKind::Vllm).settings(), {}, {{"interconnect", "NVLink"}}, "vLLM");
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().find("nvlink") != std::string::npos);
}
