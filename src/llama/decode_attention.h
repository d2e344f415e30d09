// src/llama/decode_attention.h: a decoding step's attention for one key/value head of one row, on plain float
// arrays; model.cpp runs it over a batch's rows and heads.
//
// Why by hand: in a batch of prompts of different lengths the KV cache is left-padded to the longest prompt, and a
// fused attention over a [rows, kv_heads, total, head] cache reads every row's padding (about half the cache in a
// batch of PUMA's prompts), as PyTorch's CPU attention has no per-row key ranges. This kernel reads only the keys
// and values a row's mask lets it see, in one pass each (docs/performance.md, "Sampling with a KV cache").
#pragma once

#include <cstdint>
#include <vector>

namespace pwab::llama {

//! The shapes and strides of one (row, key/value head) task.
struct DecodeAttentionHead {
  int64_t groups = 1;        //!< query heads sharing this key/value head
  int64_t head = 0;          //!< head width
  int64_t total = 0;         //!< cached positions, the new one included
  int64_t key_stride = 0;    //!< floats from one position's key to the next
  int64_t value_stride = 0;  //!< the same for the values
  float scale = 1.0f;        //!< multiplies q·k (1/√head)
};

//! The positions of a row's bias (0, or the lowest float or −∞ where blocked: padding, the future) that are not
//! blocked, into `visible`, and their count; shared by the row's key/value heads. A row with every position blocked
//! gets all of them and a negative count (−total), which tells decode_attention_head() to weigh them equally: what
//! adding the lowest float to every score gives.
int64_t visible_positions(const float* bias, int64_t total, std::vector<int32_t>& visible);

//! out[g] = Σ_j softmax_j(q[g]·k_j·scale + bias[j]) v_j over the visible positions j (visible_positions(); m its
//! count), for the `groups` queries q (groups × head, contiguous), keys at k + j·key_stride and values at
//! v + j·value_stride. A blocked position is skipped: its weight in the softmax is 0. `out` is groups × head,
//! contiguous.
void decode_attention_head(const float* q, const float* k, const float* v, const float* bias, const int32_t* visible,
                           int64_t m, const DecodeAttentionHead& shape, float* out);

//! exp(x) for x ≤ 0, to about 2 units in the last place, in a form that vectorises (Cephes' polynomial on the
//! range-reduced argument); below −80 it returns exp(−80) rather than a denormal. Also the row kernels' SwiGLU
//! (decode_step.h) uses it.
void exp_nonpositive(float* x, int64_t n);

}  // namespace pwab::llama
