// The RMSNorm kernels' backward against the caching allocator's own history
// of transformers' LlamaRMSNorm on an H200 (bench/torch_reference/
// norm_backward_trace.py, at 1 x 4096 tokens of 4096 features): node by
// autograd node, the tensors of a MiB or more that each backward allocates.
#include <anatomy/anatomy.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace anatomy;

using allocations = std::vector<std::uint64_t>;  // sorted sizes, one autograd node's

// The traced backward: each autograd node's allocations of a MiB or more, in
// the order the nodes ran. Allocations the stack does not name a node for
// (sum's staging) belong to the node that ran last; a node's allocations
// come before its frees.
std::vector<allocations> traced_backward(const std::string& file) {
    std::ifstream in(std::string(ANATOMY_DATA_DIR) + "/" + file);
    REQUIRE(in.good());
    std::vector<allocations> nodes;
    std::string last_node;
    bool freed = false;  // since the last allocation: a node that follows one of its kind starts anew
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json e = nlohmann::json::parse(line);
        if (e["phase"] != "backward") continue;
        if (e["action"] != "alloc") {
            freed = true;
            continue;
        }
        const std::string node = e["node"];
        if (!node.empty() && (node != last_node || freed)) {
            nodes.emplace_back();
            last_node = node;
        }
        freed = false;
        const std::uint64_t size = e["size"];
        REQUIRE_FALSE(nodes.empty());
        if (size >= MiB.count) nodes.back().push_back(size);
    }
    for (allocations& a : nodes) std::sort(a.begin(), a.end());
    std::erase_if(nodes, [](const allocations& a) { return a.empty(); });
    return nodes;
}

// The model's backward of the block's first norm, kernel by kernel in
// reverse: each input gradient (new or summed into one that exists), the
// parameter gradients and the scratch, of a MiB or more.
std::vector<allocations> modelled_backward(const recipe& r) {
    const model_spec m = presets::llama_3_8b;
    const shape s{.batch = 1, .seq = 4096};
    const op_graph graph = lower(m);
    const stage* block = nullptr;
    for (const stage& st : graph.stages)
        if (st.block && block == nullptr) block = &st;
    REQUIRE(block != nullptr);
    std::size_t norm = 0;
    while (block->ops[norm].kind != op_kind::norm) ++norm;
    const stage_input_info input{.size = 4096 * 4096 * size_of(r.weights), .type = r.weights, .requires_grad = true};
    const expansion ex = expand(*block, m, r, s, devices::h200, input);
    std::vector<allocations> nodes;
    for (std::size_t n = ex.kernels.size(); n-- > 0;) {
        const kernel& k = ex.kernels[n];
        if (k.op != norm || !k.requires_grad) continue;
        allocations a;
        for (std::size_t j = 0; j < 3; ++j) {
            if (k.in[j] == no_slot || !(k.grad_inputs >> j & 1u)) continue;
            a.push_back(k.in[j] == input_slot ? input.size.count : ex.kernels[static_cast<std::size_t>(k.in[j])].out.count);
        }
        a.push_back(k.param_grads.weight.count);
        a.push_back(k.param_grads.bias.count);
        for (bytes t : k.backward_workspace.tensors) a.push_back(t.count);
        std::erase_if(a, [](std::uint64_t size) { return size < MiB.count; });
        std::sort(a.begin(), a.end());
        if (!a.empty()) nodes.push_back(a);
    }
    return nodes;
}

}  // namespace

TEST_CASE("an RMSNorm's backward allocates what transformers' LlamaRMSNorm does on an H200") {
    SECTION("bf16: casts to fp32 and back") {
        const std::vector<allocations> traced = traced_backward("rmsnorm-backward-bf16-h200.jsonl");
        // Mul (weight), ToCopy, Mul (rsqrt), Mean, Pow, ToCopy.
        REQUIRE(traced.size() == 6);
        CHECK(modelled_backward(recipe{.weights = dtype::bf16}) == traced);
    }
    SECTION("fp32: no casts") {
        const std::vector<allocations> traced = traced_backward("rmsnorm-backward-fp32-h200.jsonl");
        REQUIRE(traced.size() == 4);
        CHECK(modelled_backward(recipe{}) == traced);
    }
}
