#!/usr/bin/env python3
"""A uniform importance matrix (every column of every weight matrix equally important) in
llama.cpp's GGUF imatrix layout, for a model file that has no text to run llama-imatrix on
(the benchmarks' random-weight files, `tokenizer.ggml.model = no_vocab`).

llama-quantize refuses IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS and IQ2_S without an importance matrix;
with this one it fits each block by plain (unweighted) squared error. Used for speed
comparisons of those types on the same file (docs/weights.md, issue 41 item 7), never for a
quality figure: real files get llama-imatrix's matrix from text.

Usage (a venv with gguf-py, e.g. PYTHONPATH=<llama.cpp>/gguf-py):
    python3 tools/reference/uniform_imatrix.py MODEL.gguf OUT.imatrix
"""
import sys

import numpy as np
import gguf


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model, out = sys.argv[1], sys.argv[2]
    reader = gguf.GGUFReader(model)
    writer = gguf.GGUFWriter(out, arch="imatrix")
    # llama-quantize requires the three metadata keys (common/imatrix-loader.cpp)
    writer.add_string("general.type", "imatrix")
    writer.add_array("imatrix.datasets", ["uniform"])
    writer.add_uint32("imatrix.chunk_count", 1)
    writer.add_uint32("imatrix.chunk_size", 1)
    n = 0
    for t in reader.tensors:
        shape = [int(d) for d in t.shape]  # ggml order: ne[0] is the row width
        if len(shape) < 2 or not t.name.endswith(".weight"):
            continue
        n_mat = shape[2] if len(shape) > 2 else 1  # experts: one row of sums each
        writer.add_tensor(t.name + ".in_sum2", np.ones((n_mat, shape[0]), dtype=np.float32))
        writer.add_tensor(t.name + ".counts", np.ones((n_mat, 1), dtype=np.float32))
        n += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{out}: {n} matrices, uniform importance")


if __name__ == "__main__":
    main()
