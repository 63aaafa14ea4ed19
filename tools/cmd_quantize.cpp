// archetype quantize IN OUT TYPE [--quiet]
// Rewrites the GGUF file IN as OUT with its weight matrices stored as TYPE
// (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4,
// TQ1_0, TQ2_0, Q1_0, Q2_0), llama-quantize's tensor rules: 1-D tensors, norms and
// the small tensors llama.cpp keeps stay as they are.
#include <cstdio>
#include <string>
#include <string_view>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/gguf_quantize.hpp"
#include "commands.hpp"

namespace archetype::tools {

int cmd_quantize(int argc, char** argv) {
    std::string args[3];
    int n = 0;
    bool quiet = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::printf("usage: archetype quantize IN.gguf OUT.gguf TYPE [--quiet]\n"
                        "  TYPE: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K IQ4_NL IQ4_XS MXFP4\n"
                        "        TQ1_0 TQ2_0 Q1_0 Q2_0\n");
            return 0;
        }
        if (a == "--quiet") quiet = true;
        else if (n < 3) args[n++] = a;
        else throw argument_error("unexpected argument '" + std::string(a) + "'");
    }
    if (n != 3) throw argument_error("usage: archetype quantize IN.gguf OUT.gguf TYPE");
    const auto type = type_from_name(args[2]);
    if (!type || !quant::can_quantize(*type))
        throw argument_error("unsupported target type '" + args[2] +
                             "' (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K IQ4_NL IQ4_XS MXFP4 TQ1_0 TQ2_0"
                             " Q1_0 Q2_0)");
    if (args[0] == args[1]) throw argument_error("IN and OUT are the same file '" + args[0] + "'");
    const auto r = gguf::quantize_file(args[0], args[1], *type, [&](const std::string& line) {
        if (!quiet) std::printf("%s\n", line.c_str());
    });
    std::printf("%s: %zu tensors converted to %s, %zu kept; %.2f MiB -> %.2f MiB\n", args[1].c_str(), r.converted,
                args[2].c_str(), r.kept, double(r.bytes_in) / 1048576.0, double(r.bytes_out) / 1048576.0);
    return 0;
}

} // namespace archetype::tools
