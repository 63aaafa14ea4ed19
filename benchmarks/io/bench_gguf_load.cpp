// Load time of a 1 GiB GGUF: gguf::file::open maps the file and reads only the
// header, metadata and tensor table, so it takes milliseconds whatever the size,
// and RSS right after loading stays far below the file size (no tensor data is
// copied or touched). Then every tensor page is read once to show what touching
// the data costs (page-cache bandwidth), for contrast.
//   bench_gguf_load [SIZE_MIB (default 1024)] [PATH (default /tmp/archetype_bench_load.gguf)]
// The file is written first (streamed: the writer holds one 4 MiB tensor at a
// time), with a 150k-token vocabulary like a real model's metadata, and removed
// at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"

namespace gguf = archetype::gguf;
using archetype::ggml_type;
using clk = std::chrono::steady_clock;

namespace {
// VmRSS / RssFile / RssAnon of this process in MiB (from /proc/self/status).
struct rss {
    double total = 0, file = 0, anon = 0;
};
rss read_rss() {
    std::ifstream s("/proc/self/status");
    rss r;
    std::string k;
    double v;
    std::string unit;
    while (s >> k) {
        if (k == "VmRSS:" && s >> v >> unit) r.total = v / 1024;
        else if (k == "RssFile:" && s >> v >> unit) r.file = v / 1024;
        else if (k == "RssAnon:" && s >> v >> unit) r.anon = v / 1024;
    }
    return r;
}
double seconds(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }
} // namespace

int main(int argc, char** argv) {
    const std::uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
    const std::string path = argc > 2 ? argv[2] : "/tmp/archetype_bench_load.gguf";
    const std::uint64_t tensor_mib = 4, n_tensors = mib / tensor_mib;

    auto t0 = clk::now();
    {
        gguf::writer w;
        w.set("general.architecture", "llama");
        w.set("llama.block_count", std::uint32_t(n_tensors / 8));
        std::vector<std::string> vocab(150000);
        for (std::size_t i = 0; i < vocab.size(); ++i) vocab[i] = "tok" + std::to_string(i);
        w.set("tokenizer.ggml.tokens", vocab);
        w.set("tokenizer.ggml.token_type", std::vector<std::int32_t>(vocab.size(), 1));
        for (std::uint64_t i = 0; i < n_tensors; ++i)
            w.add_tensor("blk." + std::to_string(i / 8) + ".w" + std::to_string(i % 8), ggml_type::F32, {1024, 1024},
                         [i](std::byte* dst, std::size_t n) {
                             auto* f = reinterpret_cast<float*>(dst);
                             for (std::size_t k = 0; k < n / 4; ++k) f[k] = float(i + k);
                         });
        w.write(path);
    }
    auto t1 = clk::now();
    std::printf("wrote %s: %llu tensors x %llu MiB in %.2f s\n", path.c_str(), (unsigned long long)n_tensors,
                (unsigned long long)tensor_mib, seconds(t0, t1));

    const rss before = read_rss();
    auto a = clk::now();
    const auto f = gguf::file::open(path);
    auto b = clk::now();
    const rss after = read_rss();
    const double file_mib = double(f.size()) / 1048576.0;

    std::printf("load (open + validate header, %zu keys, %zu tensors): %.4f s\n", f.metadata().size(),
                f.tensors().size(), seconds(a, b));
    std::printf("file size: %.1f MiB; RSS before load %.1f MiB, after load %.1f MiB (+%.1f MiB: %.2f%% of the file; "
                "file-backed %.1f MiB)\n",
                file_mib, before.total, after.total, after.total - before.total,
                100.0 * (after.total - before.total) / file_mib, after.file);

    // Touch every page of tensor data once (reads through the page cache).
    auto c = clk::now();
    std::uint64_t acc = 0;
    for (const auto& t : f.tensors())
        for (std::uint64_t off = 0; off < t.n_bytes; off += 4096) acc += std::to_integer<unsigned>(t.data[off]);
    auto d = clk::now();
    const rss touched = read_rss();
    std::printf("touching all tensor pages: %.3f s (%.2f GB/s), RSS then %.1f MiB (file-backed %.1f, anon %.1f) "
                "[checksum %llu]\n",
                seconds(c, d), double(f.size()) / seconds(c, d) / 1e9, touched.total, touched.file, touched.anon,
                (unsigned long long)acc);
    const bool ok = seconds(a, b) < 0.1 && (after.total - before.total) < 0.05 * file_mib;
    std::printf("goal (load < 0.1 s, RSS growth < 5%% of the file): %s\n", ok ? "met" : "NOT met");
    std::remove(path.c_str());
    return ok ? 0 : 1;
}
