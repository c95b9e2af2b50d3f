"""A tiny Qwen3 with random weights, made here (no download), for `npm run conformance`'s live server.

    python tiny_model.py <tokenizer dir> <out dir>

Writes a Hugging Face model directory (config.json, model.safetensors, generation_config.json) with
one decoder layer (hidden 64) over the real Qwen3 vocabulary, and copies the tokenizer files beside
it, so an inference server loads it like any released checkpoint. Seeded: the same weights each time.
"""

import os
import shutil
import sys


def main(tokenizer_dir, out):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                         max_position_embeddings=40960, tie_word_embeddings=True,
                         bos_token_id=151643, eos_token_id=151645, pad_token_id=151643)
    model = Qwen3ForCausalLM(config).to(torch.float32)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, name), os.path.join(out, name))
    print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
