// anatomy-validate's logic, apart from CUDA: allocate a predicted peak set on
// a device buffer by buffer, reading free memory around each allocation, then
// free it; and the fit probe. The device is a template parameter so that the
// tests drive the same code with a model of the driver.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/driver.hpp>
#include <anatomy/error.hpp>
#include <anatomy/peak_set.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace anatomy::harness {

// What the harness needs of a device. allocate() returns nullptr when the
// device is out of memory and throws on any other failure.
template <class D>
concept AllocatingDevice = requires(D& d, bytes size, void* p) {
    { d.free_memory() } -> std::same_as<bytes>;
    { d.allocate(size) } -> std::same_as<void*>;
    d.release(p);
};

// One ledger entry: its predicted buffers against what the device showed.
struct entry_row {
    std::string entry;
    std::uint64_t buffers = 0;
    bytes logical{};    // what the buffers hold
    bytes predicted{};  // what cuda_driver says each buffer maps, summed
    bytes observed{};   // the drop of free memory around each cudaMalloc, summed
};

struct set_report {
    std::vector<entry_row> rows;  // in the order the set allocates them
    std::uint64_t allocated = 0;  // buffers allocated
    std::uint64_t planned = 0;    // buffers in the set
    bool out_of_memory = false;
    std::string failed_buffer;  // "activations: alive at the peak", when out of memory
    bytes failed_size{};
    bytes free_when_failed{};
    bytes free_before{};
    bytes free_after_release{};

    constexpr bool complete() const { return allocated == planned; }
    bytes predicted() const { return sum(&entry_row::predicted); }
    bytes observed() const { return sum(&entry_row::observed); }
    bool predicted_equals_observed() const {
        for (const entry_row& row : rows)
            if (row.predicted != row.observed) return false;
        return true;
    }

private:
    bytes sum(bytes entry_row::*field) const {
        bytes total{};
        for (const entry_row& row : rows) total += row.*field;
        return total;
    }
};

namespace detail {
inline entry_row& row_for(std::vector<entry_row>& rows, std::string_view entry) {
    for (entry_row& row : rows)
        if (row.entry == entry) return row;
    rows.push_back(entry_row{std::string(entry)});
    return rows.back();
}
}  // namespace detail

// Allocates every buffer of `set` in order, then frees them newest first, as
// a step releases what it allocated last first. Stops at the first buffer
// the device cannot hold. `touch` runs on each buffer once allocated (the
// CUDA harness writes it, so that the memory is known to be usable).
template <AllocatingDevice D>
set_report allocate_set(D& device, const peak_set& set,
                        const std::function<void(void*, bytes)>& touch = {}) {
    set_report report;
    for (const planned_buffer& b : set) report.planned += b.copies;
    std::vector<void*> held;
    held.reserve(report.planned);
    report.free_before = device.free_memory();
    cuda_driver model;  // the prediction, buffer by buffer
    const auto release_all = [&] {
        for (auto it = held.rbegin(); it != held.rend(); ++it) device.release(*it);
        held.clear();
    };
    try {
        for (const planned_buffer& b : set) {
            entry_row& row = detail::row_for(report.rows, b.entry);
            for (std::uint64_t copy = 0; copy < b.copies && !report.out_of_memory; ++copy) {
                const bytes before = device.free_memory();
                // A request larger than all the memory that was free is not made at all.
                const bool hopeless = b.size > report.free_before;
                void* p = b.size.count == 0 || hopeless ? nullptr : device.allocate(b.size);
                if (p == nullptr && b.size.count > 0) {
                    report.out_of_memory = true;
                    report.failed_buffer = std::string(b.entry) + ": " + std::string(b.what);
                    report.failed_size = b.size;
                    report.free_when_failed = before;
                    break;
                }
                if (p != nullptr) held.push_back(p);
                const bytes after = device.free_memory();
                if (p != nullptr && touch) touch(p, b.size);
                row.buffers += 1;
                row.logical += b.size;
                row.predicted += model.allocate(b.size);
                row.observed += before - after;
                report.allocated += 1;
            }
            if (report.out_of_memory) break;
        }
    } catch (...) {
        release_all();
        throw;
    }
    release_all();
    report.free_after_release = device.free_memory();
    return report;
}

struct fit_report {
    bytes free_at_start{};
    bytes budget{};            // what the probe plans for
    bytes ballast{};           // held back so that only the budget is free
    bytes free_under_ballast{};
    std::uint64_t batch = 0;   // the library's answer; 0: not even batch 1 fits
    set_report fits;           // batch's peak set: must allocate completely (none for batch 0)
    set_report next;           // batch + 1's: must run out of memory
    bool proven() const { return (batch == 0 || fits.complete()) && !next.complete(); }
};

// Proves `batch`, the library's largest batch for `budget`: its peak set
// allocates, batch + 1's does not. When the budget is below the free memory,
// a ballast buffer takes the difference first, rounded down to the driver's
// granularity. Asks for nothing larger than the free memory it found.
template <AllocatingDevice D>
fit_report fit_probe(D& device, bytes budget, std::uint64_t batch,
                     const std::function<peak_set(std::uint64_t)>& peak_set_of,
                     const std::function<void(void*, bytes)>& touch = {}) {
    fit_report report;
    report.free_at_start = device.free_memory();
    anatomy::detail::require(budget <= report.free_at_start,
                             "anatomy-validate: --budget is larger than the free device memory; pass at most the "
                             "free memory, or leave --budget out to use all of it");
    report.budget = budget;
    report.batch = batch;
    report.ballast =
        (report.free_at_start - budget) / cuda_page * cuda_page;
    void* ballast = nullptr;
    if (report.ballast.count > 0) {
        ballast = device.allocate(report.ballast);
        anatomy::detail::require(ballast != nullptr, "anatomy-validate: the ballast buffer did not fit; another "
                                                     "process is allocating on this device");
    }
    try {
        report.free_under_ballast = device.free_memory();
        if (batch > 0) report.fits = allocate_set(device, peak_set_of(batch), touch);
        report.next = allocate_set(device, peak_set_of(batch + 1), touch);
    } catch (...) {
        if (ballast) device.release(ballast);
        throw;
    }
    if (ballast) device.release(ballast);
    return report;
}

}  // namespace anatomy::harness
