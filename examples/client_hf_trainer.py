#!/usr/bin/env python3
"""rlmon's callback in a Hugging Face Trainer (TRL's trainers take it the same way):

    from rlmon.integrations.transformers import RlmonCallback
    trainer = Trainer(..., callbacks=[RlmonCallback(project="sft")])

Here a tiny GPT-2 made from a config (no download) trains for a few steps on
random tokens on the CPU; its logs (`loss`, `learning_rate`, `grad_norm`, ...)
go to ./rlmon-runs/ (or RLMON_DIR), where `rlmon watch` follows them under
rlmon's names (loss, lr, grad_norm).

    python3 examples/client_hf_trainer.py --steps 40
"""
import argparse
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from rlmon.integrations.transformers import RlmonCallback


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n, length, vocab):
        g = torch.Generator().manual_seed(0)
        self.data = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--out", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "rlmon-hf-example"))
    args = p.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir=args.out,
        run_name="hf-tiny",
        max_steps=args.steps,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=training, train_dataset=RandomTokens(256, 32, 64), callbacks=[RlmonCallback(project="examples")])
    trainer.train()


if __name__ == "__main__":
    main()
