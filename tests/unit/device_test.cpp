// Device profiles: PyTorch 2.11's rules per architecture, the H200's
// measurements, and how a profile reaches the estimate.
#include <anatomy/device.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace anatomy;

namespace {
const device_profile& card(std::string_view name) {
    const device_matches m = find_devices(name);
    REQUIRE(m.count == 1);
    return *m.found[0];
}
}  // namespace

TEST_CASE("the cuBLAS workspaces: 65 and 33 MiB as measured on the H200, PyTorch's 8.125 MiB rule elsewhere") {
    const recipe training{};
    const recipe inference{.optimizer = optimizer_kind::none, .inference = true};
    CHECK(cublas_workspace(training, devices::h200) == 65 * MiB);
    CHECK(cublas_workspace(inference, devices::h200) == 33 * MiB);
    CHECK(cublas_workspace(training, card("h100-80gb")) == 65 * MiB);  // sm90 as well
    CHECK(cublas_workspace(training, card("a100-80gb")) == 2 * (8 * MiB + 128 * KiB) + 1 * MiB);
    CHECK(cublas_workspace(inference, card("v100-16gb")) == 8 * MiB + 128 * KiB + 1 * MiB);
}

TEST_CASE("card names match ignoring case; a prefix names one card; an ambiguous one matches every card it starts") {
    CHECK(card("A100-80GB").name == "a100-80gb");
    CHECK(card("H200").name == "h200");
    CHECK(card("h1").name == "h100-80gb");
    const device_matches a100 = find_devices("a100");
    REQUIRE(a100.count == 2);
    CHECK(a100.found[0]->name == "a100-40gb");
    CHECK(a100.found[1]->name == "a100-80gb");
    CHECK(find_devices("b200").count == 0);
    CHECK(find_devices("").count == 0);
}

TEST_CASE("SDPA's kernel follows the architecture, the dtype, the head dim and the mask") {
    const device_profile& h200 = devices::h200;
    const device_profile& a100 = card("a100-80gb");
    const device_profile& v100 = card("v100-32gb");
    CHECK(h200.fused_attention(dtype::bf16, 64, false) == sdpa_backend::cudnn);
    CHECK(h200.fused_attention(dtype::bf16, 64, true) == sdpa_backend::cudnn);
    CHECK(h200.fused_attention(dtype::bf16, 512, false) == sdpa_backend::efficient);
    CHECK(a100.fused_attention(dtype::bf16, 128, false) == sdpa_backend::flash);
    CHECK(a100.fused_attention(dtype::fp16, 128, true) == sdpa_backend::efficient);
    CHECK(v100.fused_attention(dtype::fp16, 64, false) == sdpa_backend::efficient);
    for (const device_profile& d : device_profiles) CHECK(d.fused_attention(dtype::fp32, 64, false) == sdpa_backend::efficient);
}

TEST_CASE("bf16 on a card before sm80 is refused, fp16 is not") {
    const device_profile& v100 = card("v100-16gb");
    const shape s{.batch = 1, .seq = 128};
    CHECK_THROWS_WITH(estimate(presets::gpt2, recipe{.weights = dtype::bf16}, s, v100),
                      Catch::Contains("bf16 needs compute capability 8.0"));
    CHECK_THROWS_WITH(estimate(presets::gpt2, recipe{.autocast = autocast_mode::bf16}, s, v100),
                      Catch::Contains("bf16 needs compute capability 8.0"));
    CHECK(estimate(presets::gpt2, recipe{.weights = dtype::fp16}, s, v100).peak > bytes{});
}

// The backward scratch of the kernel of `module` in gpt2's block on `device`.
bytes gpt2_block_backward_workspace(std::string_view module, const shape& s, const device_profile& device) {
    const op_graph graph = lower(presets::gpt2);
    for (const stage& st : graph.stages) {
        if (!st.block) continue;
        const stage_input_info input{.size = s.batch * s.seq * 768 * 4 * B, .type = dtype::fp32, .requires_grad = true};
        for (const kernel& k : expand(st, presets::gpt2, recipe{}, s, device, input).kernels)
            if (st.ops[k.op].module.name == module && k.requires_grad)
                return k.backward_workspace.tensors[0] + k.backward_workspace.tensors[1];
    }
    FAIL("no " << module << " in gpt2's block");
    return {};
}

TEST_CASE("a profile reaches the estimate through its mechanisms only") {
    // Fewer SMs stage less for a bias gradient: an A100 (108) never needs more than an H200 (132).
    for (const auto& p : presets::all) {
        const model_spec spec = p.spec();
        if (parameter_count(lower(spec)) > 1'600'000'000ULL) continue;
        INFO(p.name);
        const shape ps{.batch = 4, .seq = spec.embedding.patches() ? 0ULL : 256ULL};
        CHECK(estimate(spec, recipe{}, ps, card("a100-80gb")).peak <= estimate(spec, recipe{}, ps).peak);
    }
    // gpt2's c_fc bias gradient at 8 x 1024 tokens: 2 x 8192 x 3072 fp32
    // partials (192 MiB), capped at one MiB per SM.
    const shape big{.batch = 8, .seq = 1024};
    CHECK(gpt2_block_backward_workspace("c_fc", big, devices::h200) -
              gpt2_block_backward_workspace("c_fc", big, card("a100-80gb")) ==
          (132 - 108) * MiB);
    // Grouped K/V in fp16 on a V100 take SDPA's math kernel (memory-efficient
    // takes none), which keeps its probabilities: 22 layers x 4 x 32 heads x
    // 1024^2 fp16 at 4 x 1024.
    const recipe fp16{.weights = dtype::fp16};
    const shape seq1k{.batch = 4, .seq = 1024};
    CHECK(estimate(presets::tinyllama_1_1b, fp16, seq1k, card("v100-32gb")).peak >
          estimate(presets::tinyllama_1_1b, fp16, seq1k).peak + 22ULL * 4 * 32 * (1024 * 1024 * 2) * B);
    // max_batch on a card: its memory less its context.
    const recipe bf16{.weights = dtype::bf16};
    const shape per_batch{.seq = 1024};
    const device_profile& a100 = card("a100-80gb");
    CHECK(max_batch(presets::gpt2, bf16, per_batch, a100) ==
          max_batch(presets::gpt2, bf16, per_batch, allocator_budget(a100), max_batch_search_limit, a100));
    CHECK(max_batch(presets::gpt2, bf16, per_batch, a100) < max_batch(presets::gpt2, bf16, per_batch, devices::h200));
}
