// The default module names alone, for bench/constexpr_ops.sh: what every
// model_spec's default initialization costs.
#include <anatomy/parts/names.hpp>

constexpr anatomy::module_names names{};
static_assert(!names.layers.empty());
