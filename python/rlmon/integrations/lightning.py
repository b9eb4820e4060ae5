"""rlmon for PyTorch Lightning:

    from rlmon.integrations.lightning import RlmonLogger
    trainer = L.Trainer(logger=RlmonLogger(project="mnist", name="baseline"))

`self.log("train_loss", loss)` in a LightningModule then reaches rlmon at the
trainer's step; the hyperparameters are the run's config; the run finishes with
the trainer (failed when training failed). Importing this module imports
lightning (or pytorch_lightning).
"""
import rlmon

try:
    from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
    from lightning.pytorch.utilities import rank_zero_only
except ImportError:
    from pytorch_lightning.loggers.logger import Logger, rank_zero_experiment
    from pytorch_lightning.utilities import rank_zero_only


class RlmonLogger(Logger):
    def __init__(self, project=None, name=None, dir=None):
        super().__init__()
        self._project = project
        self._name = name or "lightning"
        self._dir = dir
        self._run = None

    @property
    def name(self):
        return self._name

    @property
    def version(self):
        return self._run.dir if self._run is not None else None

    @property
    @rank_zero_experiment
    def experiment(self):
        if self._run is None or self._run.finished:
            self._run = rlmon.init(project=self._project, name=self._name, dir=self._dir)
        return self._run

    @rank_zero_only
    def log_hyperparams(self, params, *args, **kwargs):
        params = vars(params) if hasattr(params, "__dict__") and not isinstance(params, dict) else dict(params or {})
        self.experiment.config.update(params)

    @rank_zero_only
    def log_metrics(self, metrics, step=None):
        self.experiment.log(dict(metrics), step=step)

    @rank_zero_only
    def finalize(self, status):
        if self._run is not None:
            self._run.finish(0 if status in ("success", "finished") else 1)
