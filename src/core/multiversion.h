// src/core/multiversion.h: PWAB_MULTIVERSION compiles a hot loop for AVX-512, AVX2 and baseline x86-64, and the
// loader picks the one the CPU runs (GCC's target_clones). Why: the build is not -march=native, so that one binary
// serves any x86-64 machine; elsewhere, and under clang, the attribute is left out.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PWAB_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PWAB_MULTIVERSION
#endif
