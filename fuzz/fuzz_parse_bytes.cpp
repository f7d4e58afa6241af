// parse_bytes on any text: a size or anatomy::error, nothing else. A size it
// accepts reads back the same when written as a count of bytes.
#include <anatomy/bytes.hpp>
#include <anatomy/error.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    anatomy::bytes parsed{};
    try {
        parsed = anatomy::parse_bytes(text);
    } catch (const anatomy::error&) {
        return 0;  // refused, with a message: the contract
    }
    if (anatomy::parse_bytes(std::to_string(parsed.count) + "B") != parsed) std::abort();
    return 0;
}
