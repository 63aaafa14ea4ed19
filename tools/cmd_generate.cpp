// archetype generate --model FILE --prompt TEXT [-n N] [--temp T] [--seed S] [--top-k K]
//                    [--top-p P] [--min-p P] [--repeat-penalty R] [--threads N] [--kv f32|f16] [--chat]
// Text generation with a decoder GGUF (llama, mellum, gemma3): the tokenizer is
// read from the same file (BOS added when the file says so), the prompt is fed in
// one prefill, then one token at a time is sampled (runtime/sampling.hpp) and
// written to stdout as soon as it is produced. stderr gets a progress line while
// loading and the prompt / generation speeds at the end.
//
// --chat wraps the prompt in the model's chat template. Only two templates are
// known, recognised from the file's tokenizer.chat_template: ChatML
// (<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n, as SmolLM2-Instruct)
// and Gemma's (<start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n).
// A gemma* file without a template gets Gemma's. --system TEXT adds a system
// turn (ChatML) or is put before the user text (Gemma, which has no system
// role). SmolLM2's template inserts a default system message when none is
// given; it is left out on purpose: with it the 135M model answers "What is
// the capital of France?" with French word salad (llama.cpp gives the same
// tokens), without it "The capital of France is Paris." Generation stops at -n tokens, at the
// end-of-sequence token, or at the template's end-of-turn token.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/runtime/kv_cache_type.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "commands.hpp"
#include "decoder_jobs.hpp"

namespace archetype::tools {

namespace {
constexpr const char* generate_usage =
    "usage: archetype generate --model FILE --prompt TEXT [-n N] [--temp T] [--seed S] [--top-k K]\n"
    "                          [--top-p P] [--min-p P] [--repeat-penalty R] [--threads N] [--kv f32|f16] [--chat]\n"
    "  -n N                 tokens to generate (default 128)\n"
    "  --temp T             0 = greedy (default 0.8)\n"
    "  --seed S             random seed (default 0)\n"
    "  --top-k K            keep the K most likely tokens (default 40, 0 = all)\n"
    "  --top-p P            nucleus sampling threshold in (0, 1] (default 0.95)\n"
    "  --min-p P            keep tokens at least P times as likely as the best, in [0, 1] (default 0.05)\n"
    "  --repeat-penalty R   CTRL penalty on the last 64 tokens (default 1.0 = none)\n"
    "  --threads N          default: the number of cores\n"
    "  --kv f32|f16         KV cache elements (default f32; f16 halves the cache)\n"
    "  --chat               wrap the prompt in the model's chat template (ChatML or Gemma)\n"
    "  --system TEXT        with --chat: a system message\n";

struct generate_args {
    std::string model, prompt, system;
    bool have_prompt = false, chat = false;
    std::size_t n = 128;
    std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    kv_cache_type kv = kv_cache_type::f32;
    sampling_params sp{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.f};
};

enum class chat_style { chatml, gemma };

/// The prompt wrapped in the template the file's tokenizer.chat_template names.
std::string apply_chat_template(const gguf::file& f, const std::string& user, const std::string& sys,
                                chat_style& style) {
    const std::string tmpl = f.get_or<std::string>("tokenizer.chat_template", "");
    if (tmpl.find("<|im_start|>") != std::string::npos) {
        style = chat_style::chatml;
        const std::string s = sys.empty() ? "" : "<|im_start|>system\n" + sys + "<|im_end|>\n";
        return s + "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
    }
    if (tmpl.find("<start_of_turn>") != std::string::npos ||
        (tmpl.empty() && f.architecture().substr(0, 5) == "gemma")) {
        style = chat_style::gemma;
        return "<start_of_turn>user\n" + (sys.empty() ? "" : sys + "\n\n") + user +
               "<end_of_turn>\n<start_of_turn>model\n";
    }
    throw argument_error(tmpl.empty() ? "--chat: the file has no tokenizer.chat_template"
                                      : "--chat: the file's chat template is neither ChatML nor Gemma's (the two known)");
}

/// The one token `text` encodes to, or -1.
std::int32_t special_id(const tokenizer::tokenizer& tok, std::string_view text) {
    const auto ids = tok.encode(text, false);
    return ids.size() == 1 ? ids[0] : -1;
}

} // namespace

int cmd_generate(int argc, char** argv) {
    generate_args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            std::printf("%s", generate_usage);
            return 0;
        }
        if (o == "--chat") {
            a.chat = true;
            continue;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        const std::string_view v = argv[++i];
        if (o == "--model") a.model = v;
        else if (o == "--prompt") a.prompt = v, a.have_prompt = true;
        else if (o == "--system") a.system = v;
        else if (o == "-n") a.n = parse_number<std::size_t>(o, v, 0, 1u << 20);
        else if (o == "--temp") a.sp.temperature = parse_number<float>(o, v, 0.f, 100.f);
        else if (o == "--seed") a.sp.seed = parse_number<std::uint64_t>(o, v, 0, std::numeric_limits<std::uint64_t>::max());
        else if (o == "--top-k") a.sp.top_k = parse_number<std::size_t>(o, v, 0, 1u << 30);
        else if (o == "--top-p") a.sp.top_p = parse_number<float>(o, v, 1e-6f, 1.f);
        else if (o == "--min-p") a.sp.min_p = parse_number<float>(o, v, 0.f, 1.f);
        else if (o == "--repeat-penalty") a.sp.repeat_penalty = parse_number<float>(o, v, 1e-3f, 100.f);
        else if (o == "--threads") a.threads = parse_number<std::size_t>(o, v, 1, 1024);
        else if (o == "--kv") {
            if (v == "f32") a.kv = kv_cache_type::f32;
            else if (v == "f16") a.kv = kv_cache_type::f16;
            else throw argument_error("--kv '" + std::string(v) + "' is not f32 or f16");
        } else throw argument_error("unknown option '" + std::string(o) + "' (try --help)");
    }
    if (a.model.empty()) throw argument_error("--model FILE is required");
    if (!a.have_prompt) throw argument_error("--prompt TEXT is required");

    const auto t_load = std::chrono::steady_clock::now();
    std::fprintf(stderr, "archetype generate: loading %s ...", a.model.c_str());
    std::fflush(stderr);
    auto file = gguf::file::open(a.model);
    if (!is_registered_decoder(file))
        throw argument_error("architecture '" + std::string(file.architecture()) +
                             "' is not a registered decoder (archetype describe --model FILE names the known ones)");
    const auto tok = tokenizer::load_tokenizer(file);
    chat_style style = chat_style::chatml;
    const std::string text = a.chat ? apply_chat_template(file, a.prompt, a.system, style) : a.prompt;
    std::vector<std::int32_t> prompt = tok->encode(text, true);
    if (prompt.empty()) throw argument_error("the prompt encodes to no tokens");
    std::vector<std::int32_t> stop;
    if (tok->eos_id() >= 0) stop.push_back(tok->eos_id());
    if (a.chat) {
        const auto eot = special_id(*tok, style == chat_style::chatml ? "<|im_end|>" : "<end_of_turn>");
        if (eot >= 0) stop.push_back(eot);
    }

    decoder_generate_job j;
    j.tok = tok.get();
    j.prompt = std::move(prompt);
    j.stop = std::move(stop);
    j.n = a.n;
    j.threads = a.threads;
    j.kv = a.kv;
    j.sp = a.sp;
    j.t_load = t_load;
    decoder_job job;
    job.what = decoder_job::kind::generate;
    job.generate = &j;
    return run_registered_decoder(std::move(file), job);
}

} // namespace archetype::tools
