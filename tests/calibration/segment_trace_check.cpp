// Feeds a GPU's allocator history (bench/torch_reference/segment_trace.py:
// every alloc and free_completed by address, every segment_alloc and
// segment_free, then a summary line) into the caching-allocator model, and
// checks that the model's reserved bytes follow the GPU's:
//
//   gzip -dc TRACE.jsonl.gz | anatomy_segment_trace_check [--cap-gib N] [--ends-only] [--oom]
//
// By default after every allocation and free; with --ends-only, only the
// peak and the last value. With --oom the run ended out of memory under
// the cap: the request the GPU refused (the summary's oom_request, made
// after the trace's last allocation) must fail in the model too. The peaks of reserved and allocated bytes must
// equal the GPU's max_memory_reserved and max_memory_allocated. The events
// are the GPU's own, so this checks the allocator model alone, not the
// walk that makes its events. It also prints how often a new segment lay
// below an older live one, the address order the model assumes. Exit 0 when
// all hold, 1 when one does not, 2 on input it cannot read.
#include <anatomy/caching_allocator.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

int usage(const char* why) {
    std::fprintf(stderr, "anatomy_segment_trace_check: %s\nusage: gzip -dc TRACE.jsonl.gz | anatomy_segment_trace_check [--cap-gib N] [--ends-only] [--oom]\n", why);
    return 2;
}

double gb(std::uint64_t b) { return static_cast<double>(b) / 1e9; }

}  // namespace

int main(int argc, char** argv) {
    using namespace anatomy;
    double cap_gib = 0;
    bool ends_only = false;
    bool refused_request = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--cap-gib" && i + 1 < argc) cap_gib = std::atof(argv[++i]);
        else if (arg == "--ends-only") ends_only = true;
        else if (arg == "--oom") refused_request = true;
        else return usage("unknown argument");
    }
    caching_allocator model(bytes{static_cast<std::uint64_t>(cap_gib * 1073741824.0)});
    // segment_trace.py runs torch.ones(1) before it records: one cached 2 MiB
    // small segment, which the GPU's max_memory_reserved counts.
    model.release(model.allocate(bytes{1}, tensor_owner::step));
    std::uint64_t gpu_reserved = caching_allocator::small_buffer;
    std::map<std::uint64_t, block_id> live;  // GPU address -> the model's block
    std::set<std::uint64_t> segments;         // the GPU's live segments, by address
    std::uint64_t pairs = 0, below = 0;       // (new segment, older live one): the new one lower
    nlohmann::json summary;
    std::uint64_t events = 0;
    bool diverged = false;
    // Read whole: the summary, last, says what the run ended with.
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(std::cin, line);) {
        nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
        if (e.is_discarded()) return usage("a line is not JSON");
        if (e.is_object()) {
            summary = std::move(e);
            break;
        }
        // --frames-over-mib adds the making frames to large allocs: a fourth element, not read.
        if (!e.is_array() || e.size() < 3 || e.size() > 4)
            return usage("an event is not [action, address, size] or [action, address, size, frames]");
        lines.push_back(std::move(e));
    }
    if (summary.is_null()) return usage("no summary line at the end");
    std::uint64_t refused_size = 0;
    std::size_t last_alloc = lines.size();
    if (refused_request) {
        if (!summary.contains("oom_request") || !summary["oom_request"].is_object())
            return usage("--oom: the summary has no oom_request (a run that did not end out of memory?)");
        refused_size = summary["oom_request"]["size"].get<std::uint64_t>();
        for (std::size_t i = lines.size(); i-- > 0;)
            if (lines[i][0].get<std::string>() == "alloc") {
                last_alloc = i;
                break;
            }
    }
    bool refused = false;
    for (std::size_t index = 0; index < lines.size(); ++index) {
        const nlohmann::json& e = lines[index];
        ++events;
        const std::string action = e[0].get<std::string>();
        const auto address = e[1].get<std::uint64_t>();
        const auto size = e[2].get<std::uint64_t>();
        if (action == "segment_alloc") {
            gpu_reserved += size;
            pairs += segments.size();
            below += static_cast<std::uint64_t>(std::distance(segments.upper_bound(address), segments.end()));
            segments.insert(address);
            continue;
        }
        if (action == "segment_free") {
            gpu_reserved -= size;
            segments.erase(address);
            continue;
        }
        if (action == "alloc") {
            const block_id b = model.allocate(bytes{size}, tensor_owner::step);
            if (model.out_of_memory()) {
                std::printf("event %llu: the model runs out of memory where the GPU did not (alloc %llu)\n",
                            static_cast<unsigned long long>(events), static_cast<unsigned long long>(size));
                return 1;
            }
            live[address] = b;
            if (index == last_alloc) {
                (void)model.allocate(bytes{refused_size}, tensor_owner::step);
                refused = model.out_of_memory();
                std::printf("the request the GPU refused (%llu bytes), after event %llu: the model %s\n",
                            static_cast<unsigned long long>(refused_size), static_cast<unsigned long long>(events),
                            refused ? "refuses it too" : "grants it");
            }
        } else if (action == "free_completed") {
            const auto it = live.find(address);
            if (it == live.end()) return usage("a free of an address that was never allocated");
            model.release(it->second);
            live.erase(it);
        } else {
            return usage("an unknown action");
        }
        // The GPU's segment events come before the alloc they serve and after
        // the free that empties them, so the two agree after each event.
        if (!ends_only && !diverged && model.reserved().count != gpu_reserved) {
            std::printf("event %llu (%s %llu): the model reserves %.6f GB, the GPU %.6f GB\n",
                        static_cast<unsigned long long>(events), action.c_str(), static_cast<unsigned long long>(size),
                        gb(model.reserved().count), gb(gpu_reserved));
            diverged = true;
        }
    }
    const auto max_reserved = summary["max_reserved"].get<std::uint64_t>();
    const auto max_allocated = summary["max_allocated"].get<std::uint64_t>();
    std::printf("%llu events; reserved at the end: model %.6f GB, GPU %.6f GB; peak reserved: model %.6f GB, GPU %.6f GB; "
                "peak allocated: model %.6f GB, GPU %.6f GB\n",
                static_cast<unsigned long long>(events), gb(model.reserved().count), gb(gpu_reserved),
                gb(model.peak_reserved().count), gb(max_reserved), gb(model.peak_allocated().count), gb(max_allocated));
    if (pairs > 0)
        std::printf("a new segment lay below an older live one in %llu of %llu pairs (%.1f %%)\n",
                    static_cast<unsigned long long>(below), static_cast<unsigned long long>(pairs),
                    100.0 * static_cast<double>(below) / static_cast<double>(pairs));
    const bool ends = model.reserved().count == gpu_reserved && model.peak_reserved().count == max_reserved &&
                      model.peak_allocated().count == max_allocated;
    return diverged || !ends || (refused_request && !refused) ? 1 : 0;
}
