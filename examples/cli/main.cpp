// anatomy: the command-line front end of memory-anatomy.
//
//   anatomy estimate --model llama-3-8b --batch 1 --seq 4096 --weights bf16
//   anatomy estimate --config path/to/config.json --batch 8 --seq 512 --json
//   anatomy max-batch --model gpt2 --seq 1024 --budget 15GiB
//   anatomy presets
#include "cli.hpp"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    return anatomy::cli::run(args, std::cout, std::cerr);
}
