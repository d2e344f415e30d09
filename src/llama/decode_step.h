// src/llama/decode_step.h: the kernels of a decoding step on plain float rows (one new token a row): RMSNorm, the
// rotary embedding, SwiGLU, and products of a few rows with a weight. model.cpp's LlamaModelImpl::decode_step()
// runs a whole step through them, with decode_attention.h for the attention and libtorch's BLAS for products of
// many rows.
//
// Why by hand: a step of a small model is some two hundred libtorch operator calls, each a few microseconds of
// dispatch and allocation around a few hundred floats of work; at batch 1 on the tiny preset that was about 1.2 ms
// a token, nearly all of it around the arithmetic (docs/performance.md, "A decoding step without operator calls").
#pragma once

#include <cstdint>

namespace pwab::llama {

//! out[r] = x[r] / sqrt(mean(x[r]²) + eps) · weight for `rows` rows of `width` floats (out may be x).
void rms_norm_rows(const float* x, const float* weight, int64_t rows, int64_t width, float eps, float* out);

//! HF's rotary embedding in place on `heads` heads of `width` floats (dimension i pairs with i + width/2):
//! (x1, x2) → (x1·cos − x2·sin, x2·cos + x1·sin), with cos and sin of width/2 angles. Each product is rounded before
//! the sum, as PyTorch's x·cos + rotate_half(x)·sin rounds them.
void rotate_heads(float* x, int64_t heads, int64_t width, const float* cos, const float* sin);

//! gate[i] = silu(gate[i]) · up[i] for n floats: SwiGLU's elementwise part.
void swiglu(float* gate, const float* up, int64_t n);

//! x[i] += y[i] for n floats: a residual connection.
void add_into(float* x, const float* y, int64_t n);

//! y[r, o] = x[r] · w[o] for the outputs o in [first, last) of a row-major weight [out, in], `rows` rows of x
//! (contiguous, `in` floats each) into y (rows × `out`, row-major). Each weight row is read once for all rows: made
//! for a few rows (a decoding step at small batch), where the weight's reading is the cost.
void rows_times_weight(const float* x, int64_t rows, int64_t in, const float* w, int64_t out, int64_t first,
                       int64_t last, float* y);

}  // namespace pwab::llama
