// The command line on any arguments (one per line of the input), those that
// write files (--plot, --svg) left out: an exit
// status of 0, 1 or 2, never an exception out of cli::run, never an
// "internal error", and with --json always one JSON object on stdout.
#include "cli.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args;
    std::string arg;
    for (std::size_t i = 0; i < size; ++i) {
        const char c = static_cast<char>(data[i]);
        if (c == '\n') {
            args.push_back(arg);
            arg.clear();
        } else {
            arg.push_back(c);
        }
    }
    if (!arg.empty()) args.push_back(arg);
    // --plot and --svg write files wherever they point: not from a fuzzer.
    for (const std::string& a : args)
        if (a.starts_with("--plot") || a.starts_with("--svg")) return 0;
    std::ostringstream out, err;
    const int status = anatomy::cli::run(args, out, err);
    if (status < 0 || status > 2) std::abort();
    if (err.str().starts_with("anatomy: internal error")) std::abort();
    const bool json = std::find(args.begin(), args.end(), "--json") != args.end();
    // Help (CLI11 also reads "-h" inside a cluster such as "-hx") and the version are text.
    const bool help = out.str().find("Usage:") != std::string::npos ||
                      std::find(args.begin(), args.end(), "--version") != args.end();
    if (json && !help && !nlohmann::json::accept(out.str())) std::abort();
    return 0;
}
