"""rlmon's Python client: send a training script's metrics and alerts to rlmon,
shaped like wandb's so that switching is an import.

    import rlmon
    run = rlmon.init(project="demo", name="lr-3e-4", config={"lr": 3e-4})
    for step in range(1000):
        ...
        rlmon.log({"loss": loss, "lr": lr}, step=step)
    rlmon.alert("eval regressed", "accuracy fell to 0.41", level="warn")
    rlmon.finish()

The run is a folder under ./rlmon-runs (or RLMON_DIR): `rlmon watch` in the same
folder follows the recent runs live, `rlmon check rlmon-runs/<run>` judges one.
Standard library only; log() never raises and never waits for the disk.

Integrations, imported only when used: `rlmon.integrations.transformers`
(RlmonCallback for Hugging Face and TRL trainers) and
`rlmon.integrations.lightning` (RlmonLogger).
"""
from . import _run
from ._run import Config, Run, alert, finish, init, log

__all__ = ["init", "log", "alert", "finish", "Run", "Config", "run", "config"]

try:  # the installed wheel's version (Cargo.toml's); a checkout's python/ has none
    from importlib.metadata import version as _version

    __version__ = _version("rlmon")
except Exception:
    __version__ = "0+unknown"


def __getattr__(name):
    # `rlmon.run` and `rlmon.config`: the current run's, as wandb.run / wandb.config.
    if name == "run":
        return _run.run
    if name == "config":
        return _run.run.config if _run.run is not None else None
    raise AttributeError(f"module 'rlmon' has no attribute {name!r}")
