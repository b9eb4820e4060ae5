"""Integrations with training frameworks. Each module imports its framework when
it is imported itself, never before: `import rlmon` imports none of them.

- `rlmon.integrations.transformers`: `RlmonCallback`, a Hugging Face
  `TrainerCallback` (TRL's trainers are Trainers too);
- `rlmon.integrations.lightning`: `RlmonLogger`, a PyTorch Lightning logger.
"""
