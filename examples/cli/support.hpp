// Shared pieces of the anatomy CLI: its two error kinds, the choices of an
// enum flag, which tasks a model trains, and one-line messages.
#pragma once

#include <anatomy/error.hpp>
#include <anatomy/model.hpp>
#include <anatomy/names.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace anatomy::cli {

// An error whose message is formatted at run time: anatomy::error holds only
// a literal. Shared, so that copying the exception cannot throw.
class formatted_error : public anatomy::error {
public:
    explicit formatted_error(std::string message)
        : anatomy::error(""), message_(std::make_shared<const std::string>(std::move(message))) {}
    const char* what() const noexcept override { return message_->c_str(); }

private:
    std::shared_ptr<const std::string> message_;
};

// The command line is wrong on its own (unknown flag or value, a missing or
// malformed flag): exit status 2.
class usage_error : public formatted_error {
public:
    using formatted_error::formatted_error;
};

// The inputs are well formed but describe something the estimator cannot
// take (a bad config.json, a task the model does not have): exit status 1.
class input_error : public formatted_error {
public:
    using formatted_error::formatted_error;
};

inline constexpr int exit_input_error = 1;
inline constexpr int exit_usage_error = 2;

// Text for SVG: &, <, > and quotes escaped.
inline std::string xml_escape(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

// JSON output text. Arguments and file names echoed into it need not be
// UTF-8: invalid bytes become U+FFFD rather than a type_error (found by
// fuzz_cli: a --model name with byte 0xD7).
template <class Json>
std::string json_text(const Json& j) {
    return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

// "adamw, adamw-fused, ..., none": every name of an enum, from its one table.
template <NamedEnum Enum>
std::string choices(std::string_view separator = ", ") {
    std::string out;
    for (const auto& entry : enum_names<Enum>::table) {
        if (!out.empty()) out += separator;
        out += entry.name;
    }
    return out;
}

inline std::string_view stack_name(stack_kind k) {
    switch (k) {
        case stack_kind::encoder: return "an encoder";
        case stack_kind::decoder: return "a decoder";
        case stack_kind::encoder_decoder: return "an encoder-decoder";
    }
    return "a model";
}

// What a model trains, as anatomy::supports_task accepts it: "seq-cls or masked-lm".
inline std::string supported_tasks(const model_spec& m) {
    std::string out;
    for (const auto& [t, name] : enum_names<task>::table) {
        if (!supports_task(m, t)) continue;
        if (!out.empty()) out += " or ";
        out += name;
    }
    return out;
}

// The task a model trains when nothing says: the head its stack usually has.
inline task default_task(const model_spec& m) {
    switch (m.stack) {
        case stack_kind::encoder: return m.embedding.patches() ? task::image_cls : task::seq_cls;
        case stack_kind::decoder: return task::causal_lm;
        case stack_kind::encoder_decoder: return task::seq2seq;
    }
    return task::causal_lm;
}

// One line, whatever the text: newlines and tabs become spaces.
inline std::string one_line(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

// A library message without its "anatomy::function: " or "anatomy: " prefix,
// to be shown after the CLI's own "anatomy: ".
inline std::string_view without_prefix(std::string_view message) {
    if (message.starts_with("anatomy: ")) return message.substr(9);
    if (!message.starts_with("anatomy::")) return message;
    // The function name may hold "(...)", e.g. "anatomy::validate(shape): ";
    // it ends at the first ": " outside parentheses.
    int depth = 0;
    for (std::size_t i = 0; i + 1 < message.size(); ++i) {
        if (message[i] == '(') ++depth;
        else if (message[i] == ')') --depth;
        else if (depth == 0 && message[i] == ':' && message[i + 1] == ' ') return message.substr(i + 2);
    }
    return message;
}

// A quoted JSON-ish rendering of a value for a message, cut to a readable size.
inline std::string shorten(std::string text, std::size_t limit = 40) {
    if (text.size() > limit) text = text.substr(0, limit) + "...";
    return one_line(text);
}

}  // namespace anatomy::cli
