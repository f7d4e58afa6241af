// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp)
// for one stream: what `memory_reserved` and `memory_allocated` become for a
// sequence of tensor allocations and frees.
//
// Requests are rounded to 512 B. Requests up to 1 MiB come from the small
// pool, whose segments are 2 MiB; larger ones from the large pool, whose
// segments are 20 MiB for requests under 10 MiB and the request rounded up to
// 2 MiB otherwise. A request takes the best-fitting cached free block of its
// pool, the lowest address among equal sizes, and splits it when the rest is
// worth keeping (>= 512 B in the small pool, > 1 MiB in the large one);
// otherwise it takes the whole block, and
// `memory_allocated` counts the whole block. Freed blocks merge with free
// neighbours of the same segment. Under a cap (set_per_process_memory_fraction)
// a new segment that would exceed it first releases every fully free segment.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/detail/growing_vector.hpp>
#include <anatomy/error.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace anatomy {

// The identity of an allocated block: what allocate() returned for a tensor,
// and what frees exactly that tensor.
using block_id = std::size_t;
inline constexpr block_id no_block = static_cast<block_id>(-1);

// Who owns a block, so that whole groups can be freed at once.
enum class tensor_owner : std::uint8_t {
    step,      // activations, temporaries: freed by the step (the rest when its outputs die)
    cache,     // autocast's cast cache: freed when the autocast region exits
    base_model,  // the base model's masks and rotary tables: freed when it returns, before the head
    gradient,  // parameter gradients: freed by zero_grad(set_to_none=True)
    model,     // parameters and optimizer state: never freed
};

// What a block holds, by the estimate's ledger entries (memory_ledger): how
// a recorded replay is broken down. Allocator rounding is in every block.
enum class block_use : std::uint8_t {
    weights,
    gradients,
    master_weights,
    optimizer_state,
    activations,  // the step's tensors, transient ones included
    temporaries,  // the optimizer step's scratch
    communication,  // DDP's buckets, DeepSpeed's buffers
    gathered_weights,  // FSDP's and ZeRO-3's all-gathered parameters
    workspaces,  // a cuBLAS handle's workspace, made at its first matmul
};
inline constexpr std::size_t block_use_count = 9;

// What an owner's blocks hold unless the allocation says otherwise.
constexpr block_use default_use(tensor_owner owner) {
    switch (owner) {
        case tensor_owner::model: return block_use::weights;
        case tensor_owner::gradient: return block_use::gradients;
        case tensor_owner::step:
        case tensor_owner::cache:
        case tensor_owner::base_model: break;
    }
    return block_use::activations;
}

// The threads whose cuBLAS handles make a workspace: the forward's, and
// autograd's, which runs the backward.
enum class blas_thread : std::uint8_t { forward, backward };

// The replay over time, when recorded (the CLI's --plot draws it): the
// allocated bytes of each use and the reserved bytes after every
// allocation and free, and where each phase of the step begins.
struct memory_sample {
    std::array<bytes, block_use_count> allocated;  // by block_use
    bytes reserved;
};
struct phase_mark {
    std::size_t sample;  // the first sample of the phase
    const char* name;
};
struct memory_timeline {
    std::vector<memory_sample> samples;
    std::vector<phase_mark> phases;
};

// The calls one walk of a step makes, with tensors named by when they were
// allocated (the tape's ordinal), not where: the walk decides what to
// allocate and free from the shape and the recipe alone, never from the
// allocator's answers, so a later step with the same walk makes the same
// calls, and caching_allocator::play replays them without walking again.
//
// A layer's tape (caching_allocator::layer_tape_into) may also free blocks
// allocated before it that its caller names, its externals: the next layer
// of a run makes the same calls on its own externals.
enum class allocator_call : std::uint8_t { allocate, release, release_external, release_all, mark };
struct allocator_event {
    // allocate: the block's bytes (the request rounded); release: the ordinal of the allocation
    // it frees; release_external: the index of the external it frees; mark:
    // the index of its name in allocator_tape::names.
    std::uint64_t value = 0;
    allocator_call call{};
    tensor_owner owner{};  // allocate, release_all
    block_use use{};       // allocate
    std::uint8_t size_class = 0;  // allocate: the class of its block, which a play need not work out again
};
struct allocator_tape {
    detail::growing_vector<allocator_event> events;  // 16 bytes each: a llama-3-8b step is about 7,000
    detail::growing_vector<const char*> names;
    std::size_t allocations = 0;
    // Whether the tape stands alone: false when the walk freed a block it did
    // not allocate (nor, for a layer's tape, was named as an external), which
    // a replay could not name.
    bool self_contained = true;
};

// How a layer's tape names a block (caching_allocator::layer_ref): no_ref for
// no block; untaped_ref for one it cannot name; an external's index with
// external_ref set; otherwise the ordinal of the allocation that placed it.
inline constexpr std::size_t no_ref = static_cast<std::size_t>(-1);
inline constexpr std::size_t untaped_ref = static_cast<std::size_t>(-2);
inline constexpr std::size_t external_ref = std::size_t{1} << (8 * sizeof(std::size_t) - 2);

class caching_allocator {
public:
    static constexpr std::uint64_t small_size = 1024 * 1024;        // kSmallSize
    static constexpr std::uint64_t small_buffer = 2 * 1024 * 1024;  // kSmallBuffer
    static constexpr std::uint64_t large_buffer = 20 * 1024 * 1024;  // kLargeBuffer
    static constexpr std::uint64_t min_large_alloc = 10 * 1024 * 1024;  // kMinLargeAlloc
    static constexpr std::uint64_t round_large = 2 * 1024 * 1024;    // kRoundLarge

    // `cap` 0: no cap.
    constexpr explicit caching_allocator(bytes cap = {}) : cap_(cap.count) {
        for (auto& pool : first_free_)
            for (std::size_t& first : pool) first = none;
    }

    // Returns the block that holds the tensor: no_block for an empty request,
    // and when the request cannot be met under the cap (an OOM).
    constexpr block_id allocate(bytes request, tensor_owner owner) { return allocate(request, owner, default_use(owner)); }
    constexpr block_id allocate(bytes request, tensor_owner owner, block_use use) {
        const std::uint64_t size = block_size(request).count;
        return allocate_block(size, size == 0 ? 0 : size_class(size), owner, use);
    }
    // A cuBLAS handle's workspace, made when its thread first multiplies,
    // right after that product's output, and kept for good: the forward's
    // thread makes one at the first forward product (a rotary embedding's
    // frequencies, else the first linear; traced: gemma-3-1b), autograd's
    // thread its own in the first backward. The replay defers each here, and
    // the walk arms it while the first kernel of its pass that multiplies
    // allocates: it follows that kernel's first allocation. Tapes do not
    // record it: the steps that play them make no new handle.
    constexpr void defer_workspace(bytes size, blas_thread thread) {
        deferred_workspace_[static_cast<std::size_t>(thread)] = size.count;
    }
    constexpr void place_workspace_after_next_allocation(bool armed, blas_thread thread) {
        armed_thread_ = thread;
        workspace_armed_ = armed && deferred_workspace_[static_cast<std::size_t>(thread)] != 0;
    }
    // Records every allocation and free into `timeline` from now on.
    constexpr void record_into(memory_timeline* timeline) { timeline_ = timeline; }
    // When recording: the phase `name` begins here.
    constexpr void mark(const char* name) {
        for (allocator_tape* tape : {tape_, layer_tape_}) {
            if (tape == nullptr) continue;
            tape->events.push_back({.value = tape->names.size(), .call = allocator_call::mark});
            tape->names.push_back(name);
        }
        if (timeline_ != nullptr) timeline_->phases.push_back({timeline_->samples.size(), name});
    }

    // Writes every call from now on into `tape` (nullptr: stops), which
    // must be empty.
    constexpr void tape_into(allocator_tape* tape) {
        tape_ = tape;
        if (tape_ == nullptr) return;
        detail::require(tape_->events.empty() && tape_->allocations == 0,
                        "anatomy::caching_allocator::tape_into: the tape is not empty");
        for (block& b : blocks_) b.tape_ordinal = untaped;  // blocks from before the tape
    }
    // Makes the calls of `tape` again, each tensor freed where this replay put it.
    constexpr void play(const allocator_tape& tape) {
        detail::require(tape_ == nullptr, "anatomy::caching_allocator::play: a step's tape is being written");
        detail::growing_vector<block_id> placed;
        play(tape, nullptr, placed);
    }
    // The same for a layer's tape, whose external i is externals[i] here;
    // `placed` receives the block of each of its allocations, by ordinal.
    // A step's tape may be written meanwhile: it records the calls made.
    constexpr void play(const allocator_tape& tape, const block_id* externals, detail::growing_vector<block_id>& placed) {
        detail::require(tape.self_contained && layer_tape_ == nullptr,
                        "anatomy::caching_allocator::play: the tape frees blocks it does not name, or a layer's "
                        "tape is being written");
        ++tapes_played_;
        placed.clear();
        placed.extend(tape.allocations);
        block_id* at = placed.data();
        for (const allocator_event& e : tape.events) {
            switch (e.call) {
                case allocator_call::allocate: *at++ = allocate_block(e.value, e.size_class, e.owner, e.use); break;
                case allocator_call::release: release(placed[e.value]); break;
                case allocator_call::release_external: release(externals[e.value]); break;
                case allocator_call::release_all: release_all(e.owner); break;
                case allocator_call::mark: mark(tape.names[e.value]); break;
            }
        }
    }

    // Writes every call from now on into `tape` as well (nullptr: stops),
    // which must be empty: one layer's calls, to be played for the next
    // layers of its run. externals[0, count) are blocks from before it
    // that it may free; no_block among them is skipped.
    constexpr void layer_tape_into(allocator_tape* tape, const block_id* externals = nullptr, std::size_t count = 0) {
        layer_tape_ = tape;
        if (tape == nullptr) return;
        detail::require(tape->events.empty() && tape->allocations == 0,
                        "anatomy::caching_allocator::layer_tape_into: the tape is not empty");
        for (block& b : blocks_) b.layer_ordinal = untaped;
        for (std::size_t i = 0; i < count; ++i)
            if (externals[i] != no_block) blocks_[externals[i]].layer_ordinal = external_ref | i;
    }
    // How the layer's tape being written names `id` (no_ref also for a block
    // no longer allocated).
    constexpr std::size_t layer_ref(block_id id) const {
        if (id == no_block) return no_ref;
        const block& b = blocks_[id];
        return b.free || b.dead ? no_ref : b.layer_ordinal;
    }

    // Frees the tensor that allocate() placed in `id` (no_block: nothing).
    constexpr void release(block_id id) {
        if (id == no_block) return;
        const block* x = id < blocks_.size() ? blocks_.data() + id : nullptr;
        if (x == nullptr || x->free || x->dead)
            throw error("anatomy::caching_allocator::release: the block is not live; a tensor was freed twice");
        if (tape_ != nullptr) tape_release(*tape_, x->tape_ordinal);
        if (layer_tape_ != nullptr) tape_release(*layer_tape_, x->layer_ordinal);
        free_block(id);
        if (timeline_ != nullptr) record_sample();
    }

    // Frees every live block of `owner`. The order does not matter: free
    // neighbours merge into the same blocks whichever is freed first.
    constexpr void release_all(tensor_owner owner) {
        for (allocator_tape* tape : {tape_, layer_tape_})
            if (tape != nullptr) tape->events.push_back({.call = allocator_call::release_all, .owner = owner});
        const block* bs = blocks_.data();  // free_block adds no block
        const std::size_t n = blocks_.size();
        for (std::size_t b = 0; b < n; ++b) {
            if (bs[b].dead || bs[b].free || bs[b].owner != owner) continue;
            free_block(b);
            if (timeline_ != nullptr) record_sample();  // a sample a tensor, as release() records
        }
    }

    // Blocks of live segments add up to the reserved bytes, and the free list
    // holds exactly the free ones: a self-check for tests.
    constexpr bool consistent() const {
        std::uint64_t total = 0;
        std::uint64_t used = 0;
        std::size_t free_blocks = 0;
        for (const block& b : blocks_) {
            if (b.dead) continue;
            total += b.size;
            if (b.free) ++free_blocks;
            else used += b.size;
        }
        return total == reserved_ && used == allocated_ && free_blocks == cached_blocks();
    }
    constexpr bytes allocated() const { return bytes{allocated_}; }
    constexpr bytes reserved() const { return bytes{reserved_}; }
    constexpr bytes peak_allocated() const { return bytes{peak_allocated_}; }
    // The peak of the allocated bytes less the workspaces' blocks at the
    // time: the step's tensors', as an estimate counts them.
    constexpr bytes peak_tensors() const { return bytes{peak_tensors_}; }
    constexpr bytes peak_reserved() const { return bytes{peak_reserved_}; }
    // torch.cuda.reset_peak_memory_stats() for the allocated bytes: the peak
    // from now on.
    constexpr void restart_peak_allocated() {
        peak_allocated_ = allocated_;
        peak_tensors_ = tensors_allocated();
    }
    constexpr bool out_of_memory() const { return out_of_memory_; }
    // How many tapes, of steps and of layers, were played: calls not walked.
    constexpr std::size_t tapes_played() const { return tapes_played_; }
    // What tells whether the allocator is back in the state it was in: its
    // segments, and which blocks are live. Free neighbours always merge, so
    // a segment's free blocks are the gaps between its live ones, and with
    // the same segments and the same live blocks the state is the same (up
    // to the slots that hold the blocks, which no answer depends on). Then
    // the same calls make the same answers: a replay skips a micro-step or a
    // step that repeats one that left the state as it found it.
    struct state_token {
        std::uint64_t segment_changes = 0;  // segments created or released
        std::uint64_t live_blocks = 0;
        std::uint64_t live_serials = 0;  // the sum of the live blocks' allocation serials
    };
    constexpr state_token state() const { return {segments_ + segments_released_, live_blocks_, live_serials_}; }
    // Whether the state is again what it was when `token` was taken. With
    // no segment created or released since, the live blocks are the same
    // when their count and serial sum are: had n > 0 older blocks been
    // freed and n newer ones stayed live, the newer serials, each larger
    // than any older one, would sum to more. The sums are modulo 2^64;
    // below 2^32 allocations and live blocks, the difference of such sums
    // is under 2^64, so equal sums are equal (beyond that: answers false).
    constexpr bool unchanged_since(const state_token& token) const {
        constexpr std::uint64_t bound = std::uint64_t{1} << 32;
        return segments_ + segments_released_ == token.segment_changes && live_blocks_ == token.live_blocks &&
               live_serials_ == token.live_serials && allocations_ < bound && live_blocks_ < bound;
    }
    // How many free blocks the pools cache.
    constexpr std::size_t cached_blocks() const {
        std::size_t n = 0;
        for (const auto& pool : first_free_)
            for (std::size_t b : pool)
                for (; b != none; b = blocks_[b].next_free) ++n;
        return n;
    }

private:
    static constexpr std::size_t none = static_cast<std::size_t>(-1);
    static constexpr std::size_t untaped = untaped_ref;

    // The allocated bytes less the workspaces' blocks.
    constexpr std::uint64_t tensors_allocated() const {
        return allocated_ - used_[static_cast<std::size_t>(block_use::workspaces)];
    }

    constexpr void place_deferred_workspace() {
        std::uint64_t& deferred = deferred_workspace_[static_cast<std::size_t>(armed_thread_)];
        const std::uint64_t size = deferred;
        deferred = 0;
        workspace_armed_ = false;
        allocator_tape* const step_tape = tape_;
        allocator_tape* const layer_tape = layer_tape_;
        tape_ = layer_tape_ = nullptr;
        (void)allocate(bytes{size}, tensor_owner::model, block_use::workspaces);
        tape_ = step_tape;
        layer_tape_ = layer_tape;
    }

    // allocate() of a request rounded to `size` (0: none) in size class `c`.
    constexpr block_id allocate_block(std::uint64_t size, std::size_t c, tensor_owner owner, block_use use) {
        const std::size_t ordinal = tape_ != nullptr ? tape_allocation(*tape_, size, c, owner, use) : untaped;
        const std::size_t layer_ordinal =
            layer_tape_ != nullptr ? tape_allocation(*layer_tape_, size, c, owner, use) : untaped;
        // After a request failed the replay has its answer; the rest is not simulated.
        if (size == 0 || out_of_memory_) return no_block;
        const bool small = size <= small_size;
        std::size_t b = best_fit(size, c, small);
        if (b == none) {
            const std::uint64_t segment = segment_size(size);
            if (cap_ != 0 && reserved_ + segment > cap_) {
                release_free_segments();
                if (reserved_ + segment > cap_) {
                    out_of_memory_ = true;
                    return no_block;
                }
            }
            b = new_segment(segment, small);
        }
        block* bs = blocks_.data();
        // Split when the remainder is worth keeping.
        const std::uint64_t rest = bs[b].size - size;
        if (small ? rest >= allocator_min_block.count : rest > small_size) {
            const std::size_t tail = add_block();
            bs = blocks_.data();  // add_block may grow the blocks
            block& head = bs[b];
            // The tail follows the head in its segment.
            bs[tail] = {.size = rest, .segment = head.segment, .offset = head.offset + size, .small = small,
                        .prev = b, .next = head.next};
            if (head.next != none) bs[head.next].prev = tail;
            head.size = size;
            head.next = tail;
            list_free(tail);
        }
        block& taken = bs[b];
        taken.free = false;
        taken.owner = owner;
        taken.use = use;
        taken.tape_ordinal = ordinal;
        taken.layer_ordinal = layer_ordinal;
        taken.serial = allocations_++;
        ++live_blocks_;
        live_serials_ += taken.serial;  // modulo 2^64: see unchanged_since
        allocated_ += taken.size;
        used_[static_cast<std::size_t>(use)] += taken.size;
        if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
        if (tensors_allocated() > peak_tensors_) peak_tensors_ = tensors_allocated();
        if (timeline_ != nullptr) record_sample();
        if (workspace_armed_) place_deferred_workspace();
        return b;
    }

    struct block {
        std::uint64_t size = 0;
        std::uint64_t segment = 0;
        std::uint64_t offset = 0;
        bool small = false;
        bool free = true;
        tensor_owner owner = tensor_owner::step;
        block_use use = block_use::activations;
        std::uint8_t listed_class = 0;  // while free: the size class it is listed under
        bool dead = false;  // merged away
        std::size_t prev = none;  // the neighbours in the segment
        std::size_t next = none;
        std::size_t prev_free = none;  // while free: the neighbours in its size class's list
        std::size_t next_free = none;
        std::size_t tape_ordinal = untaped;  // while taping: which allocation placed it
        std::size_t layer_ordinal = untaped;  // while taping a layer: the same, or external_ref | its index
        std::uint64_t serial = 0;  // while allocated: how many allocations came before it
    };

    static constexpr std::uint64_t segment_size(std::uint64_t size) {
        if (size <= small_size) return small_buffer;
        if (size < min_large_alloc) return large_buffer;
        return detail::round_up(size, round_large);
    }

    // A slot for a new block, for the caller to write: a merged-away one if any.
    constexpr std::size_t add_block() {
        if (!spare_.empty()) {
            const std::size_t i = spare_.back();
            spare_.pop_back();
            return i;
        }
        blocks_.extend(1);
        return blocks_.size() - 1;
    }

    constexpr std::size_t new_segment(std::uint64_t segment, bool small) {
        reserved_ += segment;
        if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
        const std::size_t b = add_block();
        blocks_[b] = {.size = segment, .segment = segments_++, .small = small};
        return b;
    }

    // Free blocks are kept per pool in the allocator's own (stream, size,
    // address) order. Addresses are cudaMalloc's, and the driver hands out
    // address space from the top down: in six H200 traces a new segment lay
    // below an older live one in 99.6-100 % of the pairs
    // (tests/calibration/segment_trace_check.cpp prints it). So the order is
    // (size, newest segment first, offset). Each pool is split by size
    // class, a quarter of an octave wide, and each class is a sorted list
    // linked through its blocks: a block leaves it without a search, and
    // an insert walks from the class's smallest block, about 1.3 blocks on
    // average in a llama-3-8b solve, where the large pool caches about 450
    // (many blocks of one size in one class are walked past, though); the
    // classes in order are the pool in order.
    static constexpr std::size_t size_classes = 4 * 56;  // sizes below 2^64 in 512-B units
    static constexpr std::size_t class_words = (size_classes + 63) / 64;

    static constexpr std::size_t size_class(std::uint64_t size) {
        const std::uint64_t units = size / allocator_min_block.count;  // >= 1: blocks are 512-B multiples
        const std::uint64_t top = std::bit_width(units) - 1;  // the octave
        const std::uint64_t quarter = top >= 2 ? (units >> (top - 2)) & 3u : (units << (2 - top)) & 3u;
        return static_cast<std::size_t>(4 * top + quarter);
    }
    constexpr void list_free(std::size_t b) {
        block* bs = blocks_.data();
        block& x = bs[b];
        const std::size_t c = size_class(x.size);
        const std::size_t pool = x.small ? 1 : 0;
        x.listed_class = static_cast<std::uint8_t>(c);
        // After every listed block that comes before x.
        std::size_t prev = none;
        std::size_t next = first_free_[pool][c];
        while (next != none) {
            const block& y = bs[next];
            const bool before = y.size != x.size ? y.size < x.size
                                : y.segment != x.segment ? y.segment > x.segment  // a newer segment lies lower
                                                         : y.offset < x.offset;
            if (!before) break;
            prev = next;
            next = y.next_free;
        }
        x.prev_free = prev;
        x.next_free = next;
        if (next != none) bs[next].prev_free = b;
        if (prev != none) {
            bs[prev].next_free = b;
        } else {
            first_free_[pool][c] = b;
            occupied_[pool][c / 64] |= std::uint64_t{1} << (c % 64);
        }
    }
    constexpr void unlist_free(std::size_t b) {
        block* bs = blocks_.data();
        const block& x = bs[b];
        if (x.next_free != none) bs[x.next_free].prev_free = x.prev_free;
        if (x.prev_free != none) {
            bs[x.prev_free].next_free = x.next_free;
        } else {
            const std::size_t c = x.listed_class;
            const std::size_t pool = x.small ? 1 : 0;
            first_free_[pool][c] = x.next_free;
            if (x.next_free == none) occupied_[pool][c / 64] &= ~(std::uint64_t{1} << (c % 64));
        }
    }
    // The first occupied class of the pool at or above `c`; size_classes if none.
    constexpr std::size_t occupied_from(std::size_t pool, std::size_t c) const {
        const std::uint64_t* words = occupied_[pool];
        for (std::size_t w = c / 64; w < class_words; ++w) {
            const std::uint64_t word = w == c / 64 ? words[w] & (~std::uint64_t{0} << (c % 64)) : words[w];
            if (word != 0) return 64 * w + static_cast<std::size_t>(std::countr_zero(word));
        }
        return size_classes;
    }

    // The smallest free block of the pool that fits, the lowest address
    // among equals: the first at least `size` in its own class, or
    // else the first of the next occupied class.
    constexpr std::size_t best_fit(std::uint64_t size, std::size_t c, bool small) {
        const std::size_t pool = small ? 1 : 0;
        const block* bs = blocks_.data();
        std::size_t b = first_free_[pool][c];
        while (b != none && bs[b].size < size) b = bs[b].next_free;
        if (b == none) {
            c = occupied_from(pool, c + 1);
            if (c == size_classes) return none;
            b = first_free_[pool][c];
        }
        unlist_free(b);
        return b;
    }

    // Called only when recording: every allocation and free tests timeline_
    // inline.
    constexpr void record_sample() {
        memory_sample s{};
        for (std::size_t i = 0; i < block_use_count; ++i) s.allocated[i] = bytes{used_[i]};
        s.reserved = bytes{reserved_};
        timeline_->samples.push_back(s);
    }

    constexpr void free_block(std::size_t b) {
        block* bs = blocks_.data();  // no block is added below
        block& x = bs[b];
        allocated_ -= x.size;
        --live_blocks_;
        live_serials_ -= x.serial;
        used_[static_cast<std::size_t>(x.use)] -= x.size;
        x.free = true;
        // Merge with free neighbours in the same segment.
        if (x.next != none && bs[x.next].free) {
            block& next = bs[x.next];
            unlist_free(x.next);
            next.dead = true;
            spare_.push_back(x.next);
            x.size += next.size;
            x.next = next.next;
            if (x.next != none) bs[x.next].prev = b;
        }
        if (x.prev != none && bs[x.prev].free) {
            block& prev = bs[x.prev];
            unlist_free(x.prev);
            prev.size += x.size;
            prev.next = x.next;
            if (x.next != none) bs[x.next].prev = x.prev;
            x.dead = true;
            spare_.push_back(b);
            list_free(x.prev);
            return;
        }
        list_free(b);
    }

    // release_cached_blocks(): segments whose one block is free go back to CUDA.
    constexpr void release_free_segments() {
        block* bs = blocks_.data();  // no block is added below
        for (std::size_t pool = 0; pool < 2; ++pool)
            for (std::size_t c = occupied_from(pool, 0); c < size_classes; c = occupied_from(pool, c + 1))
                for (std::size_t b = first_free_[pool][c]; b != none;) {
                    block& x = bs[b];
                    const std::size_t next = x.next_free;
                    if (x.prev == none && x.next == none) {
                        unlist_free(b);
                        reserved_ -= x.size;
                        ++segments_released_;
                        x.dead = true;
                        spare_.push_back(b);
                    }
                    b = next;
                }
    }

    std::uint64_t cap_ = 0;
    std::uint64_t allocated_ = 0;
    std::uint64_t reserved_ = 0;
    std::uint64_t peak_allocated_ = 0;
    std::uint64_t peak_tensors_ = 0;
    std::uint64_t deferred_workspace_[2] = {0, 0};  // by blas_thread
    blas_thread armed_thread_ = blas_thread::forward;
    bool workspace_armed_ = false;
    std::uint64_t peak_reserved_ = 0;
    std::uint64_t segments_ = 0;  // created: each one's number
    std::uint64_t segments_released_ = 0;
    std::uint64_t allocations_ = 0;
    std::uint64_t live_blocks_ = 0;
    std::uint64_t live_serials_ = 0;
    bool out_of_memory_ = false;
    std::size_t tapes_played_ = 0;
    // Built-in arrays and growing_vector: cheap in constant evaluation,
    // where a replay must fit g++'s operation limit (growing_vector.hpp).
    detail::growing_vector<block> blocks_;
    // The first free block of each size class, of the large pool, then the small pool's.
    std::size_t first_free_[2][size_classes];
    std::uint64_t occupied_[2][class_words]{};  // bit c: class c holds a block
    detail::growing_vector<std::size_t> spare_;
    std::uint64_t used_[block_use_count]{};  // allocated bytes by block_use
    memory_timeline* timeline_ = nullptr;
    allocator_tape* tape_ = nullptr;
    allocator_tape* layer_tape_ = nullptr;

    // An allocation's ordinal on `tape`.
    static constexpr std::size_t tape_allocation(allocator_tape& tape, std::uint64_t size, std::size_t c,
                                                 tensor_owner owner, block_use use) {
        tape.events.push_back({.value = size, .call = allocator_call::allocate, .owner = owner, .use = use,
                               .size_class = static_cast<std::uint8_t>(c)});
        return tape.allocations++;
    }
    // The release of the block `tape` names `ordinal` (a step's tape names no external).
    static constexpr void tape_release(allocator_tape& tape, std::size_t ordinal) {
        if (ordinal == untaped) tape.self_contained = false;
        const bool external = ordinal != untaped && (ordinal & external_ref) != 0;
        tape.events.push_back({.value = external ? ordinal & ~external_ref : ordinal,
                               .call = external ? allocator_call::release_external : allocator_call::release});
    }
};

}  // namespace anatomy
