// archetype generate --model FILE|DIR --prompt TEXT [-n N] [--temp T] [--seed S] [--top-k K]
//                    [--top-p P] [--min-p P] [--repeat-penalty R] [--threads N] [--kv f32|f16] [--chat]
// Text generation with a decoder GGUF (llama, mellum, gemma3): the tokenizer is
// read from the same file (BOS added when the file says so), the prompt is fed in
// one prefill, then one token at a time is sampled (runtime/sampling.hpp) and
// written to stdout as soon as it is produced. stderr gets a progress line while
// loading and the prompt / generation speeds at the end.
//
// --chat wraps the prompt in the model's chat template (runtime/chat_template.hpp):
// the file's tokenizer.chat_template is recognised as one of the families chatml,
// gemma, llama3, phi3, mistral and rendered as transformers' apply_chat_template
// renders it; a template of another family is an error naming it unless
// --chat-template NAME picks the family. A file without a template (SmolLM2's and
// Gemma 3's GGUFs here have none) gets ChatML, as llama.cpp does, except gemma*
// files, which get Gemma's; a line on stderr says which. --system TEXT adds a
// system message (Gemma 3 and Mistral put it in a user turn, as their templates
// do; Gemma 2's template refuses it). Generation stops at -n tokens, at the
// end-of-sequence token, or at the family's end-of-turn tokens.
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
#include "archetype/runtime/chat_tokens.hpp"
#include "archetype/runtime/kv_cache_type.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "commands.hpp"
#include "model_file.hpp"
#include "decoder_jobs.hpp"
#include "pipeline_launch.hpp"

namespace archetype::tools {

namespace {
constexpr const char* generate_usage =
    "usage: archetype generate --model FILE|DIR --prompt TEXT [-n N] [--temp T] [--seed S] [--top-k K]\n"
    "                          [--top-p P] [--min-p P] [--repeat-penalty R] [--threads N] [--kv f32|f16] [--chat]\n"
    "                          [--chat-template chatml|gemma|llama3|phi3|mistral] [--system TEXT]\n"
    "  -n N                 tokens to generate (default 128)\n"
    "  --temp T             0 = greedy (default 0.8)\n"
    "  --seed S             random seed (default 0)\n"
    "  --top-k K            keep the K most likely tokens (default 40, 0 = all)\n"
    "  --top-p P            nucleus sampling threshold in (0, 1] (default 0.95)\n"
    "  --min-p P            keep tokens at least P times as likely as the best, in [0, 1] (default 0.05)\n"
    "  --repeat-penalty R   CTRL penalty on the last 64 tokens (default 1.0 = none)\n"
    "  --threads N          default: the number of cores\n"
    "  --kv f32|f16         KV cache elements (default f32; f16 halves the cache)\n"
    "  --chat               wrap the prompt in the model's chat template (from the file)\n"
    "  --chat-template NAME with --chat implied: this template family instead of the file's\n"
    "  --system TEXT        with --chat: a system message\n";

struct generate_args {
    std::string model, prompt, system, chat_template;
    bool have_prompt = false, chat = false;
    std::size_t n = 128;
    std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    kv_cache_type kv = kv_cache_type::f32;
    sampling_params sp{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.f};
};

} // namespace

int cmd_generate(int argc, char** argv) {
    generate_args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            if (writes_output()) std::printf("%s", generate_usage); // under mpirun: rank 0 alone
            return 0;
        }
        if (o == "--chat") {
            a.chat = true;
            continue;
        }
        if (o == "--chat-template") {
            if (i + 1 >= argc) throw argument_error("option '--chat-template' needs a value");
            a.chat_template = argv[++i];
            a.chat = true;
            (void)chat::named(a.chat_template); // an unknown name fails before the model loads
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
    auto file = open_model_file(a.model); // a GGUF or a checkpoint directory
    if (!is_registered_decoder(file))
        throw argument_error("architecture '" + std::string(file.architecture()) +
                             "' is not a registered decoder (archetype describe --model FILE names the known ones)");
    const auto tok = open_model_tokenizer(a.model, file);
    std::vector<std::int32_t> prompt, stop;
    if (a.chat) {
        std::string note;
        const auto tp = chat_template_for(file, a.chat_template, note);
        std::vector<chat::message> msgs;
        if (!a.system.empty()) msgs.push_back({"system", a.system});
        msgs.push_back({"user", a.prompt});
        prompt = chat::prompt_tokens(*tok, tp, msgs, chat::options_for(*tok));
        stop = chat::stop_tokens(*tok, tp);
        if (!note.empty() && writes_output()) std::fprintf(stderr, "archetype generate: %s\n", note.c_str());
    } else {
        prompt = tok->encode(a.prompt, true);
        if (tok->eos_id() >= 0) stop.push_back(tok->eos_id());
    }
    if (prompt.empty()) throw argument_error("the prompt encodes to no tokens");
    // under mpirun the ranks' share lines follow: the loading line ends there
    if (writes_output())
        std::fprintf(stderr, "archetype generate: loading %s ...%s", a.model.c_str(), pipeline_launch().active ? "\n" : "");
    std::fflush(stderr);

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
