// Random presets x recipes x catalogue cards against the properties the
// tests state on fixed grids: the peak never falls as the batch grows, the
// replay never reserves less than it allocates or than the analytic peak,
// max_batch's answer fits and the next batch does not, and no call fails
// with an internal error. Combinations the library refuses are counted, not
// errors. A peak that falls as tokens double is printed apart: PyTorch's
// kernel choice can do that (mistral at its sliding window, docs/accuracy.md).
//
//   g++ -std=c++20 -O2 -Iinclude bench/probe/random_recipes.cpp -o /tmp/random_recipes
//   for s in $(seq 1 40); do /tmp/random_recipes $s 2000; done
#include <anatomy/anatomy.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using namespace anatomy;

int main(int argc, char** argv) {
    const unsigned seed = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1;
    const int trials = argc > 2 ? std::atoi(argv[2]) : 2000;
    std::mt19937_64 g(seed);
    auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(g); };
    int estimated = 0, refused = 0, broken = 0, falls_with_tokens = 0;
    for (int t = 0; t < trials; ++t) {
        const auto& p = presets::all[pick(presets::all.size())];
        const model_spec m = p.spec();
        recipe r{};
        r.weights = std::array{dtype::fp32, dtype::bf16, dtype::fp16}[pick(3)];
        r.autocast = std::array{autocast_mode::off, autocast_mode::bf16, autocast_mode::fp16}[pick(3)];
        if (is_half(r.weights) && pick(3) == 0) r.master = master_weights::fp32;
        r.optimizer = std::array{optimizer_kind::adamw,     optimizer_kind::adamw_fused,  optimizer_kind::adamw_forloop,
                                 optimizer_kind::sgd,       optimizer_kind::sgd_momentum, optimizer_kind::adafactor,
                                 optimizer_kind::adam8bit,  optimizer_kind::lion}[pick(8)];
        r.grad_accum = std::array{1, 1, 2, 4}[pick(4)];
        r.grad_checkpointing = pick(2) == 1;
        if (r.grad_checkpointing && pick(3) == 0) r.checkpoint = checkpoint_impl::non_reentrant;
        r.attention = pick(4) == 0 ? attention_kernel::eager : attention_kernel::sdpa;
        r.loop = std::array{training_loop::plain, training_loop::loss_only, training_loop::hf_trainer}[pick(3)];
        if (pick(3) == 0) {  // serving
            r = recipe{.weights = r.weights, .autocast = r.autocast, .optimizer = optimizer_kind::none,
                       .attention = r.attention, .inference = true, .kv_cache = pick(2) == 1};
        } else if (pick(3) == 0) {  // LoRA on the first block's first linear, perhaps over a quantized base
            r.lora.rank = 8;
            for (const stage& st : lower(m).stages)
                for (const op& o : st.ops)
                    if (st.block && o.kind == op_kind::linear && r.lora.targets[0].empty())
                        r.lora.targets[0] = o.module.name;
            if (pick(2) == 1) r.quantize = std::array{quantization::nf4, quantization::int8}[pick(2)];
        }
        if (pick(5) == 0) r.compile = true;
        const std::uint64_t seq = m.embedding.patches() ? 0 : std::array<std::uint64_t, 5>{128, 512, 1024, 2048, 4096}[pick(5)];
        const std::uint64_t batch = 1 + pick(8);
        const std::string where = std::string(p.name) + " (seed " + std::to_string(seed) + ", trial " + std::to_string(t) + ")";
        try {
            const device_profile& device = device_profiles[pick(device_profiles.size())];
            validate(r);
            validate(r, device);
            const estimator e(m, r, device);
            const auto at_batch = e.estimate({.batch = batch, .seq = seq});
            ++estimated;
            if (e.estimate({.batch = batch + 1, .seq = seq}).peak < at_batch.peak) {
                ++broken;
                std::printf("peak falls from batch %llu to the next: %s\n", static_cast<unsigned long long>(batch), where.c_str());
            }
            if (seq != 0 && seq < 4096) {
                try {
                    if (e.estimate({.batch = batch, .seq = 2 * seq}).peak < at_batch.peak) {
                        ++falls_with_tokens;
                        std::printf("peak falls from %llu tokens to twice that: %s\n", static_cast<unsigned long long>(seq),
                                    where.c_str());
                    }
                } catch (const error&) {  // twice the tokens past the model's positions
                }
            }
            if (parameter_count(lower(m)) > 3'000'000'000ULL) continue;  // replays of the largest are slow
            const auto replayed = e.replay({.batch = batch, .seq = seq});
            if (replayed.peak_reserved < replayed.peak_allocated || replayed.peak_reserved < at_batch.peak) {
                ++broken;
                std::printf("reserved below a peak: %s\n", where.c_str());
            }
            if (!detail::reserved_modelled(r)) continue;
            const bytes budget{at_batch.peak.count + pick(at_batch.peak.count / 2 + 1)};
            const std::uint64_t answer = max_batch(e, {.batch = 1, .seq = seq}, budget, 64);
            if ((answer > 0 && !fits_under(e, {.batch = answer, .seq = seq}, budget)) ||
                (answer < 64 && fits_under(e, {.batch = answer + 1, .seq = seq}, budget))) {
                ++broken;
                std::printf("max_batch %llu disagrees with fits_under: %s\n", static_cast<unsigned long long>(answer),
                            where.c_str());
            }
        } catch (const overflow_error&) {
            ++refused;
        } catch (const error& x) {
            ++refused;
            if (std::strstr(x.what(), "internal") != nullptr) {
                ++broken;
                std::printf("%s: %s\n", where.c_str(), x.what());
            }
        } catch (const std::exception& x) {
            ++broken;
            std::printf("%s: %s\n", where.c_str(), x.what());
        }
    }
    std::printf("seed %u: %d estimated, %d refused, %d broken, %d peaks falling as tokens double\n", seed, estimated,
                refused, broken, falls_with_tokens);
    return broken == 0 ? 0 : 1;
}
