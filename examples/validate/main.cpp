// anatomy-validate: allocates a predicted peak set on the GPU it runs on and
// compares, ledger entry by ledger entry, the device memory the library
// predicts with what cudaMemGetInfo shows; then, with --probe, proves the
// library's largest batch: its peak set allocates, batch + 1's does not.
//
//   anatomy-validate --model bert-large --batch 4 --seq 512 --weights fp32 --probe
//   anatomy-validate --framework llm.c --model d12 --batch 4 --seq 1024 --probe
//
// Exit status: 0 the prediction held, 3 it did not, 4 a CUDA call failed,
// 1 the inputs cannot be estimated, 2 usage error.
#include "../cli/app.hpp"
#include "../cli/llmc_commands.hpp"
#include "pages.hpp"
#include "probe.hpp"

#include <anatomy/peak_set.hpp>

#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace anatomy;
using namespace anatomy::cli;
using namespace anatomy::cli::app_detail;
using anatomy::harness::entry_row;
using anatomy::harness::fit_report;
using anatomy::harness::set_report;

constexpr int exit_mismatch = 3;
constexpr int exit_cuda_error = 4;

struct cuda_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check(cudaError_t status, const char* call) {
    if (status != cudaSuccess)
        throw cuda_error(fmt::format("anatomy-validate: {} failed: {} ({}); check that a CUDA device is visible "
                                     "and not in use by another process",
                                     call, cudaGetErrorString(status), static_cast<int>(status)));
}

// The device through the CUDA runtime: plain cudaMalloc, never managed memory.
class cuda_device {
public:
    bytes free_memory() const {
        std::size_t free = 0, total = 0;
        check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        return free * B;
    }
    void* allocate(bytes size) {
        void* p = nullptr;
        const cudaError_t status = cudaMalloc(&p, size.count);
        if (status == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();  // clear it: out of memory is an answer here, not a failure
            return nullptr;
        }
        check(status, "cudaMalloc");
        return p;
    }
    void release(void* p) { check(cudaFree(p), "cudaFree"); }
};
static_assert(anatomy::harness::AllocatingDevice<cuda_device>);

struct card {
    std::string name;
    bytes total{};
    bytes context{};  // total - free before the first buffer
};

card open_card() {
    check(cudaFree(nullptr), "cudaFree(nullptr) (creating the CUDA context)");
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
#if CUDART_VERSION >= 13000
    // CUDA 13 dropped Volta: this build has no kernel for sm_70 and no PTX it can take.
    if (prop.major < 7 || (prop.major == 7 && prop.minor < 5))
        throw std::runtime_error(fmt::format(
            "anatomy-validate: this build uses CUDA {}.{}, which has no code for {} (sm_{}{}); rebuild "
            "with CUDA 12 (CMake then adds sm_70)",
            CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, prop.name, prop.major, prop.minor));
#endif
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return {prop.name, total * B, (total - free) * B};
}

// Writes every page of each buffer once allocated; a failure surfaces at the sync.
void touch(void* p, bytes size) {
    check(anatomy::harness::stamp_pages(p, size.count, 0xA5), "stamp_pages (kernel launch)");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after stamp_pages");
}

peak_set llmc_peak_set(const llmc_request& q, std::uint64_t batch) {
    peak_set set;
    for (const llmc::buffer& b : llmc::peak_allocations(q.config, q.run, batch, q.seq))
        set.push_back({b.entry, b.name, b.size, 1});
    return set;
}

ojson rows_json(const set_report& r) {
    ojson rows = ojson::array();
    for (const entry_row& row : r.rows)
        rows.push_back(ojson{{"entry", row.entry},
                             {"buffers", row.buffers},
                             {"logical_bytes", row.logical.count},
                             {"predicted_bytes", row.predicted.count},
                             {"observed_bytes", row.observed.count}});
    ojson j{{"rows", std::move(rows)},
            {"buffers", r.planned},
            {"allocated", r.allocated},
            {"predicted_bytes", r.predicted().count},
            {"observed_bytes", r.observed().count},
            {"predicted_equals_observed", r.predicted_equals_observed()},
            {"free_before_bytes", r.free_before.count},
            {"free_after_release_bytes", r.free_after_release.count}};
    if (r.out_of_memory)
        j["out_of_memory"] = ojson{{"buffer", r.failed_buffer},
                                   {"bytes", r.failed_size.count},
                                   {"free_bytes", r.free_when_failed.count}};
    return j;
}

void print_rows(std::ostream& out, const set_report& r) {
    out << fmt::format("{:<18}{:>9}{:>20}{:>22}{:>22}\n", "entry", "buffers", "logical bytes", "predicted device",
                       "observed device");
    for (const entry_row& row : r.rows)
        out << fmt::format("{:<18}{:>9}{:>20}{:>22}{:>22}{}\n", row.entry, row.buffers, grouped(row.logical.count),
                           grouped(row.predicted.count), grouped(row.observed.count),
                           row.predicted == row.observed ? "" : "  <- differs");
    out << fmt::format("{:<18}{:>9}{:>20}{:>22}{:>22}\n", "total", r.allocated, "", grouped(r.predicted().count),
                       grouped(r.observed().count));
}

std::string failure_text(const set_report& r) {
    return fmt::format("cudaMalloc of {} bytes ({}) ran out of memory with {} bytes free, after {} of {} buffers; "
                       "everything freed, free memory back to {} bytes{}",
                       grouped(r.failed_size.count), r.failed_buffer, grouped(r.free_when_failed.count), r.allocated,
                       r.planned, grouped(r.free_after_release.count),
                       r.free_after_release == r.free_before ? " (as before)" : " (NOT as before)");
}

int run(const std::vector<std::string>& args) {
    raw_options o;
    bool probe = false;
    CLI::App app{"anatomy-validate: allocate the predicted peak set on this GPU and compare", "anatomy-validate"};
    add_model_flags(app, o, true);
    app.add_option("--budget", o.budget, "the fit probe's budget (default: the free device memory)")
        ->type_name("SIZE");
    app.add_flag("--probe", probe, "prove the library's largest batch: it allocates, batch + 1 does not");
    try {
        std::vector<std::string> reversed(args.rbegin(), args.rend());
        app.parse(std::move(reversed));
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "anatomy-validate: " << one_line(e.what()) << "; see `anatomy-validate --help`\n";
        return exit_usage_error;
    }
    if (!o.gpu.empty()) usage("--gpu: anatomy-validate measures the card it runs on; drop --gpu");
    if (!o.budget.empty() && !probe) usage("--budget: sizes the fit probe; pass --probe too");
    const bool llmc_run = wants_llmc(o);
    raw_options model_only = o;
    model_only.budget.clear();  // the budget is read here, against the card's free memory
    const std::optional<llmc_request> lq =
        llmc_run ? std::optional(build_llmc_request(model_only, true)) : std::nullopt;
    const std::optional<request> pq = llmc_run ? std::nullopt : std::optional(build_request(model_only, true));

    const card c = open_card();
    cuda_device device;
    ojson j;
    j["device"] = ojson{{"name", c.name}, {"total_bytes", c.total.count}, {"context_bytes", c.context.count}};
    if (!o.json)
        std::cout << fmt::format("anatomy-validate on {}: {} bytes ({} MiB); CUDA context {} bytes ({:.1f} MiB), "
                                 "the total minus the free memory before the first buffer\n\n",
                                 c.name, grouped(c.total.count), c.total / MiB, grouped(c.context.count),
                                 in_mib(c.context));

    std::function<peak_set(std::uint64_t)> peak_set_of;
    std::uint64_t batch = 0;
    if (lq) {
        if (!o.json) print_llmc_header(std::cout, *lq, true);
        peak_set_of = [&](std::uint64_t b) { return llmc_peak_set(*lq, b); };
        batch = lq->batch;
    } else {
        if (!o.json) print_header(std::cout, *pq, shape_line::with_batch);
        peak_set_of = [&](std::uint64_t b) {
            shape s = pq->s;
            s.batch = b;
            return plan_peak_set(pq->model, pq->make_recipe(), s).buffers;
        };
        batch = pq->s.batch;
    }

    const set_report set = anatomy::harness::allocate_set(device, peak_set_of(batch), touch);
    bool held = set.complete() && set.predicted_equals_observed() && set.free_after_release == set.free_before;
    j["set"] = rows_json(set);
    j["set"]["batch"] = batch;
    if (!o.json) {
        std::cout << fmt::format("\npeak set at batch {}: {} buffers, each a cudaMalloc of its own, in the order a "
                                 "step allocates them, then freed newest first\n",
                                 batch, set.planned);
        print_rows(std::cout, set);
        if (!set.complete()) std::cout << "does not fit this card: " << failure_text(set) << '\n';
        std::cout << fmt::format("predicted == observed for every entry: {}; free memory after freeing: {} bytes{}\n",
                                 set.predicted_equals_observed() ? "yes" : "NO", grouped(set.free_after_release.count),
                                 set.free_after_release == set.free_before ? " (as before)" : " (NOT as before)");
    }

    if (probe) {
        bytes budget = device.free_memory();
        if (!o.budget.empty()) {
            try {
                budget = parse_bytes(o.budget);
            } catch (const anatomy::error& e) {
                usage("--budget: cannot read \"{}\": {}", shorten(o.budget), without_prefix(e.what()));
            }
        }
        const std::uint64_t best = lq ? llmc::max_batch(lq->config, lq->run, lq->seq, budget)
                                      : max_batch_of_peak_set(pq->model, pq->make_recipe(), pq->s, budget);
        const fit_report fit = anatomy::harness::fit_probe(device, budget, best, peak_set_of, touch);
        held = held && fit.proven();
        j["probe"] = ojson{{"budget_bytes", fit.budget.count},
                           {"ballast_bytes", fit.ballast.count},
                           {"free_under_ballast_bytes", fit.free_under_ballast.count},
                           {"max_batch", fit.batch},
                           {"fits", rows_json(fit.fits)},
                           {"next", rows_json(fit.next)},
                           {"proven", fit.proven()}};
        if (!o.json) {
            std::cout << fmt::format("\nfit probe: budget {} bytes{}; the library's largest batch: {}{}\n",
                                     grouped(fit.budget.count),
                                     o.budget.empty() ? " (the free memory)"
                                                      : fmt::format(" (a ballast of {} bytes holds the rest)",
                                                                    grouped(fit.ballast.count)),
                                     fit.batch, fit.batch == 0 ? " (not even batch 1 fits)" : "");
            if (fit.batch > 0)
                std::cout << fmt::format("  batch {}: {} of {} buffers allocated, device memory predicted {} "
                                         "observed {} bytes\n",
                                         fit.batch, fit.fits.allocated, fit.fits.planned,
                                         grouped(fit.fits.predicted().count), grouped(fit.fits.observed().count));
            std::cout << fmt::format("  batch {}: {}\n", fit.batch + 1,
                                     fit.next.complete() ? "ALLOCATED: the library under-counts this batch"
                                                         : failure_text(fit.next));
            std::cout << fmt::format("  proven: {}\n", fit.proven() ? "yes" : "NO");
        }
    }
    j["held"] = held;
    if (o.json) std::cout << j.dump(2) << '\n';
    else std::cout << fmt::format("\nprediction held: {}\n", held ? "yes" : "NO");
    return held ? 0 : exit_mismatch;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc));
    } catch (const cuda_error& e) {
        std::cerr << e.what() << '\n';
        return exit_cuda_error;
    } catch (const anatomy::cli::usage_error& e) {
        std::cerr << "anatomy-validate: " << one_line(without_prefix(e.what())) << '\n';
        return exit_usage_error;
    } catch (const anatomy::cli::input_error& e) {
        std::cerr << "anatomy-validate: " << one_line(without_prefix(e.what())) << '\n';
        return exit_input_error;
    } catch (const anatomy::error& e) {
        std::cerr << "anatomy-validate: " << one_line(without_prefix(e.what())) << '\n';
        return exit_input_error;
    } catch (const std::exception& e) {
        std::cerr << "anatomy-validate: " << one_line(e.what()) << '\n';
        return exit_input_error;
    }
}
