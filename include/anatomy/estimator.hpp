// Many estimates of one model under one recipe on one device: the graph is
// lowered and the model state counted once, then each shape costs one walk
// of the step (and one allocator replay for reserved bytes). What max_batch
// and `anatomy sweep` probe with, and what a trainer sizing its batch keeps.
#pragma once

#include <anatomy/device.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/model.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/reserved.hpp>
#include <anatomy/shape.hpp>

namespace anatomy {

class estimator {
public:
    // Validates the recipe for the model and the device, as estimate() does.
    constexpr estimator(const model_spec& model, const recipe& r, const device_profile& device = devices::h200)
        : model_(model), recipe_(r), device_(device), prepared_(detail::prepare_step(model_, recipe_, device_)) {}

    // estimate(model, recipe, s, device), without lowering again.
    constexpr memory_estimate estimate(const shape& s) const {
        return detail::estimate_prepared(prepared_, model_, recipe_, s, device_);
    }
    // replay_allocator(model, recipe, s, cap, device), without lowering again.
    constexpr allocator_replay replay(const shape& s, bytes cap = {}) const {
        caching_allocator a(cap);
        return detail::replay_on(prepared_, model_, recipe_, s, device_, a);
    }

    constexpr const recipe& step_recipe() const { return recipe_; }
    constexpr const device_profile& device() const { return device_; }

private:
    model_spec model_;
    recipe recipe_;
    device_profile device_;
    detail::prepared_step prepared_;
};

}  // namespace anatomy
