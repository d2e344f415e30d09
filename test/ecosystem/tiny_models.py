"""Small models the ecosystem tests make for themselves (nothing is downloaded): a LLaMA-family decoder of a few
hundred thousand parameters with random weights, and a tokenizer trained here, saved in the Hugging Face layout
that both transformers and pwab read (config.json, model.safetensors, tokenizer.json, tokenizer_config.json).

The tokenizer is a sentencepiece-style BPE (Metaspace pre-tokenizer, byte fallback), the kind LLaMA-2 uses and
pwab's tokenizer.json reader accepts (docs/tokenizer.md). Its chat template is ChatML with Hermes tool calls,
which TRL, verifiers and `pwab lm serve` all speak. Needs torch, transformers and tokenizers (the core, verl and
openrlhf environments)."""

import json
import os

# ChatML, with the tools listed in the system turn and tool calls written as <tool_call>{...}</tool_call>, the
# convention of Qwen2.5/Hermes; tool results come back as a user turn wrapped in <tool_response>. Kept small.
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- 'You may call these tools:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\nCall one as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' %}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- if message.tool_calls %}{%- for call in message.tool_calls %}"
    "{%- if call.function is defined %}{%- set call = call.function %}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' }}"
    "{%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

SPECIAL = ["<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
           "<tool_response>", "</tool_response>"]

# Text the tokenizer learns from: words of the benchmark's prompts and tool calls, so that they encode in few tokens.
CORPUS = [
    "search_product_by_query get_recommendations_by_history add_product_review get_product_details_by_asin",
    "respond stop query review product_sequence arguments name content tool_call tool_response",
    "I want a red kettle for my kitchen. Find me running shoes, a phone case, a good book and headphones.",
    "Recommend something based on my history. Write a review of this product: great quality, would buy again.",
    "The user bought B0 products before: title, rating 5, date 2023-01-01, review text. Search results follow.",
    '{"name": "search_product_by_query", "arguments": {"query": "wireless headphones with noise cancelling"}}',
    "system user assistant tools You may call these tools. Call one as shown. The episode is over.",
    "0 1 2 3 4 5 6 7 8 9 A B C D E F G H I J K L M N O P Q R S T U V W X Y Z , . : ; ! ? ' \" ( ) [ ] { } _ -",
] * 4


def make_tokenizer(directory, vocab_size=320, exact=False):
    """Train a sentencepiece-style BPE tokenizer.json and write it with its config (ChatML template) into
    `directory`. Returns the transformers tokenizer loaded back from there.

    By default, like LLaMA-2's, it puts a space before the text and before every piece between special tokens,
    so decode(encode(text)) shows a space after each special token. exact=True leaves the prepended space out, so
    decode(encode(text)) == text, as a chat model's tokenizer (Qwen's, byte-level) gives: for engines that decode
    a prompt and find it again at the start of the decoded prompt + response (OpenRLHF's remote reward)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers
    from transformers import PreTrainedTokenizerFast

    os.makedirs(directory, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if exact:
        tok.normalizer = normalizers.Replace(" ", "\u2581")
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    tok.pre_tokenizer = None
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(byte_tokens), special_tokens=SPECIAL + byte_tokens,
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.save(os.path.join(directory, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "<|im_end|>",
        "unk_token": "<unk>", "pad_token": "<pad>", "add_bos_token": False, "add_eos_token": False,
        "additional_special_tokens": SPECIAL[4:], "chat_template": CHAT_TEMPLATE, "model_max_length": 2048,
    }
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return PreTrainedTokenizerFast.from_pretrained(directory)


def make_llama(directory, hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, seed=0, vocab_size=320,
               max_positions=2048, exact_tokenizer=False):
    """A random tiny LlamaForCausalLM with its tokenizer (make_tokenizer(..., exact=exact_tokenizer)), saved in
    `directory` (safetensors, fp32). Returns (model, tokenizer)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = make_tokenizer(directory, vocab_size=vocab_size, exact=exact_tokenizer)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=max_positions, rms_norm_eps=1e-6, rope_theta=10000.0,
                         tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         torch_dtype="float32")
    model = LlamaForCausalLM(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory, safe_serialization=True)
    return model, tokenizer



def steering_bias(tokenizer, target, prefix, bias=11.0, anchored=False):
    """Generation settings that steer a random tiny model to answer with `target` (then the EOS token): a
    transformers `sequence_bias` (GenerationConfig; TRL passes it through GRPOConfig.generation_kwargs) adding `bias`
    to each next token of the target after the tokens before it, starting after `prefix` (the end of the prompt the
    chat template renders, e.g. "<|im_start|>assistant\n"). A random model's logits are nearly flat, so at bias 11
    each token follows with probability ~0.99 under sampling: most answers are the target, some break off into
    noise. A random tiny model almost never writes a well-formed tool call by itself; a steered one lets tests see
    real generated tool calls parsed and executed. `anchored`: every biased n-gram starts with the whole prefix, so
    the bias applies only right after that exact prefix (e.g. a later turn's "</tool_response>...assistant\n"); the
    lists of several calls can be added together to steer different turns differently (a higher bias wins where
    two apply). Returns {"sequence_bias": [[ids, bias], ...]}."""
    before = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    ids = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    sequence = before + ids
    # Each biased n-gram ends at one target token; its context grows until no two n-grams with the same context
    # lead to different tokens (a token repeated in the target, such as a quote, needs more context).
    for context in range(len(before), len(sequence)):
        grams = {}
        clash = False
        for end in range(len(before), len(sequence)):
            key = tuple(sequence[max(0, end - context):end])
            if grams.setdefault(key, sequence[end]) != sequence[end]:
                clash = True
                break
        if not clash:
            break
    if anchored:
        context = len(sequence)
    pairs = [[list(sequence[max(0, end - context):end + 1]), float(bias)] for end in range(len(before), len(sequence))]
    return {"sequence_bias": pairs}


def retemplate(directory, chat_template):
    """Rewrites the tokenizer saved in `directory` to behave as Qwen2.5's does for tool calls: `chat_template` (e.g.
    TRL's qwen2_5 template, whose tool calls TRL knows how to parse), the tool-call markers (<tool_call>,
    <tool_response> and their ends) as added tokens that are not special, so that decoding keeps them and a response
    parser finds the calls, and text decoded exactly as written (no sentencepiece dummy prefix). <|im_start|> and
    <|im_end|> stay special. The model's weights are untouched (random anyway). Returns the tokenizer loaded back."""
    from transformers import AutoTokenizer

    markers = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"}
    path = os.path.join(directory, "tokenizer.json")
    with open(path) as f:
        spec = json.load(f)
    for token in spec.get("added_tokens", []):
        if token["content"] in markers:
            token["special"] = False
    # No sentencepiece dummy prefix: it would put a space after every added token ("<|im_start|> assistant"), and
    # a parser looking for the template's own "<|im_start|>assistant\n" in the decoded prompt would miss it.
    spec["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    spec["decoder"]["decoders"] = [d for d in spec["decoder"]["decoders"] if d.get("type") != "Strip"]
    with open(path, "w") as f:
        json.dump(spec, f)
    path = os.path.join(directory, "tokenizer_config.json")
    with open(path) as f:
        config = json.load(f)
    for key in ("additional_special_tokens", "extra_special_tokens"):
        if isinstance(config.get(key), list):
            config[key] = [t for t in config[key] if t not in markers]
    config.pop("added_tokens_decoder", None)
    config["chat_template"] = chat_template
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    for name in ("chat_template.jinja",):  # transformers 5 may save the template beside the config
        if os.path.exists(os.path.join(directory, name)):
            os.remove(os.path.join(directory, name))
    return AutoTokenizer.from_pretrained(directory)
