"""rlmon for Hugging Face's Trainer and TRL's trainers (SFT, DPO, PPO, GRPO, ...):

    from rlmon.integrations.transformers import RlmonCallback
    trainer = Trainer(..., callbacks=[RlmonCallback(project="sft")])

Every time the trainer logs, the numbers of its logs dict go to the run at the
trainer's global step, under the trainer's own names (`loss`, `learning_rate`,
`grad_norm`, TRL's `rewards/chosen`, `objective/kl`, `completions/mean_length`,
...): rlmon's catalog reads those as its canonical metrics. Only the main process
logs. The run starts with training (its config: the TrainingArguments) and
finishes with it, unless a run was already open (rlmon.init before the trainer):
then the callback logs to it and leaves it open.

Importing this module imports transformers; without transformers installed the
callback still works when called by hand (it needs nothing from it to log).
"""
import rlmon
from rlmon import _run

try:
    from transformers import TrainerCallback as _Base
except ImportError:  # the callback needs nothing from transformers to log
    _Base = object


def _numbers(logs):
    return {k: v for k, v in logs.items() if _run._number(v) is not None}


class RlmonCallback(_Base):
    def __init__(self, project=None, name=None, config=None, dir=None):
        self.project = project
        self.name = name
        self.config = config
        self.dir = dir
        self._run = None
        self._owned = False

    def _main(self, state):
        return getattr(state, "is_world_process_zero", True)

    def _ensure_run(self, args):
        if self._run is not None and not self._run.finished:
            return self._run
        current = _run.run
        if current is not None and not current.finished:
            self._run, self._owned = current, False
            return current
        config = dict(self.config or {})
        try:
            config.update({k: v for k, v in args.to_dict().items() if k not in config})
        except Exception:
            pass
        name = self.name or getattr(args, "run_name", None)
        self._run, self._owned = rlmon.init(project=self.project, name=name, config=config, dir=self.dir), True
        return self._run

    def on_train_begin(self, args, state, control, **kwargs):
        if self._main(state):
            self._ensure_run(args)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or not self._main(state):
            return
        self._ensure_run(args).log(_numbers(logs), step=int(state.global_step))

    def on_train_end(self, args, state, control, **kwargs):
        if self._run is not None and self._owned:
            self._run.finish()
            self._run = None
