#!/usr/bin/env python3
"""Tokenize the generated completions for DFlash drafter training (chat template + loss mask)."""
import argparse
import glob
import json
import os

from transformers import AutoTokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.expanduser("~/models/Qwen3.6-27B"))
    ap.add_argument("--input", default=os.path.expanduser("~/completions"))
    ap.add_argument("--output", default=os.path.expanduser("~/tokenized"))
    ap.add_argument("--max-len", type=int, default=32768)
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(args.model, trust_remote_code=True)
    os.makedirs(args.output, exist_ok=True)
    short = 0
    for path in sorted(glob.glob(os.path.join(args.input, "batch_*.jsonl"))):
        out = os.path.join(args.output, os.path.basename(path))
        with open(path) as f, open(out, "w") as g:
            for line in f:
                row = json.loads(line)
                prompt = tok.apply_chat_template([{"role": "user", "content": row["prompt"]}],
                                                 tokenize=False, add_generation_prompt=True)
                answer = "<think>\n%s\n</think>\n\n%s<|im_end|>" % (row.get("reasoning") or "", row["completion"])
                p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
                a_ids = tok(answer, add_special_tokens=False)["input_ids"]
                ids = (p_ids + a_ids)[: args.max_len]
                mask = ([0] * len(p_ids) + [1] * len(a_ids))[: args.max_len]
                if sum(mask) <= 6:
                    short += 1  # empty answers: the bug that made the first dataset useless
                g.write(json.dumps({"index": row["index"], "input_ids": ids, "loss_mask": mask}) + "\n")
        print("tokenized", os.path.basename(path))
    print("samples with loss_mask sum <= 6:", short)


if __name__ == "__main__":
    main()
