#!/usr/bin/env python3
"""rlmon's logger in PyTorch Lightning:

    from rlmon.integrations.lightning import RlmonLogger
    trainer = L.Trainer(logger=RlmonLogger(project="demo", name="tiny"))

A tiny regression trains for a few steps on the CPU; `self.log("loss", ...)`
goes to ./rlmon-runs/ (or RLMON_DIR), where `rlmon watch` follows it.

    python3 examples/client_lightning.py --steps 30
"""
import argparse

import torch

try:
    import lightning as L
except ImportError:
    import pytorch_lightning as L

from rlmon.integrations.lightning import RlmonLogger


class Tiny(L.LightningModule):
    def __init__(self, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(256, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    trainer = L.Trainer(max_steps=args.steps, logger=RlmonLogger(project="examples", name="lightning-tiny"),
                        log_every_n_steps=1, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu")
    trainer.fit(Tiny(), data)


if __name__ == "__main__":
    main()
