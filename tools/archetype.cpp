// The archetype command-line program: `archetype COMMAND [options]`.
// Each command lives in its own cmd_<name>.cpp and is listed in `commands` below.
// Contract shared by every command: exit 0 on success; on any error one line on
// stderr and a non-zero status below 64 (never a signal or a hang).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "commands.hpp"

namespace {
struct command {
    std::string_view name;
    int (*run)(int argc, char** argv); // argv[0] is the command name
    std::string_view help;
};
constexpr command commands[] = {
    {"version", archetype::tools::cmd_version, "print the library version"},
    {"embed", archetype::tools::cmd_embed, "embeddings of a bert GGUF model (pooled, normalised)"},
    {"mask", archetype::tools::cmd_mask, "print an attention mask (causal, window, symmetric)"},
    {"inspect", archetype::tools::cmd_inspect, "print a GGUF file's metadata and tensor table"},
    {"quantize", archetype::tools::cmd_quantize, "rewrite a GGUF with weights as F16, BF16, Q8_0, Q4_0 ..."},
    {"logits", archetype::tools::cmd_logits, "logits of every position of a prompt (decoders, RWKV)"},
    {"describe", archetype::tools::cmd_describe, "print the resolved architecture of a model file"},
    {"generate", archetype::tools::cmd_generate, "generate text from a prompt with a decoder GGUF (streams tokens)"},
    {"perplexity", archetype::tools::cmd_perplexity, "perplexity of a text file, llama-perplexity's conventions"},
    // commands are added here, one line each
};

void usage(std::FILE* f) {
    std::fprintf(f, "usage: archetype COMMAND [options]\ncommands:\n");
    for (const auto& c : commands)
        std::fprintf(f, "  %-10.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.help.size()),
                     c.help.data());
}
} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string_view name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        usage(stdout);
        return 0;
    }
    for (const auto& c : commands) {
        if (c.name != name) continue;
        try {
            return c.run(argc - 1, argv + 1);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "archetype %s: %s\n", argv[1], e.what());
            return 1;
        } catch (...) {
            std::fprintf(stderr, "archetype %s: unknown error\n", argv[1]);
            return 1;
        }
    }
    std::fprintf(stderr, "archetype: unknown command '%s' (try archetype --help)\n", argv[1]);
    return 2;
}
