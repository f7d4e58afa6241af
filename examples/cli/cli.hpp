// The anatomy command line: `anatomy estimate`, `anatomy max-batch`,
// `anatomy presets`, for PyTorch runs (app.hpp) and llm.c runs
// (llmc_commands.hpp). main.cpp calls run(); the tests call it in-process.
#pragma once

#include "app.hpp"
#include "llmc_commands.hpp"
#include "megatron_commands.hpp"
#include "plot.hpp"
#include "sweep_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace anatomy::cli {

// Runs the CLI on `args` (without the program name). Returns the exit status.
inline int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    using namespace app_detail;
    constexpr std::array<std::string_view, 4> commands{"estimate", "max-batch", "sweep", "presets"};
    std::string command;
    // With --json a script reads every outcome from stdout: an error is
    // {"error": ..., "exit": status} there, and the same line on stderr.
    const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
    const auto fail = [&](const std::string& message, int status) {
        err << message << '\n';
        if (json) out << json_text(nlohmann::json{{"error", message}, {"exit", status}}) << '\n';
        return status;
    };
    try {
        CLI::App app{"anatomy: how much GPU memory training or serving a transformer takes", "anatomy"};
        app.set_version_flag("--version", ANATOMY_CLI_VERSION);
        app.require_subcommand(1);
        app.footer(
            "Exit status: 0 ok, 1 the inputs cannot be estimated (bad config, unsupported task, overflow), "
            "2 usage error.\n");
        raw_options estimate_opts, max_batch_opts;
        bool presets_json = false;
        CLI::App* est = app.add_subcommand("estimate", "predict the memory of one training (or inference) step");
        add_model_flags(*est, estimate_opts, true);
        est->add_flag("--explain", estimate_opts.explain, "list the tensors alive when the step peaks");
        est->add_option("--plot", estimate_opts.plot,
                        "draw the step's memory over time into FILE (SVG): stacked by owner, reserved, the peak")
            ->type_name("FILE");
        est->add_option("--budget", estimate_opts.budget,
                        "the caching allocator's cap, e.g. 15GiB: says whether the step fits, as max-batch tests it")
            ->type_name("SIZE");
        CLI::App* mb = app.add_subcommand("max-batch", "the largest batch that trains under --budget (or --gpu)");
        add_model_flags(*mb, max_batch_opts, false);
        mb->add_option("--budget", max_batch_opts.budget,
                       "the caching allocator's cap, e.g. 15GiB, 80GB, 512MiB (or pass --gpu)")
            ->type_name("SIZE");
        raw_options sweep_opts;
        std::string sweep_svg_path;
        bool sweep_csv = false;
        CLI::App* sw = app.add_subcommand("sweep", "estimate over a batch x sequence grid");
        add_model_flags(*sw, sweep_opts, false);
        sw->add_option("--batch", sweep_opts.batch, "batches: 1,2,4,8 or 1:64 or 1:64:x2 or 8:64:+8")->type_name("GRID");
        sw->add_option("--budget", sweep_opts.budget, "the caching allocator's cap, e.g. 80GiB: which cells fit")
            ->type_name("SIZE");
        sw->add_option("--svg", sweep_svg_path, "also draw peak memory against the batch into FILE")->type_name("FILE");
        sw->add_flag("--csv", sweep_csv, "print the cells as CSV");
        CLI::App* pre = app.add_subcommand("presets", "list the built-in models");
        pre->add_flag("--json", presets_json, "print one JSON object");

        if (!args.empty() && !args.front().starts_with('-') &&
            std::find(commands.begin(), commands.end(), args.front()) == commands.end())
            usage("unknown command \"{}\"; choose one of estimate, max-batch, sweep, presets", shorten(args.front()));
        if (!args.empty()) command = args.front();
        const bool asks_help_or_version = !args.empty() && (args.front() == "-h" || args.front() == "--help" ||
                                                            args.front() == "--version");
        if (args.empty()) {
            out << app.help();
            return 0;
        }
        if (args.front().starts_with('-') && !asks_help_or_version)
            usage("a command is required first: estimate, max-batch, sweep or presets; see `anatomy --help`");

        std::vector<std::string> reversed(args.rbegin(), args.rend());
        try {
            app.parse(std::move(reversed));
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e, out, err);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e, out, err);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e, out, err);
        } catch (const CLI::ParseError& e) {
            return fail(cli11_message(e, command == "estimate" || command == "max-batch" || command == "sweep" || command == "presets"
                                             ? std::string_view(command)
                                             : std::string_view()),
                        exit_usage_error);
        }
        if (mb->parsed() && max_batch_opts.budget.empty() && max_batch_opts.gpu.empty())
            usage("max-batch: pass --budget SIZE (e.g. 15GiB) or --gpu NAME");
        if (est->parsed()) {
            const bool plain = !wants_megatron(estimate_opts) && !wants_llmc(estimate_opts);
            if (!estimate_opts.plot.empty() && !plain)
                usage("--plot: draws the replayed PyTorch step; Megatron's formulas and llm.c have no replay to draw");
            if (wants_megatron(estimate_opts)) cmd_estimate_megatron(estimate_opts, out);
            else if (wants_llmc(estimate_opts)) cmd_estimate_llmc(estimate_opts, out);
            else cmd_estimate(estimate_opts, out);
            if (!estimate_opts.plot.empty()) write_plot(estimate_opts);
        } else if (sw->parsed()) {
            if (wants_megatron(sweep_opts) || wants_llmc(sweep_opts))
                usage("sweep: estimates PyTorch steps; --tp/--pp and --framework llm.c are estimate-only");
            cmd_sweep(sweep_opts, sweep_svg_path, sweep_csv, out);
        } else if (mb->parsed()) {
            if (wants_megatron(max_batch_opts))
                usage("max-batch: --tp/--pp/--sp are estimate-only for now; run estimate with a batch");
            if (wants_llmc(max_batch_opts)) cmd_max_batch_llmc(max_batch_opts, out);
            else cmd_max_batch(max_batch_opts, out);
        }
        else cmd_presets(presets_json, out);
        out.flush();
        return 0;
    } catch (const usage_error& e) {
        return fail(one_line(e.what()), exit_usage_error);
    } catch (const input_error& e) {
        return fail(one_line(e.what()), exit_input_error);
    } catch (const overflow_error& e) {
        return fail("anatomy: " + one_line(without_prefix(e.what())), exit_input_error);
    } catch (const anatomy::error& e) {
        return fail("anatomy: " + one_line(without_prefix(e.what())), exit_input_error);
    } catch (const nlohmann::json::exception& e) {
        return fail("anatomy: JSON: " + one_line(e.what()), exit_input_error);
    } catch (const CLI::Error& e) {
        return fail("anatomy: " + one_line(e.what()), exit_usage_error);
    } catch (const std::bad_alloc&) {
        return fail("anatomy: out of memory", exit_input_error);
    } catch (const std::exception& e) {
        return fail("anatomy: internal error: " + one_line(e.what()), exit_input_error);
    }
}

}  // namespace anatomy::cli
