"""One running kueue-sim process, fed scenarios (contract-shaped dicts) as JSON Lines.

`run_sim` streams scenarios through one process and returns one `{"name", "outcome",
"error"}` dict per scenario. A scenario that crashes the process is reported as an error and
the process is restarted for the rest, so one bad scenario never sinks a batch.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from harness.logtail import last_lines
from harness.sim.build import build_sim


class SimProcess:
    """One running kueue-sim: send a scenario, read its answer; restarts after a crash."""

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary or build_sim()
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[str]:
        # stderr goes to a file: a pipe nobody reads could fill up and stall the process.
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="kueue-sim-")  # noqa: SIM115 (closed in close())
        self._proc = subprocess.Popen(
            [str(self.binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        return self._proc

    def run_many(self, scenarios: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Answers in order, pipelined: a writer thread feeds scenarios while answers are read.

        A process that dies mid-batch fails the scenario it was on; the rest go to a new one.
        """
        answers: list[dict[str, Any]] = []
        todo = list(scenarios)
        while todo:
            proc = self._proc if self._proc and self._proc.poll() is None else self._start()
            assert proc.stdin is not None and proc.stdout is not None
            writer = threading.Thread(target=_feed, args=(proc.stdin, todo), daemon=True)
            writer.start()
            done = 0
            for _ in todo:
                line = proc.stdout.readline()
                if not line:
                    break
                answers.append(json.loads(line))
                done += 1
            if done == len(todo):
                writer.join()
                break
            crash = self._crash_report()  # closes the pipes, which ends the writer
            writer.join()
            answers.append({"name": todo[done].get("name"), "outcome": None, "error": crash})
            todo = todo[done + 1 :]
        return answers

    def run(self, scenario: Mapping[str, Any]) -> dict[str, Any]:
        """Answer for one scenario; a process that dies on it yields an error answer."""
        proc = self._proc if self._proc and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        name = scenario.get("name")
        try:
            proc.stdin.write(json.dumps(scenario) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            return {"name": name, "outcome": None, "error": self._crash_report()}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _crash_report(self) -> str:
        proc, err = self._proc, self._stderr
        code = proc.wait(timeout=10) if proc else None
        tail = ""
        if err is not None:
            err.seek(0)
            tail = last_lines(err.read().strip(), 5).replace("\n", " | ")
        self.close()
        return f"kueue-sim exited with code {code}: {tail or 'no output on stderr'}"

    def close(self) -> None:
        """Stop the process (idempotent): closing stdin ends it; kill if it lingers."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin:
                with contextlib.suppress(OSError, ValueError):  # a dead process: broken pipe
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _feed(stdin: IO[str], scenarios: Sequence[Mapping[str, Any]]) -> None:
    try:
        for scenario in scenarios:
            stdin.write(json.dumps(scenario) + "\n")
        stdin.flush()
    except (BrokenPipeError, OSError, ValueError):  # the process died; the reader reports it
        return


def run_sim(
    scenarios: Iterable[Mapping[str, Any]], binary: Path | None = None
) -> list[dict[str, Any]]:
    """Run contract-shaped scenario dicts through one kueue-sim process, in order."""
    with SimProcess(binary) as sim:
        return sim.run_many(list(scenarios))
