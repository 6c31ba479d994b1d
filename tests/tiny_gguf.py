"""A tiny llama-architecture GGUF model whose answers are fixed by construction (no weights downloaded)."""
import numpy as np

CHAIN = ["<|assistant|>", "<think>", "Two", "▁and", "▁two.", "</think>", "The", "▁answer", "▁is", "▁4", ".", "<|end|>"]  # each token's successor is the next
CALL = "<tool_call>"  # where a tool call starts, in the template's own format (Hermes / Qwen style)
PREFER = {'"': 3.0, "}": 2.6, "]": 2.5, ",": 2.3, ":": 2.2, "{": 1.2, "4": 1.5, "</tool_call>": 2.4, "<|end|>": 2.0, "▁": -3.0}  # a unigram taste, for grammar-constrained turns
TEMPLATE = """\
{%- if tools -%}<|system|>You may call these tools, each as <tool_call>{"name": NAME, "arguments": ARGS}</tool_call>:
{%- for t in tools %}
{{ t | tojson }}{%- endfor -%}<|end|>{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>
{%- if m.reasoning_content -%}<think>{{ m.reasoning_content }}</think>{%- endif -%}{{ m.content or '' }}
{%- for tc in m.tool_calls or [] -%}<tool_call>{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}</tool_call>{%- endfor -%}<|end|>
{%- elif m.role == 'tool' -%}<|tool|>{{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- if not enable_thinking | default(false) -%}<think></think>{%- endif -%}{%- endif -%}"""

def vocab():
    "Tokens, scores and types (SentencePiece-style: 1 normal, 2 unknown, 3 control, 4 user-defined: matched whole in text, 6 byte)."
    toks = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    toks += [(f"<|{r}|>", 0.0, 3) for r in ("system", "user", "assistant", "tool", "end")]
    toks += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    chars = ["▁"] + [chr(c) for c in range(0x21, 0x7F)]
    toks += [(c, -1.0, 1) for c in chars]
    marks = {"<think>", "</think>", CALL, "</tool_call>"}
    toks += [(w, 0.0, 4 if w in marks else 1) for w in [*CHAIN, CALL, "</tool_call>"] if w not in {t for t, _, _ in toks}]
    return toks

def write_model(path, n_embd: int = 64, n_ff: int = 64, n_head: int = 2):
    "Write the model to `path`: one layer whose attention and feed-forward are zero, so the next token is a function of the last."
    import gguf
    toks = vocab(); ids = {t: i for i, (t, _, _) in enumerate(toks)}; n_vocab = len(toks)
    bias = n_embd - 1
    emb = np.zeros((n_vocab, n_embd), np.float32); emb[:, bias] = 1.0
    out = np.zeros((n_vocab, n_embd), np.float32)
    for k, t in enumerate(CHAIN[:-1]):
        emb[ids[t], k] = 1.0; out[ids[CHAIN[k + 1]], k] = 10.0
    out[ids[CALL], CHAIN.index(".")] = 5.0  # where the answer may not end yet (a tool call is required), a call starts
    for t, p in PREFER.items(): out[ids[t], bias] = p
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("reasoning-kit-tiny"); w.add_context_length(4096); w.add_embedding_length(n_embd)
    w.add_block_count(1); w.add_feed_forward_length(n_ff); w.add_head_count(n_head); w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5); w.add_rope_dimension_count(n_embd // n_head); w.add_file_type(0)
    w.add_tokenizer_model("llama"); w.add_token_list([t for t, _, _ in toks])
    w.add_token_scores([s for _, s, _ in toks]); w.add_token_types([k for _, _, k in toks])
    w.add_bos_token_id(1); w.add_unk_token_id(0); w.add_add_bos_token(True)
    w.add_eos_token_id(ids["<|end|>"])  # the end of a turn, as the template writes it
    w.add_chat_template(TEMPLATE)
    z = lambda *s: np.zeros(s, np.float32)
    w.add_tensor("token_embd.weight", emb); w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", out)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, np.float32)); w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, np.float32))
    for n in ("q", "k", "v", "output"): w.add_tensor(f"blk.0.attn_{n}.weight", z(n_embd, n_embd))
    w.add_tensor("blk.0.ffn_gate.weight", z(n_ff, n_embd)); w.add_tensor("blk.0.ffn_up.weight", z(n_ff, n_embd))
    w.add_tensor("blk.0.ffn_down.weight", z(n_embd, n_ff))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path

if __name__ == "__main__":
    import sys; print(write_model(sys.argv[1]))
