// memory-anatomy: how much GPU memory training or serving a transformer takes.
#pragma once

#include <anatomy/allocator.hpp>
#include <anatomy/budget.hpp>
#include <anatomy/bytes.hpp>
#include <anatomy/driver.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/error.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/estimator.hpp>
#include <anatomy/device.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/kernels.hpp>
#include <anatomy/ledger.hpp>
#include <anatomy/max_batch.hpp>
#include <anatomy/model.hpp>
#include <anatomy/names.hpp>
#include <anatomy/op.hpp>
#include <anatomy/optimizer.hpp>
#include <anatomy/presets.hpp>
#include <anatomy/recipe.hpp>
#include <anatomy/shape.hpp>
#include <anatomy/timeline.hpp>
