#include "headroom/core/report/reportdocument.h"

#include "headroom/core/safetext.h"
#include "headroom/core/units.h"
#include "headroom/core/verdict.h"

#include "reportjson.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace headroom::report {

using nlohmann::json;

namespace {

constexpr const char* kDash = "-";

std::string thousands(const json& v) { return v.is_number_unsigned() || v.is_number_integer() ? formatThousands(v.get<std::uint64_t>()) : v.dump(); }

std::string bytesText(std::uint64_t b) { return formatBytes(Bytes{b}); }

std::string number(double v)
{
    char buf[64];
    if (std::fabs(v) >= 1000 && std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1.8e19)
        return formatThousands(static_cast<std::uint64_t>(std::llround(std::fabs(v))));
    if (std::fabs(v) >= 100)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (std::fabs(v) >= 1 || v == 0)
        std::snprintf(buf, sizeof buf, "%.2f", v);
    else
        std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

// A value of a probe or device record, formatted by the unit its key ends in.
std::string valueWithUnit(const std::string& key, const json& v)
{
    if (v.is_boolean())
        return v.get<bool>() ? "yes" : "no";
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_null())
        return kDash;
    if (!v.is_number())
        return v.dump();
    const auto endsWith = [&](const char* suffix) {
        const std::string s(suffix);
        return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
    };
    if (endsWith("bytes") && (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)))
        return formatThousands(v.get<std::uint64_t>()) + " B (" + bytesText(v.get<std::uint64_t>()) + ")";
    if (endsWith("bytes") && v.is_number_integer())
        return "-" + formatThousands(static_cast<std::uint64_t>(-v.get<std::int64_t>())) + " B";
    const double d = v.get<double>();
    const bool integer = v.is_number_integer() || v.is_number_unsigned();
    if (integer && !endsWith("tokens") && !endsWith("_ms") && !endsWith("gbps"))
        return v.is_number_unsigned() || v.get<std::int64_t>() >= 0 ? formatThousands(v.get<std::uint64_t>())
                                                                     : "-" + formatThousands(static_cast<std::uint64_t>(-v.get<std::int64_t>()));
    if (endsWith("tokens"))
        return number(d) + " tokens";
    if (endsWith("_ms"))
        return number(d) + " ms";
    if (endsWith("gbps"))
        return number(d) + " GB/s";
    if (endsWith("fraction") || endsWith("ratio"))
        return number(d);
    if (endsWith("percent"))
        return number(d) + " %";
    return number(d);
}

std::string planLabel(const json& p)
{
    return p["model"].get<std::string>() + " · " + p["weights_format"].get<std::string>() + " · " + p["card"].get<std::string>();
}

std::string joinUnique(const json& items, const char* key, const std::string& sep = ", ")
{
    std::vector<std::string> seen;
    for (const json& i : items) {
        const std::string v = i[key].get<std::string>();
        if (std::find(seen.begin(), seen.end(), v) == seen.end())
            seen.push_back(v);
    }
    std::string out;
    for (const std::string& s : seen)
        out += (out.empty() ? "" : sep) + s;
    return out;
}

Block paragraph(std::string text)
{
    Block b;
    b.kind = Block::Kind::Paragraph;
    b.text = std::move(text);
    return b;
}

// A long shell line broken before its options, with " \\" continuations, so that it reads (and
// prints) without running off the page; pasted into a shell it is the same command.
std::string wrapCommand(const std::string& text, std::size_t width = 84)
{
    std::string out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        const std::string line = text.substr(start, end - start);
        if (!out.empty())
            out += "\n";
        if (line.size() <= width || line.rfind("#", 0) == 0) {
            out += line;
        } else {
            // Words; an option and its value stay together.
            std::vector<std::string> words;
            std::size_t at = 0;
            while (at < line.size()) {
                const std::size_t next = line.find(' ', at);
                words.push_back(line.substr(at, next == std::string::npos ? std::string::npos : next - at));
                at = next == std::string::npos ? line.size() : next + 1;
            }
            std::vector<std::string> groups;
            for (const std::string& w : words) {
                if (!groups.empty() && !w.empty() && w[0] != '-' && !groups.back().empty() && groups.back()[0] == '-'
                    && groups.back().find(' ') == std::string::npos)
                    groups.back() += " " + w;
                else
                    groups.push_back(w);
            }
            std::string current;
            for (const std::string& g : groups) {
                if (!current.empty() && current.size() + 1 + g.size() > width - 2) {
                    out += current + " \\\n";
                    current = "    " + g;
                } else {
                    current += (current.empty() ? "" : " ") + g;
                }
            }
            out += current;
        }
        start = end + 1;
    }
    return out;
}

Block code(std::string text)
{
    Block b;
    b.kind = Block::Kind::Code;
    b.text = wrapCommand(text);
    return b;
}

Block tableBlock(Table t)
{
    Block b;
    b.kind = Block::Kind::Table;
    b.table = std::move(t);
    return b;
}

Block chartBlock(Chart c)
{
    Block b;
    b.kind = Block::Kind::Chart;
    b.chart = std::move(c);
    return b;
}

Table makeTable(std::string caption, std::vector<std::string> header, std::vector<bool> numeric)
{
    Table t;
    t.caption = std::move(caption);
    t.header = std::move(header);
    t.numeric = std::move(numeric);
    return t;
}

void addRow(Table& t, std::vector<std::string> row, std::vector<CellStatus> status = {})
{
    if (status.empty())
        status.assign(row.size(), CellStatus::Plain);
    t.rows.push_back(std::move(row));
    t.status.push_back(std::move(status));
}

Section inputsSection(const json& doc)
{
    Section s;
    s.heading = "Inputs";
    const json& in = doc["inputs"];

    Table models = makeTable("Models", {"model", "name", "parameters", "read from", "files hash"}, {false, false, true, false, false});
    for (const json& m : in["models"]) {
        // A built-in profile's provenance notes are for its maintainers; the report says what it is.
        const bool builtIn = m["content_hash"].get<std::string>().empty();
        addRow(models, {m["id"].get<std::string>(), m["name"].get<std::string>(),
                        formatCount(m["parameters"].get<std::uint64_t>()) + " (" + m.value("parameters_source", std::string()) + ")",
                        builtIn ? std::string("built-in profile") : m["source"].get<std::string>(),
                        builtIn ? std::string(kDash) : m["content_hash"].get<std::string>()});
    }
    s.blocks.push_back(tableBlock(models));

    Table cards = makeTable("Cards (driver-reported totals)", {"card", "name", "total bytes", "total", "bandwidth"},
                            {false, false, true, true, true});
    for (const json& c : in["cards"]) {
        const double bw = c.value("bandwidth_gbps", 0.0);
        addRow(cards, {c["id"].get<std::string>(), c["name"].get<std::string>().empty() ? "anonymous card" : c["name"].get<std::string>(),
                       thousands(c["total_bytes"]), bytesText(c["total_bytes"].get<std::uint64_t>()),
                       bw > 0 ? number(bw) + " GB/s" : std::string(kDash)});
    }
    s.blocks.push_back(tableBlock(cards));

    Table engines = makeTable("Engine policies", {"engine", "version", "memory fraction", "kept free", "runtime", "KV block"},
                              {false, false, true, true, true, true});
    for (const json& e : in["engines"]) {
        addRow(engines, {e["name"].get<std::string>(), e["version"].get<std::string>(), number(e.value("memory_fraction", 1.0)),
                         bytesText(e.value("fixed_reserve_bytes", std::uint64_t{0})),
                         bytesText(e.value("runtime_bytes", std::uint64_t{0})),
                         formatThousands(e.value("block_tokens", std::uint64_t{1})) + " tokens"});
    }
    s.blocks.push_back(tableBlock(engines));

    std::string formats;
    for (const json& f : in["weights_formats"])
        formats += (formats.empty() ? "" : "; ") + f["id"].get<std::string>()
            + (f.value("description", std::string()).empty() ? "" : " (" + f["description"].get<std::string>() + ")");
    std::string kv;
    for (const json& k : in["kv_dtypes"])
        kv += (kv.empty() ? "" : "; ") + k["id"].get<std::string>() + " (" + number(k["bytes_per_value"].get<double>()) + " B/value)";
    s.blocks.push_back(paragraph("Weight formats: " + formats + ". KV cache: " + kv + "."));
    return s;
}

// The what-fits cell as core's verdict prints it (verdict.h verdictCellText); a report written
// before the verdict existed falls back to its max context (or resident tokens).
std::string matrixCell(const json& cell)
{
    if (cell.contains("verdict"))
        return cell["verdict"]["cell"].get<std::string>();
    const bool fits = cell["fits"].get<bool>();
    if (!fits && cell["max_resident_tokens"].get<std::uint64_t>() == 0)
        return "no: weights " + bytesText(cell["weights_bytes"].get<std::uint64_t>()) + " > usable "
            + bytesText(cell["usable_bytes"].get<std::uint64_t>());
    if (cell.contains("max_context"))
        return thousands(cell["max_context"]) + (fits ? "" : " (no)");
    return thousands(cell["max_resident_tokens"]) + (fits ? "" : " (no)");
}

// The three states of a verdict as a cell status.
CellStatus verdictStatus(const json& planOrCell)
{
    if (!planOrCell.contains("verdict"))
        return planOrCell["fits"].get<bool>() ? CellStatus::Pass : CellStatus::Fail;
    const std::string state = planOrCell["verdict"]["state"].get<std::string>();
    return state == "fits" ? CellStatus::Pass : state == "does_not_fit" ? CellStatus::Fail : CellStatus::Less;
}

bool loads(const json& plan) { return verdictStatus(plan) != CellStatus::Fail; }

// The frontier point of a layer split that loads: its users and the cell text, the split's
// context with the verdict's detail ("1,024 (partial: 28/41 layers, 5.12 GiB RAM)", the words of
// core's verdictCellText); nullopt for any other plan.
std::optional<std::pair<std::uint64_t, std::string>> splitPoint(const json& p)
{
    if (!p.contains("split_bill") || !loads(p))
        return std::nullopt;
    const json& sb = p["split_bill"];
    const std::string detail = p.contains("verdict") ? p["verdict"]["detail"].get<std::string>() : std::string();
    return std::make_pair(sb["sequences"].get<std::uint64_t>(),
                          thousands(sb["context_tokens_per_sequence"]) + (detail.empty() ? "" : " (" + detail + ")"));
}

// The engine never starts on this plan (verdict.h engineCannotRun): it has no bill to print.
bool cannotRun(const json& plan)
{
    if (!plan.contains("verdict"))
        return false;
    const auto limit = fitLimitFromId(plan["verdict"]["limit"].get<std::string>());
    return limit && plan["verdict"]["state"].get<std::string>() == "does_not_fit" && engineCannotRun(*limit);
}

// "Does not fit: ..." of a plan: the verdict's reason with its first letter upper case.
std::string reasonSentence(const json& p)
{
    std::string reason = p["reason"].get<std::string>();
    // A split loads: "partial offload: ..." is its own state, never "does not fit".
    // A plan of the host-only card that loads is "CPU only: ..." (verdict.cpp).
    if (reason.rfind("fits", 0) != 0 && reason.rfind("does not fit", 0) != 0 && reason.rfind("fits with less", 0) != 0
        && reason.rfind("partial offload", 0) != 0 && reason.rfind("CPU only", 0) != 0)
        reason = (p["fits"].get<bool>() ? "fits: " : "does not fit: ") + reason;
    reason[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(reason[0])));
    return reason;
}

// The question of the requests in words: "max context per user for 4 users, 8,192 tokens asked
// each". Computed from the first request (a report asks one question of every cell), never from
// a cell's figures.
std::string questionCaption(const json& doc)
{
    const json& r = doc["inputs"]["requests"].at(0);
    const std::optional<std::uint64_t> users = r.contains("users") ? std::optional(r["users"].get<std::uint64_t>()) : std::nullopt;
    const std::optional<std::uint64_t> context
        = r.contains("context_tokens") ? std::optional(r["context_tokens"].get<std::uint64_t>()) : std::nullopt;
    std::string caption = headlineCaption(headlineKind(users, context), users.value_or(1), context.value_or(0));
    if (users && context)
        caption += ", " + formatThousands(*context) + " tokens asked each";
    return caption;
}

Section whatFitsSection(const json& doc)
{
    Section s;
    s.heading = "What fits";
    const json& cells = doc["what_fits"];
    std::vector<std::string> cards;
    std::vector<std::pair<std::string, std::string>> rowsKeys;
    for (const json& c : cells) {
        const std::string card = c["card"].get<std::string>();
        if (std::find(cards.begin(), cards.end(), card) == cards.end())
            cards.push_back(card);
        const auto key = std::make_pair(c["model"].get<std::string>(), c["weights_format"].get<std::string>());
        if (std::find(rowsKeys.begin(), rowsKeys.end(), key) == rowsKeys.end())
            rowsKeys.push_back(key);
    }
    bool split = false;
    for (const json& c : cells)
        split = split || (c.contains("verdict") && c["verdict"]["state"].get<std::string>() == "partial_offload");
    s.blocks.push_back(paragraph("Each cell: the " + questionCaption(doc)
                                 + ". A number alone fits as asked (green); \"N (limit)\" fits with less, the binding limit "
                                   "named (yellow); "
                                 + (split ? "\"N (partial: G/T layers, X RAM)\" loads with G of T layers on the GPU and X in host "
                                            "memory (yellow); "
                                          : "")
                                 + "\"no: why\" does not fit (red)."));
    std::vector<std::string> header{"model", "weights", "weights size"};
    std::vector<bool> numeric{false, false, true};
    for (const std::string& c : cards) {
        header.push_back(c);
        numeric.push_back(true);
    }
    Table t = makeTable("", header, numeric);
    t.keyColumns = 3;
    for (const auto& [model, format] : rowsKeys) {
        std::vector<std::string> row{model, format, kDash};
        std::vector<CellStatus> status(3, CellStatus::Plain);
        for (const std::string& card : cards) {
            std::string text = kDash;
            CellStatus st = CellStatus::Plain;
            for (const json& c : cells) {
                if (c["model"] == model && c["weights_format"] == format && c["card"] == card) {
                    text = matrixCell(c);
                    st = verdictStatus(c);
                    row[2] = bytesText(c["weights_bytes"].get<std::uint64_t>());
                    break;
                }
            }
            row.push_back(text);
            status.push_back(st);
        }
        addRow(t, row, status);
    }
    s.blocks.push_back(tableBlock(t));
    return s;
}

std::uint64_t sumItems(const json& items)
{
    std::uint64_t total = 0;
    for (const json& i : items)
        total += i["bytes"].get<std::uint64_t>();
    return total;
}

/// The plans of the memory chart: all of a small report (each bar names its plan); of a large one
/// the headline plan on every card, so that the bars compare cards, not formats: the (model,
/// format, KV dtype, engine) of the What fits table that fits as asked on the most cards (the
/// first such row on a tie), else loads on the most. Its title says which.
std::vector<const json*> memoryChartPlans(const json& doc, const std::vector<const json*>& detailed, std::string& title)
{
    const json& plans = doc["plans"];
    if (detailed.size() == plans.size())
        return detailed;
    const auto key = [](const json& p) {
        return p["model"].get<std::string>() + "\x1f" + p["weights_format"].get<std::string>() + "\x1f"
            + p["kv_dtype"].get<std::string>() + "\x1f" + p["engine"].get<std::string>();
    };
    std::vector<std::string> keys;
    std::map<std::string, std::pair<int, int>> score; // (fits as asked, loads) per key
    for (const json& p : plans) {
        const std::string k = key(p);
        if (!score.count(k))
            keys.push_back(k);
        auto& [fits, loaded] = score[k];
        fits += verdictStatus(p) == CellStatus::Pass;
        loaded += loads(p);
    }
    std::string best = keys.front();
    for (const std::string& k : keys)
        if (score[k] > score[best])
            best = k;
    std::vector<const json*> out;
    for (const json& p : plans)
        if (key(p) == best)
            out.push_back(&p);
    title = "Memory (GiB), the plan that fits most cards";
    return out;
}

// What a plan keeps on its card: weights, runtime and activations, KV. A layer split's are its
// GPU side (split_bill, core splitbill.h: the GPU layers' weights and KV), not the whole model's
// weights and the card pool's empty KV budget.
struct CardShare {
    std::uint64_t weights = 0;
    std::uint64_t overheads = 0;
    std::uint64_t kv = 0;
};

CardShare cardShare(const json& p)
{
    if (p.contains("split_bill") && !p["split_bill"]["gpu"].empty()) {
        CardShare c;
        for (const json& i : p["split_bill"]["gpu"]) {
            const std::string name = i["name"].get<std::string>();
            const std::uint64_t b = i["bytes"].get<std::uint64_t>();
            (name == "gpu_weights_bytes" ? c.weights : name == "gpu_kv_buffer_bytes" ? c.kv : c.overheads) += b;
        }
        return c;
    }
    return {p["weights_bytes"].get<std::uint64_t>(), sumItems(p["overheads"]), p["kv_budget_bytes"].get<std::uint64_t>()};
}

Section memorySection(const json& doc, const std::vector<const json*>& detailed)
{
    Section s;
    s.heading = "Memory";
    Chart c;
    c.kind = Chart::Kind::StackedBars;
    c.title = "Memory of each card, per device (GiB)";
    c.xLabel = "GiB (2^30 bytes)";
    c.segmentNames = {"weights", "runtime and activations", "KV cache budget", "kept free by the engine"};
    for (const json* pp : memoryChartPlans(doc, detailed, c.title)) {
        const json& p = *pp;
        // A host-only plan (the card "cpu") has no device to draw: its bill is the host's, in the table.
        if (cannotRun(p) || p.value("host_only", false))
            continue;
        const double gib = static_cast<double>(kGiB);
        const CardShare share = cardShare(p);
        const std::uint64_t weights = share.weights;
        const std::uint64_t over = share.overheads;
        const std::uint64_t kv = share.kv;
        const std::uint64_t reserved = sumItems(p["reserved"]);
        c.categories.push_back(planLabel(p));
        c.segments.push_back({static_cast<double>(weights) / gib, static_cast<double>(over) / gib, static_cast<double>(kv) / gib,
                              static_cast<double>(reserved) / gib});
        c.barLabels.push_back(bytesText(p["card_total_bytes"].get<std::uint64_t>()) + " card"
                              + (weights + over > p["usable_bytes"].get<std::uint64_t>() ? ", over by "
                                         + bytesText(weights + over - p["usable_bytes"].get<std::uint64_t>())
                                                                                         : std::string()));
    }
    if (!c.categories.empty())
        s.blocks.push_back(chartBlock(c));
    bool anySplit = false;
    for (const json& p : doc["plans"])
        anySplit = anySplit || p.contains("split_bill");
    std::vector<std::string> header{"plan", "card total", "weights", "runtime and activations", "KV cache budget", "kept free"};
    if (anySplit)
        header.push_back("host memory");
    Table t = makeTable("", header, std::vector<bool>{false, true, true, true, true, true, true});
    t.numeric.resize(header.size());
    // A plan the engine cannot run has no bill: its verdict's reason instead, once per reason,
    // naming the models, formats and cards it stops.
    std::vector<std::pair<std::string, json>> noBill; // reason, its plans
    for (const json& p : doc["plans"]) {
        if (cannotRun(p)) {
            const std::string reason = reasonSentence(p);
            auto same = std::find_if(noBill.begin(), noBill.end(), [&](const auto& r) { return r.first == reason; });
            if (same == noBill.end())
                same = noBill.insert(noBill.end(), {reason, json::array()});
            same->second.push_back(p);
            continue;
        }
        const CardShare share = cardShare(p);
        // No GPU (the card "cpu"): no card total, device weights, runtime or KV budget to print as 0 B.
        const bool hostOnly = p.value("host_only", false);
        const auto deviceText = [&](std::uint64_t b) { return hostOnly ? std::string(kDash) : bytesText(b); };
        std::vector<std::string> row{planLabel(p), hostOnly ? std::string("no GPU") : bytesText(p["card_total_bytes"].get<std::uint64_t>()),
                                     deviceText(share.weights), deviceText(share.overheads), deviceText(share.kv),
                                     deviceText(sumItems(p["reserved"]))};
        if (anySplit)
            row.push_back(p.contains("split_bill") ? bytesText(p["split_bill"]["host_bytes"].get<std::uint64_t>()) : std::string(kDash));
        addRow(t, row);
    }
    if (!t.rows.empty())
        s.blocks.push_back(tableBlock(t));
    for (const auto& [reason, plans] : noBill)
        s.blocks.push_back(paragraph("No bill for " + joinUnique(plans, "model") + " in " + joinUnique(plans, "weights_format")
                                     + " on " + joinUnique(plans, "card") + ": the engine never starts. " + reason
                                     + (reason.empty() || reason.back() == '.' ? "" : ".")));
    s.blocks.push_back(paragraph(std::string("Weights and runtime memory come first; the KV cache gets what is left of the usable memory. ")
                                 + (anySplit ? "A layer split shows its GPU side (the GPU layers' weights and KV) and what it keeps in host memory. " : "")
                                 + "The bill of each plan, item by item, is under Plans."));
    return s;
}

Section frontierSection(const std::vector<const json*>& detailed)
{
    Section s;
    s.heading = "Context x concurrency frontier";
    s.blocks.push_back(paragraph("The largest context per user for 1, 2, 4, ... concurrent users: the KV cache holds a fixed "
                                 "number of tokens, so the frontier is a hyperbola, bent by block rounding and capped at the "
                                 "model's trained context."));
    // One chart per (model, format, kv, engine), one line per card.
    std::vector<std::string> groups;
    std::map<std::string, std::vector<const json*>> byGroup;
    for (const json* pp : detailed) {
        const json& p = *pp;
        if (!loads(p))
            continue;
        const std::string g = p["model"].get<std::string>() + " · " + p["weights_format"].get<std::string>() + " · "
            + p["kv_dtype"].get<std::string>() + " KV · " + p["engine"].get<std::string>();
        if (!byGroup.count(g))
            groups.push_back(g);
        byGroup[g].push_back(&p);
    }
    for (const std::string& g : groups) {
        Chart c;
        c.kind = Chart::Kind::Lines;
        c.title = g;
        c.xLabel = "concurrent users";
        c.yLabel = "max context per user (tokens)";
        c.logX = true;
        c.logY = true;
        std::vector<std::uint64_t> users;
        std::vector<std::string> header{"users"};
        std::vector<bool> numeric{true};
        for (const json* p : byGroup[g]) {
            Series line;
            line.name = (*p)["card"].get<std::string>();
            // A layer split has no frontier of the card's pool: its one point is the split's own
            // context for its users (core splitbill.h), a row of the table as `table` prints it,
            // not a line of the chart.
            if (const auto point = splitPoint(*p))
                if (std::find(users.begin(), users.end(), point->first) == users.end())
                    users.push_back(point->first);
            for (const json& f : (*p)["frontier"]) {
                const std::uint64_t u = f["users"].get<std::uint64_t>();
                const std::uint64_t ctx = f["context_tokens"].get<std::uint64_t>();
                if (ctx == 0)
                    continue;
                line.x.push_back(static_cast<double>(u));
                line.y.push_back(static_cast<double>(ctx));
                if (std::find(users.begin(), users.end(), u) == users.end())
                    users.push_back(u);
            }
            c.series.push_back(line);
            header.push_back((*p)["card"].get<std::string>());
            numeric.push_back(true);
        }
        std::sort(users.begin(), users.end());
        const bool drawn = std::any_of(c.series.begin(), c.series.end(), [](const Series& l) { return !l.x.empty(); });
        if (drawn)
            s.blocks.push_back(chartBlock(c));
        Table t = makeTable(g + ": max context per user (tokens)", header, numeric);
        for (std::uint64_t u : users) {
            std::vector<std::string> row{formatThousands(u)};
            for (const json* p : byGroup[g]) {
                std::string cell = kDash;
                for (const json& f : (*p)["frontier"])
                    if (f["users"].get<std::uint64_t>() == u)
                        cell = thousands(f["context_tokens"]);
                if (const auto point = splitPoint(*p); point && point->first == u)
                    cell = point->second;
                row.push_back(cell);
            }
            addRow(t, row);
        }
        if (users.empty())
            s.blocks.push_back(paragraph(g + ": no point of the frontier fits."));
        else
            s.blocks.push_back(tableBlock(t));
    }
    return s;
}

std::optional<Section> speedSection(const std::vector<const json*>& detailed)
{
    Table t = makeTable("", {"plan", "users x context", "bytes per step", "step floor", "tokens/s per user", "tokens/s total", "bound"},
                        {false, true, true, true, true, true, false});
    std::string source;
    for (const json* pp : detailed) {
        const json& p = *pp;
        if (!p.contains("roofline") || !loads(p))
            continue;
        const json& r = p["roofline"];
        source = r["source"].get<std::string>();
        addRow(t, {planLabel(p), thousands(r["users"]) + " x " + thousands(r["context_tokens"]),
                   bytesText(r["bytes_per_step"].get<std::uint64_t>()), number(r["decode_step_floor_ms"].get<double>()) + " ms",
                   number(r["tokens_per_second_per_user_max"].get<double>()),
                   number(r["tokens_per_second_total_max"].get<double>()), r["bound"].get<std::string>()});
    }
    if (t.rows.empty())
        return std::nullopt;
    Section s;
    s.heading = "Speed ceiling (roofline)";
    s.blocks.push_back(paragraph("Decode is memory-bound: each step streams the weights and every resident KV cache. "
                                 "At the launch point of each plan that loads (all caches full), no step can be faster than "
                                 "this. Source: " + source + "."));
    s.blocks.push_back(tableBlock(t));
    return s;
}

Section probesSection(const json& probes)
{
    Section s;
    s.heading = "Verified on the device (probes)";
    const json& device = probes["device"];
    Table d = makeTable("Device", {"fact", "value"}, {false, true});
    static const std::vector<std::pair<std::string, std::string>> known = {
        {"name", "name"}, {"driver_version", "driver version"}, {"cuda_version", "CUDA version"},
        {"total_bytes", "total memory"}, {"free_bytes", "free memory"}, {"context_overhead_bytes", "CUDA context overhead (measured)"},
        {"copy_bandwidth_gbps", "device-to-device copy bandwidth (measured)"}};
    for (const auto& [key, label] : known)
        if (device.contains(key))
            addRow(d, {label, valueWithUnit(key, device[key])});
    for (auto it = device.begin(); it != device.end(); ++it)
        if (std::none_of(known.begin(), known.end(), [&](const auto& k) { return k.first == it.key(); }))
            addRow(d, {it.key(), valueWithUnit(it.key(), it.value())});
    s.blocks.push_back(tableBlock(d));

    Table r = makeTable("Predicted against measured", {"probe", "result", "predicted", "measured", "margin", "details"},
                        {false, false, true, true, true, false});
    std::size_t passed = 0;
    for (const json& res : probes["results"]) {
        std::string predicted, measured, margin, details, summary;
        for (auto it = res.begin(); it != res.end(); ++it) {
            const std::string& k = it.key();
            const auto add = [&](std::string& into, const std::string& prefix) {
                if (k.rfind(prefix, 0) != 0)
                    return false;
                into += (into.empty() ? "" : "; ") + valueWithUnit("_" + k.substr(prefix.size()), it.value());
                return true;
            };
            if (k == "probe" || k == "pass" || k == "verdict")
                continue;
            if (add(predicted, "predicted_") || add(measured, "measured_") || add(margin, "margin_"))
                continue;
            // The probe's own one-line summary, else its other scalars; tables (arrays, objects)
            // and notes stay in the JSON.
            if (k == "summary" && it.value().is_string())
                summary = it.value().get<std::string>();
            else if (!it.value().is_structured())
                details += (details.empty() ? "" : "; ") + k + " " + valueWithUnit(k, it.value());
        }
        if (!summary.empty())
            details = summary;
        // The verdict as the probe recorded it (core/probeverdict.h); older files carry only "pass".
        const std::string verdict = res.contains("verdict") && res["verdict"].is_string()
            ? res["verdict"].get<std::string>() : (res.value("pass", false) ? "pass" : "fail");
        const bool pass = verdict == "pass";
        passed += pass;
        const std::string shown = verdict == "fail" ? "FAIL" : verdict == "not-supported" ? "not supported" : verdict;
        addRow(r,
               {res["probe"].get<std::string>(), shown, predicted.empty() ? kDash : predicted,
                measured.empty() ? kDash : measured, margin.empty() ? kDash : margin, details.empty() ? kDash : details},
               {CellStatus::Plain, pass ? CellStatus::Pass : verdict == "fail" ? CellStatus::Fail : CellStatus::Plain,
                CellStatus::Plain, CellStatus::Plain, CellStatus::Plain, CellStatus::Plain});
    }
    s.blocks.push_back(paragraph(std::to_string(passed) + " of " + std::to_string(probes["results"].size())
                                 + " probes passed on " + device["name"].get<std::string>() + "."));
    s.blocks.push_back(tableBlock(r));
    return s;
}

Section measuredSpeedSection(const json& speed)
{
    Section s;
    s.heading = "Measured speed";
    if (speed.contains("source"))
        s.blocks.push_back(paragraph("Source: " + speed["source"].get<std::string>() + "."));
    std::vector<std::string> keys;
    for (const json& p : speed["points"])
        for (auto it = p.begin(); it != p.end(); ++it)
            if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
                keys.push_back(it.key());
    // users first, then context, then the rest in key order.
    std::stable_partition(keys.begin(), keys.end(), [](const std::string& k) { return k == "users" || k == "context_tokens"; });
    const std::vector<bool> numeric(keys.size(), true);
    Table t = makeTable("", keys, numeric);
    Series line;
    line.name = "tokens/s, all users";
    for (const json& p : speed["points"]) {
        std::vector<std::string> row;
        for (const std::string& k : keys)
            row.push_back(p.contains(k) ? valueWithUnit(k, p[k]) : std::string(kDash));
        addRow(t, row);
        if (p.contains("users") && p.contains("tokens_per_second") && p["users"].is_number() && p["tokens_per_second"].is_number()) {
            line.x.push_back(p["users"].get<double>());
            line.y.push_back(p["tokens_per_second"].get<double>());
        }
    }
    if (line.x.size() >= 2) {
        Chart c;
        c.kind = Chart::Kind::Lines;
        c.title = "Throughput against concurrency";
        c.xLabel = "concurrent users";
        c.yLabel = "tokens/s";
        c.logX = true;
        c.series.push_back(line);
        s.blocks.push_back(chartBlock(c));
    }
    if (speed.contains("knee_users"))
        s.blocks.push_back(paragraph("The knee (decode turns compute-bound): " + thousands(speed["knee_users"]) + " users."));
    s.blocks.push_back(tableBlock(t));
    return s;
}

// The card's bill of a plan: card total, reserved, usable, weights, overheads, KV budget.
Table cardBill(const json& p)
{
    Table bill = makeTable("Memory bill, per device", {"memory", "bytes", "size", "how"}, {false, true, true, false});
    const auto row = [&](const std::string& name, std::uint64_t b, const std::string& how) {
        addRow(bill, {name, formatThousands(b), bytesText(b), how});
    };
    row("card total", p["card_total_bytes"].get<std::uint64_t>(), "driver-reported total");
    for (const json& r : p["reserved"])
        row("- " + r["name"].get<std::string>(), r["bytes"].get<std::uint64_t>(), r["note"].get<std::string>());
    row("= usable", p["usable_bytes"].get<std::uint64_t>(), "");
    row("weights", p["weights_bytes"].get<std::uint64_t>(),
        p["weights_format"].get<std::string>() + (p.value("weights_exact", false) ? " (exact, from the files)" : ""));
    for (const json& o : p["overheads"])
        row(o["name"].get<std::string>(), o["bytes"].get<std::uint64_t>(), o["note"].get<std::string>());
    row("KV cache budget", p["kv_budget_bytes"].get<std::uint64_t>(),
        thousands(p["kv_bytes_per_token"]) + " B/token (" + p["kv_dtype"].get<std::string>() + ")");
    return bill;
}

// A layer split's two sides (the plan's split_bill, core splitbill.h), as `plan` prints them: the
// GPU's (card total, reserved, usable, the GPU layers' weights, the overheads, their KV) and the
// host's (weights, repack copy, KV, compute and output buffers), each with its total.
std::vector<Block> splitBillBlocks(const json& p)
{
    const json& sb = p["split_bill"];
    const std::string layers = thousands(sb["gpu_layers"]) + " of " + thousands(sb["total_layers"]) + " layers";
    const auto rowOf = [](Table& t, const std::string& name, std::uint64_t b, const std::string& how) {
        addRow(t, {name, formatThousands(b), bytesText(b), how});
    };
    std::vector<Block> out;
    if (!sb["gpu"].empty()) {
        Table gpu = makeTable("GPU side: " + layers + " on the GPU", {"memory", "bytes", "size", "how"}, {false, true, true, false});
        rowOf(gpu, "card total", p["card_total_bytes"].get<std::uint64_t>(), "driver-reported total");
        for (const json& r : p["reserved"])
            rowOf(gpu, "- " + r["name"].get<std::string>(), r["bytes"].get<std::uint64_t>(), r["note"].get<std::string>());
        rowOf(gpu, "= usable", p["usable_bytes"].get<std::uint64_t>(), "");
        for (const json& i : sb["gpu"])
            rowOf(gpu, i["label"].get<std::string>(), i["bytes"].get<std::uint64_t>(), i["note"].get<std::string>());
        rowOf(gpu, "= on the GPU", sb["gpu_bytes"].get<std::uint64_t>(), "");
        out.push_back(tableBlock(gpu));
    }
    const bool hostOnly = p.value("host_only", false);
    Table host = makeTable(hostOnly ? "Host side: no GPU, all " + thousands(sb["total_layers"]) + " layers on the CPU"
                                    : (sb["gpu"].empty() ? "Host side: " + layers + " on the GPU, the rest in host memory" : "Host side (RAM)"),
                           {"memory", "bytes", "size", "how"}, {false, true, true, false});
    for (const json& i : sb["host"])
        rowOf(host, i["label"].get<std::string>(), i["bytes"].get<std::uint64_t>(), i["note"].get<std::string>());
    rowOf(host, "= in host memory", sb["host_bytes"].get<std::uint64_t>(), "what --host-ram is checked against");
    out.push_back(tableBlock(host));
    if (!sb["host_weights_note"].get<std::string>().empty()) {
        std::string note = sb["host_weights_note"].get<std::string>();
        note[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(note[0])));
        out.push_back(paragraph(note + "."));
    }
    return out;
}

Section planSection(const json& p)
{
    Section s;
    s.level = 3;
    s.heading = planLabel(p) + " (" + p["engine"].get<std::string>() + ")";
    s.blocks.push_back(paragraph(reasonSentence(p)));
    if (cannotRun(p)) // only the verdict and its reason: the engine never starts, no bill exists
        return s;

    const bool split = p.contains("split_bill");
    // A layer split's GPU side replaces the card's bill (its KV budget does not apply: the weights
    // do not fit whole); Ollama's split has no GPU side of its own, the card's bill stays.
    // The host-only card has no device bill at all.
    if ((!split || p["split_bill"]["gpu"].empty()) && !p.value("host_only", false))
        s.blocks.push_back(tableBlock(cardBill(p)));
    if (split)
        for (Block& b : splitBillBlocks(p))
            s.blocks.push_back(std::move(b));

    Table cap = makeTable("Capacity", {"capacity", "value"}, {false, true});
    addRow(cap, {"max resident tokens", thousands(p["max_resident_tokens"])});
    if (p.value("kv_blocks", std::uint64_t{0}) > 0 && p.value("kv_block_tokens", std::uint64_t{1}) > 1)
        addRow(cap, {"KV blocks of " + thousands(p["kv_block_tokens"]) + " tokens", thousands(p["kv_blocks"])});
    if (p.contains("max_context"))
        addRow(cap, {"max context for " + thousands(p["users"]) + " users", thousands(p["max_context"])});
    if (p.contains("max_users"))
        addRow(cap, {"max users at " + thousands(p["context_tokens"]) + " tokens", thousands(p["max_users"])});
    if (p.contains("max_concurrency"))
        addRow(cap, {"vLLM maximum concurrency at " + thousands(p["context_tokens"]) + " tokens",
                     number(p["max_concurrency"].get<double>()) + "x"});
    if (p.contains("verdict")) {
        const json& v = p["verdict"];
        const CellStatus st = verdictStatus(p);
        // The verdict as core words it (verdict.h verdictLabel: "partial offload" for a split, "CPU
        // only" for one with no GPU layer); a report written before the label has the state id.
        std::string state = v["state"].get<std::string>();
        std::replace(state.begin(), state.end(), '_', ' ');
        if (v.contains("label") && v["label"].is_string())
            state = v["label"].get<std::string>();
        addRow(cap, {"verdict", state}, {CellStatus::Plain, st});
        if (v["limit"].get<std::string>() != "none")
            addRow(cap, {st == CellStatus::Fail ? "why" : "binding limit", v["detail"].get<std::string>()});
        if (st != CellStatus::Fail)
            addRow(cap, {v["headline"]["caption"].get<std::string>(), thousands(v["headline"]["value"])});
    } else {
        addRow(cap, {"fits", p["fits"].get<bool>() ? "yes" : "no"},
               {CellStatus::Plain, p["fits"].get<bool>() ? CellStatus::Pass : CellStatus::Fail});
    }
    s.blocks.push_back(tableBlock(cap));

    if (p.contains("launch")) {
        const json& l = p["launch"];
        s.blocks.push_back(paragraph("Launch flags (" + l["engine"].get<std::string>() + "): " + thousands(l["users"])
                                     + " users x " + thousands(l["context_tokens"]) + " tokens"
                                     + (l["context_lowered"].get<bool>() ? ", the context lowered to what fits." : ".")));
        s.blocks.push_back(code(l["command"].get<std::string>()));
        Table flags = makeTable("", {"flag", "value", "why"}, {false, true, false});
        for (const json& f : l["flags"])
            addRow(flags, {f["name"].get<std::string>(), f["value"].get<std::string>(), f["note"].get<std::string>()});
        s.blocks.push_back(tableBlock(flags));
        for (const json& n : l["notes"])
            s.blocks.push_back(paragraph("Note: " + n.get<std::string>() + "."));
    } else if (p.contains("launch_error")) {
        s.blocks.push_back(paragraph("No launch flags: " + p["launch_error"].get<std::string>() + "."));
    }
    for (const json& n : p["notes"])
        s.blocks.push_back(paragraph("Note: " + n.get<std::string>()));
    return s;
}

// The plans shown in detail: all of a small report; of a large one (a whole matrix), per card the
// first plan that fits as asked, else the first that loads, else the first.
std::vector<const json*> detailedPlans(const json& doc)
{
    constexpr std::size_t kAllUpTo = 6;
    std::vector<const json*> out;
    const json& plans = doc["plans"];
    if (plans.size() <= kAllUpTo) {
        for (const json& p : plans)
            out.push_back(&p);
        return out;
    }
    std::vector<std::string> cards;
    for (const json& p : plans)
        if (std::find(cards.begin(), cards.end(), p["card"].get<std::string>()) == cards.end())
            cards.push_back(p["card"].get<std::string>());
    for (const std::string& card : cards) {
        const json* chosen = nullptr;
        for (int pass = 0; pass < 3 && !chosen; ++pass)
            for (const json& p : plans)
                if (p["card"] == card && (pass == 2 || (pass == 0 ? verdictStatus(p) == CellStatus::Pass : loads(p)))) {
                    chosen = &p;
                    break;
                }
        if (chosen && std::find(out.begin(), out.end(), chosen) == out.end())
            out.push_back(chosen);
    }
    return out;
}

/// Every string of @p doc made safe (safeLines: control characters escaped, newlines kept): a
/// report is untrusted (a title with an escape sequence went raw into Markdown and HTML).
/// Recursion is bounded by the report's parse depth (kMaxReportDepth).
void makeStringsSafe(json& doc)
{
    if (doc.is_string()) {
        if (const std::string& s = doc.get_ref<const std::string&>(); !isSafeText(s))
            doc = safeLines(s);
    } else if (doc.is_structured()) {
        for (json& child : doc)
            makeStringsSafe(child);
    }
}

/// @p source with each plan and cell naming its model by the model's own name (an imported
/// model's id is its path) where that name is unique among the report's models; the Inputs
/// section keeps the id next to the name.
json withModelNames(const json& source)
{
    std::map<std::string, std::string> names;
    std::map<std::string, int> uses;
    for (const json& m : source["inputs"]["models"]) {
        const std::string name = m.value("name", std::string());
        if (!name.empty())
            ++uses[name];
    }
    for (const json& m : source["inputs"]["models"]) {
        const std::string name = m.value("name", std::string());
        if (!name.empty() && uses[name] == 1)
            names[m["id"].get<std::string>()] = name;
    }
    json doc = source;
    for (const char* list : {"plans", "what_fits"})
        if (doc.contains(list))
            for (json& p : doc[list])
                if (auto it = names.find(p["model"].get<std::string>()); it != names.end())
                    p["model"] = it->second;
    for (json& m : doc["inputs"]["models"]) {
        const auto it = names.find(m["id"].get<std::string>());
        m["label"] = it != names.end() ? it->second : m["id"].get<std::string>();
    }
    return doc;
}

tl::expected<Document, ReportError> layout(const json& source)
{
    json safe = source;
    makeStringsSafe(safe);
    const json doc = withModelNames(safe);
    Document d;
    d.title = doc["title"].get<std::string>();
    const json& in = doc["inputs"];
    d.subtitle = joinUnique(in["models"], "label") + " · " + joinUnique(in["weights_formats"], "id") + " · "
        + joinUnique(in["kv_dtypes"], "id") + " KV · on " + joinUnique(in["cards"], "id") + " · " + joinUnique(in["engines"], "name");
    d.meta = "Headroom " + doc["tool"]["version"].get<std::string>() + " · created " + doc["created_utc"].get<std::string>()
        + " · report schema " + std::to_string(doc["schema_version"].get<int>());

    const std::vector<const json*> detailed = detailedPlans(doc);
    const bool all = detailed.size() == doc["plans"].size();
    d.sections.push_back(whatFitsSection(doc));
    d.sections.push_back(memorySection(doc, detailed));
    d.sections.push_back(frontierSection(detailed));
    if (doc.contains("probes"))
        d.sections.push_back(probesSection(doc["probes"]));
    if (doc.contains("speed"))
        d.sections.push_back(measuredSpeedSection(doc["speed"]));
    if (auto speed = speedSection(detailed))
        d.sections.push_back(*speed);
    Section plans;
    plans.heading = "Plans";
    plans.blocks.push_back(paragraph(all ? std::string("Each plan: the bill, the capacity, and the engine's launch flags for it.")
                                         : "Of the " + std::to_string(doc["plans"].size()) + " plans, in detail: on each card "
                                           "the first that fits as asked (else the first that loads); the memory, frontier "
                                           "and speed sections above show the same ones. Every plan is in the JSON report."));
    d.sections.push_back(plans);
    for (const json* p : detailed)
        d.sections.push_back(planSection(*p));
    d.sections.push_back(inputsSection(doc));
    return d;
}

std::string mdCell(std::string s)
{
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n')
            out += "<br>";
        else
            out += c;
    }
    return out.empty() ? " " : out;
}

/// A CSV cell. A text cell that a spreadsheet would run as a formula (it starts with = + - @, a
/// tab or a carriage return: OWASP "CSV Injection") is prefixed with ' ; numbers stay numbers.
std::string csvField(std::string s)
{
    if (!s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos) {
        char* end = nullptr;
        (void)std::strtod(s.c_str(), &end);
        if (end != s.c_str() + s.size())
            s.insert(0, 1, '\'');
    }
    if (s.find_first_of(",\"\n\r") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string rawNumber(const json& p, const char* key)
{
    if (!p.contains(key))
        return "";
    const json& v = p[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
}

} // namespace

tl::expected<Document, ReportError> layoutReport(const std::string& reportJson)
{
    try {
        auto doc = reportdetail::parse(reportJson, "report");
        if (!doc)
            return tl::unexpected(doc.error());
        const std::vector<std::string> errors = reportdetail::schemaErrors(*doc);
        if (!errors.empty())
            return tl::unexpected(ReportError{"the report does not match its schema: " + errors.front()});
        return layout(*doc);
    } catch (const std::exception& e) {
        return tl::unexpected(ReportError{std::string("report: ") + e.what()});
    }
}

std::string renderMarkdown(const Document& d)
{
    std::string out = "# " + d.title + "\n\n";
    if (!d.subtitle.empty())
        out += "**" + d.subtitle + "**\n\n";
    if (!d.meta.empty())
        out += "_" + d.meta + "_\n\n";
    for (const Section& s : d.sections) {
        out += std::string(static_cast<std::size_t>(std::clamp(s.level, 1, 6)), '#') + " " + s.heading + "\n\n";
        for (const Block& b : s.blocks) {
            switch (b.kind) {
            case Block::Kind::Paragraph:
                out += b.text + "\n\n";
                break;
            case Block::Kind::Code:
                out += "```sh\n" + b.text + "\n```\n\n";
                break;
            case Block::Kind::Chart:
                break; // the data of every chart is in a table of the same section
            case Block::Kind::Table: {
                const Table& t = b.table;
                if (!t.caption.empty())
                    out += "**" + t.caption + "**\n\n";
                out += "|";
                for (const std::string& h : t.header)
                    out += " " + mdCell(h) + " |";
                out += "\n|";
                for (std::size_t c = 0; c < t.header.size(); ++c)
                    out += c < t.numeric.size() && t.numeric[c] ? " ---: |" : " --- |";
                out += "\n";
                for (std::size_t r = 0; r < t.rows.size(); ++r) {
                    out += "|";
                    for (std::size_t c = 0; c < t.rows[r].size(); ++c) {
                        std::string cell = mdCell(t.rows[r][c]);
                        if (r < t.status.size() && c < t.status[r].size() && t.status[r][c] == CellStatus::Fail
                            && cell.find("(no)") == std::string::npos && cell.rfind("no", 0) != 0 && cell != "FAIL"
                            && cell.rfind("does not fit", 0) != 0)
                            cell += " (no)";
                        out += " " + cell + " |";
                    }
                    out += "\n";
                }
                out += "\n";
                break;
            }
            }
        }
    }
    return out;
}

tl::expected<std::string, ReportError> renderReportMarkdown(const std::string& reportJson)
{
    auto d = layoutReport(reportJson);
    if (!d)
        return tl::unexpected(d.error());
    return renderMarkdown(*d);
}

tl::expected<std::string, ReportError> renderReportCsv(const std::string& reportJson)
{
    try {
        auto parsed = reportdetail::parse(reportJson, "report");
        if (!parsed)
            return tl::unexpected(parsed.error());
        const json& doc = *parsed;
        const std::vector<std::string> errors = reportdetail::schemaErrors(doc);
        if (!errors.empty())
            return tl::unexpected(ReportError{"the report does not match its schema: " + errors.front()});
        const std::vector<std::string> header{
            "model", "weights_format", "kv_dtype", "card", "engine", "tensor_parallel", "pipeline_parallel", "users",
            "context_tokens", "fits", "card_total_bytes", "usable_bytes", "weights_bytes", "overheads_bytes", "reserved_bytes",
            "kv_budget_bytes", "kv_bytes_per_token", "max_resident_tokens", "max_context", "max_users", "max_concurrency",
            "launch_engine", "launch_users", "launch_context_tokens", "decode_step_floor_ms", "tokens_per_second_per_user_max",
            "reason"};
        std::string out;
        for (std::size_t i = 0; i < header.size(); ++i)
            out += (i ? "," : "") + header[i];
        out += "\n";
        for (const json& p : doc["plans"]) {
            const json launch = p.value("launch", json::object());
            const json roof = p.value("roofline", json::object());
            const std::vector<std::string> row{
                p["model"].get<std::string>(), p["weights_format"].get<std::string>(), p["kv_dtype"].get<std::string>(),
                p["card"].get<std::string>(), p["engine"].get<std::string>(), rawNumber(p, "tensor_parallel"),
                rawNumber(p, "pipeline_parallel"), rawNumber(p, "users"), rawNumber(p, "context_tokens"),
                p["fits"].get<bool>() ? "yes" : "no", rawNumber(p, "card_total_bytes"), rawNumber(p, "usable_bytes"),
                rawNumber(p, "weights_bytes"), std::to_string(sumItems(p["overheads"])), std::to_string(sumItems(p["reserved"])),
                rawNumber(p, "kv_budget_bytes"), rawNumber(p, "kv_bytes_per_token"), rawNumber(p, "max_resident_tokens"),
                rawNumber(p, "max_context"), rawNumber(p, "max_users"), rawNumber(p, "max_concurrency"),
                rawNumber(launch, "engine"), rawNumber(launch, "users"), rawNumber(launch, "context_tokens"),
                rawNumber(roof, "decode_step_floor_ms"), rawNumber(roof, "tokens_per_second_per_user_max"),
                p["reason"].get<std::string>()};
            for (std::size_t i = 0; i < row.size(); ++i)
                out += (i ? "," : "") + csvField(row[i]);
            out += "\n";
        }
        return out;
    } catch (const std::exception& e) {
        return tl::unexpected(ReportError{std::string("report: ") + e.what()});
    }
}

} // namespace headroom::report
