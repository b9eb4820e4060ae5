"""The Python client's own tests (standard library unittest). Run by cargo:
tests/client.rs runs this file with PYTHONPATH=python; by hand:

    PYTHONPATH=python python3 -m unittest discover -s tests/python -v
"""
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

import rlmon
from rlmon import _run

PYTHON_DIR = os.path.dirname(os.path.dirname(rlmon.__file__))


def load(path):
    with open(path) as f:
        return json.load(f)


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        _run._said.clear()

    def tearDown(self):
        if _run.run is not None:
            _run.run.finish()
            _run.run = None
        self.tmp.cleanup()

    def test_a_run_folder_holds_start_config_points_alerts_and_finish(self):
        run = rlmon.init(project="p", name="my run", config={"lr": 3e-4, "layers": [1, 2], "obj": object()}, dir=self.root)
        self.assertIs(rlmon.run, run)
        self.assertEqual(rlmon.config["lr"], 3e-4)
        rlmon.log({"loss": 2.5, "lr": 3e-4})
        rlmon.log({"loss": 2.4, "nested": {"a": 1, "b": {"c": 2.0}}, "text": "hi", "flag": True, "nan": float("nan")})
        run.log({"loss": 2.3}, step=10)
        run.log({"loss": 2.2})
        rlmon.alert("eval regressed", "acc 0.41", level="error")
        rlmon.alert("note", level="INFO")
        run.config["batch"] = 8
        rlmon.finish()
        self.assertTrue(os.path.basename(run.dir).startswith("my-run-"), run.dir)
        start = load(os.path.join(run.dir, "rlmon-run.json"))
        self.assertEqual((start["name"], start["project"], start["pid"]), ("my run", "p", os.getpid()))
        config = load(os.path.join(run.dir, "config.json"))
        self.assertEqual(config["batch"], 8, "a change after init is written too")
        self.assertTrue(config["obj"].startswith("<object"), "what json cannot write is its str()")
        points = lines(os.path.join(run.dir, "metrics.jsonl"))
        self.assertEqual([p["step"] for p in points], [0, 1, 10, 11], "steps count on from the last one given")
        self.assertEqual(points[1]["nested/b/c"], 2.0)
        self.assertNotIn("text", points[1])
        self.assertNotIn("flag", points[1])
        self.assertTrue(math.isnan(points[1]["nan"]), "NaN kept: rlmon reads it")
        alerts = lines(os.path.join(run.dir, "alerts.jsonl"))
        self.assertEqual([(a["title"], a["level"], a["step"]) for a in alerts], [("eval regressed", "critical", 11), ("note", "info", 11)])
        finish = load(os.path.join(run.dir, "finish.json"))
        self.assertEqual((finish["state"], finish["exit_code"], finish["last_step"]), ("finished", 0, 11))
        rlmon.finish()  # a second finish does nothing
        rlmon.log({"loss": 1.0})  # after finish: dropped, no error

    def test_scalars_with_item_are_read_and_other_objects_left_out(self):
        class Scalar:
            def __init__(self, v):
                self.v = v

            def item(self):
                return self.v

        class Many:
            def item(self):
                raise ValueError("only one element tensors can be converted")

        with rlmon.init(name="items", dir=self.root) as run:
            run.log({"loss": Scalar(1.5), "many": Many(), "none": None}, step=Scalar(3).item())
        self.assertEqual(lines(os.path.join(run.dir, "metrics.jsonl")), [{"step": 3, "timestamp": lines(os.path.join(run.dir, "metrics.jsonl"))[0]["timestamp"], "loss": 1.5}])

    def test_an_exception_in_the_with_block_fails_the_run(self):
        with self.assertRaises(RuntimeError):
            with rlmon.init(name="boom", dir=self.root) as run:
                run.log({"loss": 1.0})
                raise RuntimeError("data loader ran dry")
        finish = load(os.path.join(run.dir, "finish.json"))
        self.assertEqual((finish["state"], finish["exit_code"]), ("failed", 1))
        self.assertEqual(finish["error"], "RuntimeError: data loader ran dry")

    def test_log_never_raises_where_nothing_can_be_written(self):
        blocker = os.path.join(self.root, "a-file")
        open(blocker, "w").close()
        err = io.StringIO()
        with redirect_stderr(err):
            run = rlmon.init(name="nowhere", dir=os.path.join(blocker, "runs"))
            for step in range(1000):
                rlmon.log({"loss": 1.0 / (step + 1)})
            rlmon.alert("still here")
            rlmon.finish()
        self.assertIsNone(run.dir)
        self.assertEqual(err.getvalue().count("rlmon:"), 1, err.getvalue())
        self.assertIn("training goes on", err.getvalue())

    def test_a_full_disk_is_said_once_and_training_goes_on(self):
        if not os.path.exists("/dev/full"):
            print("skipped: no /dev/full here", file=sys.stderr)
            return
        err = io.StringIO()
        with redirect_stderr(err):
            run = rlmon.init(name="full", dir=self.root)
            os.symlink("/dev/full", os.path.join(run.dir, "metrics.jsonl"))
            for step in range(200):
                run.log({"loss": 1.0})
            run._drain()  # what the writer thread does a few times a second
            run.log({"loss": 2.0})
            run.finish()
        self.assertEqual(err.getvalue().count("cannot write"), 1, err.getvalue())
        self.assertIn("No space left on device", err.getvalue())
        self.assertEqual(load(os.path.join(run.dir, "finish.json"))["state"], "finished")

    def test_log_before_init_and_bad_arguments_do_not_raise(self):
        err = io.StringIO()
        with redirect_stderr(err):
            rlmon.log({"loss": 1.0})
            rlmon.alert("x")
            run = rlmon.init(name="bad", dir=self.root)
            run.log(None)
            run.log({"loss": 1.0}, step="ten")
            run.log(["not", "a", "dict"])
            run.finish()
        self.assertIn("before rlmon.init()", err.getvalue())
        self.assertIn("log() ignored a call", err.getvalue())

    def test_the_script_ending_finishes_the_run_with_its_exit_status(self):
        def script(body):
            code = f"import rlmon\nrlmon.init(name='s', dir={self.root!r})\nrlmon.log({{'loss': 1.0}})\n{body}\n"
            return subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYTHON_DIR}, capture_output=True, text=True)

        self.assertEqual(script("").returncode, 0)
        failed = script("raise ValueError('bad batch')")
        self.assertEqual(failed.returncode, 1)
        records = sorted((load(os.path.join(self.root, d, "finish.json")) for d in os.listdir(self.root)), key=lambda r: r["exit_code"])
        self.assertEqual([(r["state"], r["exit_code"]) for r in records], [("finished", 0), ("failed", 1)])
        self.assertEqual(records[1]["error"], "ValueError: bad batch")

    def test_rlmon_dir_moves_the_runs_and_disabled_keeps_nothing(self):
        os.environ["RLMON_DIR"] = os.path.join(self.root, "elsewhere")
        try:
            run = rlmon.init(name="moved")
            run.finish()
        finally:
            del os.environ["RLMON_DIR"]
        self.assertTrue(run.dir.startswith(os.path.join(self.root, "elsewhere")))
        off = rlmon.init(name="off", mode="disabled", dir=self.root)
        off.log({"loss": 1.0})
        off.finish()
        self.assertIsNone(off.dir)

    def test_importing_rlmon_imports_no_framework(self):
        code = "import sys, rlmon, rlmon.integrations; print(sorted(m for m in ('torch', 'transformers', 'lightning', 'numpy') if m in sys.modules))"
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYTHON_DIR}, capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "[]")

    def test_the_trainer_callback_logs_the_trainers_numbers_at_its_step(self):
        # Called as the Trainer calls it; transformers itself is not needed for this.
        from rlmon.integrations.transformers import RlmonCallback

        class Args:
            run_name = "sft"

            def to_dict(self):
                return {"learning_rate": 1e-3}

        class State:
            global_step = 0
            is_world_process_zero = True

        cb, args, state = RlmonCallback(project="p", dir=self.root), Args(), State()
        cb.on_train_begin(args, state, None)
        for step in (1, 2):
            state.global_step = step
            cb.on_log(args, state, None, logs={"loss": 2.0 / step, "learning_rate": 1e-3, "epoch": 0.1 * step, "note": "x"})
        run = rlmon.run
        cb.on_train_end(args, state, None)
        self.assertTrue(run.finished, "the run the callback started ends with training")
        points = lines(os.path.join(run.dir, "metrics.jsonl"))
        self.assertEqual([(p["step"], p["loss"]) for p in points], [(1, 2.0), (2, 1.0)])
        self.assertEqual(load(os.path.join(run.dir, "config.json")), {"learning_rate": 1e-3})
        self.assertEqual(load(os.path.join(run.dir, "rlmon-run.json"))["name"], "sft")


if __name__ == "__main__":
    unittest.main()
