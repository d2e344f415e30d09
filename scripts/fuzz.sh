#!/usr/bin/env bash
# Runs every libFuzzer target of build/fuzz (fuzz/CMakeLists.txt) from its seed corpus, sharing N seconds
# (default 60) between them, and prints each target's executions and findings.
#   scripts/fuzz.sh BUILD_DIR [SECONDS]
# Seeds come from the test fixtures (and a few literal ones below); the corpora grow under BUILD_DIR/fuzz-corpus/
# and are reused by the next run. A crash is written to BUILD_DIR/fuzz-artifacts/ and makes the script fail: keep it
# as a test case (see docs/testing.md).
set -euo pipefail
build=${1:?usage: fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
targets=(data_loader safetensors llm_reply checkpoint run_record run_dir http_request openenv reward episode_service mcp remote_reply hf_config raw_review tokenizer)
share=$(( seconds / ${#targets[@]} )); [ "$share" -ge 1 ] || share=1

seed() {  # seed TARGET NAME < bytes
  mkdir -p "$build/fuzz-corpus/$1"
  cat > "$build/fuzz-corpus/$1/seed-$2"
}
prefixed() {  # prefixed BYTE FILE: the file behind a selector byte
  printf "\\x$(printf %02x "$1")"
  cat "$2"
}

# data_loader: each dataset fixture, behind the byte that selects its file kind (data_loader_fuzz.cpp)
i=0
for f in test/fixtures/data/original/*.json; do
  case "$(basename "$f")" in
    all_products*) k=0 ;; user_history*) k=1 ;; user_instructions*) k=2 ;; user_profiles*) k=3 ;; *) k=4 ;;
  esac
  prefixed "$k" "$f" | seed data_loader "$i"
  i=$((i + 1))
done
# safetensors: real weight files (the fuzzer keeps their first max_len bytes)
seed safetensors adapter < test/fixtures/llama/adapter/adapter_model.safetensors
header='{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
{ printf "\\x$(printf %02x ${#header})\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; printf '%s' "$header"; printf '\0\0\x80\x3f\0\0\0\x40'; } \
  | seed safetensors small
# llm_reply: a chat reply with text, one with a tool call, an error reply
printf '%s' '{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}' | seed llm_reply text
printf '%s' '{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"search_product_by_query","arguments":"{\"query\":\"usb\"}"}}]},"finish_reason":"tool_calls"}]}' | seed llm_reply tool
printf '%s' '{"error":{"message":"rate limited","type":"rate_limit"}}' | seed llm_reply error
# checkpoint: a torch.save zip (selector 1) and its pickle (selector 2)
prefixed 1 test/fixtures/rec/sasrec_tiny.pth | seed checkpoint zip
if command -v unzip > /dev/null; then
  pkl=$(unzip -Z1 test/fixtures/rec/sasrec_tiny.pth | grep 'data.pkl$' | head -1)
  { printf '\x02'; unzip -p test/fixtures/rec/sasrec_tiny.pth "$pkl"; } | seed checkpoint pickle
fi
# run_record: a record line as `pwab run` writes it
printf '%s' '{"task":"test/0","trial":0,"user_id":"U1","instruction":"a usb cable","type":"search","target_asin":"B0TARGET01","first_observation":"USER U1: a usb cable","actions":[{"name":"search_product_by_query","arguments":"{\"query\":\"usb cable\"}","observation":"[]","reward":[1.0,0.5],"done":true,"scored":true}],"attempts":[[1.0,0.5]],"steps":1,"ending":"task_function","prompt_tokens":12,"completion_tokens":3,"seconds_env":0.01,"seconds_agent":0.2,"error":"","usage":{"agent":{"calls":1}}}' \
  | seed run_record one
# run_dir: a manifest (selector 0) and a results file of two lines and a cut one (selector 1)
printf '\x00%s' '{"config":{"agent":"heuristic","track":"single","trials":2},"seed":0,"dataset_fingerprint":"ab12","pwab_version":"0.1.0","shard_index":0,"shard_count":1,"created_utc":"2026-11-26T00:00:00Z"}' \
  | seed run_dir manifest
{ printf '\x01'; cat "$build/fuzz-corpus/run_record/seed-one"; printf '\n'; cat "$build/fuzz-corpus/run_record/seed-one" | sed 's/"trial":0/"trial":1/'; printf '\n{"task":"te'; } \
  | seed run_dir results

# http_request: a GET, a POST that waits for 100 Continue, a chunked POST, a WebSocket upgrade
printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' | seed http_request get
printf 'POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 18\r\n\r\n{"task": "test/0"}' \
  | seed http_request continue
printf 'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' \
  | seed http_request upgrade
printf 'POST /v1/episodes HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n' | seed http_request chunked
# openenv: a WebSocket session's messages, one per line (reset, step, state, close)
printf '%s\n' '{"type":"reset","data":{"task":"test/0"}}' '{"type":"step","data":{"name":"search_product_by_query","arguments":{"query":"usb cable"}}}' \
  '{"type":"state"}' '{"type":"close"}' | seed openenv single
printf '%s\n' '{"type":"reset","data":{"split":"train","seed":3,"track":"multi"}}' '{"type":"step","data":{"name":"respond","arguments":{"content":"Which brand?"}}}' \
  '{"type":"step","data":{"name":"stop"}}' '{"type":"state","data":{}}' | seed openenv multi
# reward: one rollout, a batch, OpenRLHF's shape
printf '%s' '{"task":"test/0","function":"search_product_by_query","parameter":"usb cable"}' | seed reward one
printf '%s' '[{"task":"test/1","completion":"get_recommendations_by_history\n### Tool Parameter:\nB000000000, B000000001"},{"task":"nope"}]' | seed reward batch
printf '%s' '{"query":["P<tool_call>{\"name\":\"add_product_review\",\"arguments\":{\"review\":\"ok\"}}</tool_call></s>"],"prompts":["P"],"labels":["test/2"]}' | seed reward openrlhf
# episode_service: bodies, one per line (start, then steps): a single-turn search and a multi-turn conversation
printf '%s\n' '{"task":"test/0"}' '{"name":"search_product_by_query","arguments":{"query":"usb cable"}}' '{"name":"stop","arguments":{}}' \
  | seed episode_service single
printf '%s\n' '{"task":"test/1","track":"multi","seed":3}' '{"name":"respond","arguments":{"content":"Which brand do you like?"}}' \
  '{"name":"get_recommendations_by_history","arguments":{"product_sequence":["B000000000"]}}' \
  '{"name":"add_product_review","arguments":"{\"review\":\"Great.\"}","usage":{"prompt_tokens":5,"completion_tokens":2}}' \
  | seed episode_service multi
# mcp: a whole session, one JSON-RPC message per line ("$EP" is the episode the harness started last)
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"start_episode","arguments":{"task":"test/0","track":"multi"}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"respond","arguments":{"episode_id":"$EP","content":"Any brand?"}}}' \
  '[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"end_episode","arguments":{"episode_id":"$EP"}}},{"jsonrpc":"2.0","id":6,"method":"ping"}]' \
  | seed mcp session

# remote_reply: a tool call with usage, a stop
printf '%s' '{"name":"search_product_by_query","arguments":{"query":"usb cable"},"usage":{"prompt_tokens":12,"completion_tokens":3}}' \
  | seed remote_reply tool
printf '%s' '{"name":"stop"}' | seed remote_reply stop
# hf_config: the test models' config.json files
for d in f32 f16 bf16; do seed hf_config "$d" < "test/fixtures/llama/$d/config.json"; done
# raw_review: a review line of Amazon Reviews 2023, and one without parent_asin
printf '%s' '{"rating": 4.0, "title": "Works well", "text": "Charges fast.<br />Good cable.", "images": [], "asin": "B00EL00002", "parent_asin": "B00EL00001", "user_id": "AGKHLEW2SOWHNMFQIJGBECAF7INQ", "timestamp": 1588687728923, "helpful_vote": 2, "verified_purchase": true}' \
  | seed raw_review full
printf '%s' '{"rating": 5, "title": "", "text": "ok", "asin": "B00EL00003", "user_id": "AX", "timestamp": 1.5e12}' | seed raw_review asin
# tokenizer: a small BPE tokenizer.model and its tokenizer.json, trained by the target itself
mkdir -p "$build/fuzz-corpus/tokenizer"
PWAB_FUZZ_MAKE_SEEDS="$build/fuzz-corpus/tokenizer" "$build/fuzz/fuzz_tokenizer" > /dev/null 2>&1

status=0
for t in "${targets[@]}"; do
  echo "fuzz_$t: ${share}s" >&2
  log="$build/fuzz-$t.log"
  if ! "$build/fuzz/fuzz_$t" "$build/fuzz-corpus/$t" -max_total_time="$share" -max_len=65536 -timeout=10 \
      -artifact_prefix="$artifacts/$t-" -print_final_stats=1 > "$log" 2>&1; then
    status=1
    echo "fuzz_$t: FOUND A CRASH (see $log and $artifacts/)" >&2
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  echo "fuzz_$t: $execs executions, $cov, corpus $(ls "$build/fuzz-corpus/$t" | wc -l) inputs" >&2
done
[ "$status" -eq 0 ] && echo "fuzz: no crash in ${seconds}s over ${#targets[@]} targets" >&2
exit "$status"
