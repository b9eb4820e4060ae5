"""The run a training script writes for rlmon: a folder of plain files that
`rlmon watch` follows and `rlmon check` judges. Standard library only.

A run folder (under ./rlmon-runs, or RLMON_DIR, or init's `dir`) holds:

    rlmon-run.json   the start record: name, project, pid, host, start time
    config.json      the config given to init (rewritten when it changes)
    metrics.jsonl    one JSON object per log(): step, timestamp, the numbers
    alerts.jsonl     one JSON object per alert(): title, text, level, step
    finish.json      the finish record: state, exit status, last step

log() and alert() only put the record on a queue (a few hundred nanoseconds);
a background thread writes it, a few times a second. Neither ever raises into
the training loop: a folder that cannot be written, a full disk or a value that
is not a number is said once on stderr and training goes on.
"""
import atexit
import collections
import json
import math
import os
import socket
import sys
import threading
import time

# The folder's file names: src/ingest/client.rs reads the same.
RUN_FILE = "rlmon-run.json"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
ALERTS_FILE = "alerts.jsonl"
FINISH_FILE = "finish.json"
FORMAT_VERSION = 1

# How often the writer thread writes what was logged (seconds).
FLUSH_PERIOD = 0.2
# Records kept while writing is impossible; the oldest go first.
MAX_PENDING = 1_000_000

LEVELS = {"info": "info", "warn": "warn", "warning": "warn", "error": "critical", "critical": "critical"}

_said = set()


def _say_once(key, message):
    """One line on stderr, the first time `key` is met; never raises."""
    if key in _said:
        return
    _said.add(key)
    try:
        sys.stderr.write(f"rlmon: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _stamp(t):
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))


def _iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _default_name():
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    stem = os.path.splitext(script)[0]
    return stem if stem and stem not in ("-c", "-m", "") else "run"


def _safe_name(name):
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in str(name)).strip("-.")
    return cleaned or "run"


def _number(value):
    """A logged value as a JSON number, or None when it is not one. Python ints and
    floats (numpy's included) as they are, NaN and infinities kept (rlmon reads
    them); a tensor or array of one element through `.item()`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    item = getattr(value, "item", None)
    if item is not None:
        try:
            value = item()
        except Exception:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    return None


def _flatten(prefix, data, out):
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(name + "/", value, out)
            continue
        number = _number(value)
        if number is not None and name not in ("step", "timestamp"):
            out[name] = number


def _jsonable(value):
    """The config as JSON can hold it: what json cannot write becomes its str()."""
    try:
        json.dumps(value, allow_nan=True)
        return value
    except (TypeError, ValueError):
        pass
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


class Config(dict):
    """The run's config: a dict whose changes (`run.config["lr"] = 1e-3`,
    `run.config.update(...)`) are written to config.json too."""

    def __init__(self, run, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._run = run

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self._run._config_dirty = True

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self._run._config_dirty = True

    def __getattr__(self, key):  # wandb's config.lr
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


class Run:
    """One run: made by rlmon.init(). `log`, `alert`, `finish`, and a context
    manager that finishes it (failed, with the exception, when one escapes)."""

    def __init__(self, project=None, name=None, config=None, dir=None, disabled=False, **extra):
        self.project = project
        self.name = str(name) if name else _default_name()
        self.started = time.time()
        self.config = Config(self, config or {})
        self.dir = None
        self.finished = False
        self._step = 0
        self._last_step = None
        self._metrics = collections.deque(maxlen=MAX_PENDING)
        self._alerts = collections.deque(maxlen=10_000)
        self._config_dirty = False
        self._files = {}
        self._failed_writes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._exit_code = None
        self._error = None
        if disabled:
            return
        root = dir or os.environ.get("RLMON_DIR") or "rlmon-runs"
        try:
            self.dir = self._make_folder(root)
            self._write_json(RUN_FILE, self._start_record(extra))
            self._write_json(CONFIG_FILE, _jsonable(dict(self.config)))
        except Exception as e:
            _say_once(("init", root), f"cannot write the run folder under {os.path.abspath(root)} ({e}); "
                      "training goes on, this run's metrics are not kept")
            self.dir = None
            return
        self._thread = threading.Thread(target=self._writer, name="rlmon-writer", daemon=True)
        self._thread.start()

    # -- the training loop's side: never raises, never waits -------------------

    def log(self, data, step=None, commit=None):
        """Records the numbers in `data` at `step` (the step after the previous
        log's when left out). Nested dicts are flattened with `/`; values that are
        not numbers are left out. Returns at once; never raises."""
        try:
            if step is None:
                step = self._step
            self._step = step + 1
            self._last_step = step
            self._metrics.append((step, time.time(), data.copy()))
        except Exception as e:
            _say_once("log", f"log() ignored a call it could not read ({type(e).__name__}: {e})")

    def alert(self, title, text="", level="warn", wait_duration=None):
        """An alert rlmon shows beside its own: `level` info, warn (the default) or
        error/critical. Returns at once; never raises."""
        try:
            level = getattr(level, "value", level)  # wandb's AlertLevel
            severity = LEVELS.get(str(level).lower(), "warn")
            self._alerts.append({"timestamp": round(time.time(), 3), "step": self._last_step,
                                 "title": str(title), "text": str(text), "level": severity})
        except Exception as e:
            _say_once("alert", f"alert() ignored a call it could not read ({type(e).__name__}: {e})")

    def finish(self, exit_code=0, quiet=None):
        """Writes what is left and the finish record; 0 is finished, any other
        status failed. A second call does nothing."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
        if exit_code == 0 and self._exit_code is not None:
            exit_code = self._exit_code
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.dir is None:
            return
        self._drain()
        if exit_code == 0:
            state = "finished"
        elif exit_code == 130:
            state = "cancelled"
        else:
            state = "failed"
        record = {"state": state, "exit_code": int(exit_code), "finished_unix": round(time.time(), 3),
                  "finished_at": _iso(time.time()), "last_step": self._last_step}
        if self._error:
            record["error"] = self._error
        self._write_json(FINISH_FILE, record, report=True)
        for f in self._files.values():
            try:
                f.close()
            except Exception:
                pass
        self._files.clear()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.finish(0)
        else:
            self._note_exception(kind, value)
            self.finish(self._exit_code or 1)
        return False

    @property
    def step(self):
        return self._step

    # -- the writer's side ----------------------------------------------------

    def _note_exception(self, kind, value):
        if issubclass(kind, KeyboardInterrupt):
            self._exit_code, self._error = 130, "interrupted (KeyboardInterrupt)"
        elif issubclass(kind, SystemExit):
            code = value.code if value is not None else 0
            self._exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        else:
            self._exit_code, self._error = 1, f"{kind.__name__}: {value}"

    def _make_folder(self, root):
        os.makedirs(root, exist_ok=True)
        base = os.path.join(root, f"{_safe_name(self.name)}-{_stamp(self.started)}")
        path, n = base, 1
        while True:
            try:
                os.mkdir(path)
                return path
            except FileExistsError:
                n += 1
                path = f"{base}-{n}"

    def _start_record(self, extra):
        record = {"rlmon_client": FORMAT_VERSION, "name": self.name, "project": self.project,
                  "started_unix": round(self.started, 3), "started_at": _iso(self.started),
                  "pid": os.getpid(), "host": socket.gethostname(), "argv": list(sys.argv)}
        for key in ("tags", "notes", "group", "job_type"):
            if extra.get(key) is not None:
                record[key] = _jsonable(extra[key])
        return record

    def _write_json(self, name, value, report=False):
        """Writes a whole document: a temporary file renamed over it."""
        path = os.path.join(self.dir, name)
        tmp = path + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(value, f)
            os.replace(tmp, path)
        except Exception as e:
            if not report:
                raise
            _say_once(("write", name), f"cannot write {path} ({e}); training goes on")

    def _append(self, name, lines):
        f = self._files.get(name)
        try:
            if f is None:
                f = self._files[name] = open(os.path.join(self.dir, name), "a")
            f.write("".join(lines))
            f.flush()
        except Exception as e:
            self._failed_writes += len(lines)
            _say_once(("write", name), f"cannot write {os.path.join(self.dir, name)} ({e}); "
                      "training goes on, the records that cannot be written are dropped")
            if f is not None:
                try:
                    f.close()
                except Exception:
                    pass
                self._files.pop(name, None)

    def _drain(self):
        lines = []
        pop = self._metrics.popleft
        while True:
            try:
                step, t, data = pop()
            except IndexError:
                break
            try:
                record = {"step": int(step), "timestamp": round(t, 3)}
            except Exception:
                _say_once("step", f"a log() step that is not a number ({step!r}) was dropped")
                continue
            try:
                _flatten("", data, record)
                lines.append(json.dumps(record) + "\n")
            except Exception as e:
                _say_once("record", f"a log() record could not be written ({type(e).__name__}: {e})")
        if lines:
            self._append(METRICS_FILE, lines)
        alerts = []
        while True:
            try:
                alerts.append(json.dumps(self._alerts.popleft()) + "\n")
            except IndexError:
                break
        if alerts:
            self._append(ALERTS_FILE, alerts)
        if self._config_dirty:
            self._config_dirty = False
            self._write_json(CONFIG_FILE, _jsonable(dict(self.config)), report=True)

    def _writer(self):
        while not self._stop.wait(FLUSH_PERIOD):
            try:
                self._drain()
            except Exception as e:  # the writer must outlive anything
                _say_once("writer", f"writing the run failed ({type(e).__name__}: {e}); training goes on")


# -- the module-level API, as wandb's -----------------------------------------

run = None
_hooked = False


def init(project=None, name=None, config=None, dir=None, mode=None, **kwargs):
    """Starts a run and makes it the current one (`rlmon.log` goes to it). A run
    still open is finished first. `mode="disabled"` keeps nothing. Other keyword
    arguments wandb takes (entity, tags, notes, group, ...) are accepted; tags,
    notes and group are kept in the start record."""
    global run
    _hook_exit()
    if run is not None and not run.finished:
        run.finish()
    run = Run(project=project, name=name, config=config, dir=dir, disabled=(mode == "disabled"), **kwargs)
    return run


def log(data, step=None, commit=None):
    """`run.log` of the current run; before init(), said once and dropped."""
    current = run
    if current is None:
        _say_once("no-run", "rlmon.log() before rlmon.init(): nothing is kept until init() is called")
        return
    current.log(data, step)


def alert(title, text="", level="warn", wait_duration=None):
    current = run
    if current is None:
        _say_once("no-run-alert", "rlmon.alert() before rlmon.init(): the alert is not kept")
        return
    current.alert(title, text, level)


def finish(exit_code=0, quiet=None):
    current = run
    if current is not None:
        current.finish(exit_code)


def _hook_exit():
    """At interpreter exit the current run is finished: failed when an exception
    ended the script (seen through sys.excepthook)."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        current = run
        if current is not None:
            try:
                current._note_exception(kind, value)
            except Exception:
                pass
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_at_exit)


def _at_exit():
    current = run
    if current is not None and not current.finished:
        current.finish(current._exit_code or 0)
