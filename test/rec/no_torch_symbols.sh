#!/bin/sh
# Fails when the static library $1 references a libtorch symbol (c10::, at::, torch::, caffe2::): the serving
# half of the recommender (pwab_rec_core) must link without libtorch.
symbols=$(nm -C --undefined-only "$1") || { echo "nm failed on $1"; exit 2; }
[ -n "$symbols" ] || { echo "no undefined symbols in $1: not the library expected"; exit 2; }
if printf '%s\n' "$symbols" | grep -E '(^|[^[:alnum:]_])(c10|at|torch|caffe2)::'; then
  echo "$1 references libtorch (above)"
  exit 1
fi
echo "$1: $(printf '%s\n' "$symbols" | grep -c .) undefined symbols, none of libtorch"
