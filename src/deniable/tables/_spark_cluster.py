"""A standalone Spark cluster on one machine: a master and several workers, each a
process of its own, started with pyspark's own ``bin/spark-class`` (the pip package
has no ``sbin/start-master.sh``), for tests and benchmarks that must run with more
than one executor (:func:`standalone_session`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .._extras import require

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["standalone_session"]

#: Seconds to wait for the workers to register with the master.
_REGISTER_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _registered(log: Path, workers: int) -> bool:
    text = log.read_text(errors="replace") if log.exists() else ""
    return text.count("Registering worker") >= workers


def _start(
    spark_class: str, commands: list[list[str]], env: dict[str, str], logs: Path, stack: ExitStack
) -> None:
    """Start each command as a process logging to ``logs/<i>.log``; ``stack`` stops them
    (terminate, then kill after 30 s)."""
    processes: list[subprocess.Popen[bytes]] = []

    def stop() -> None:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    stack.callback(stop)
    for i, command in enumerate(commands):
        log = stack.enter_context((logs / f"{i}.log").open("wb"))
        processes.append(subprocess.Popen([spark_class, *command], env=env, stdout=log, stderr=log))


@contextmanager
def standalone_session(
    workers: int = 2, cores: int = 1, memory: str = "2g"
) -> Iterator[SparkSession]:
    """A SparkSession on a fresh standalone cluster of this machine: one master and
    ``workers`` worker processes of ``cores`` cores each, one executor a worker, all
    stopped on exit.

    Parameters
    ----------
    workers : int >= 1, default 2
    cores : int >= 1, default 1
        Cores of each worker (and of its executor).
    memory : str, default "2g"
        Each worker's and executor's memory (Spark's notation).

    Returns
    -------
    context manager of pyspark.sql.SparkSession
        Its master is ``spark://127.0.0.1:<port>``; ``defaultParallelism`` is
        ``workers * cores``.

    Raises
    ------
    ModuleNotFoundError
        Without PySpark (``pip install 'deniable[spark]'``).
    ValueError
        For ``workers`` or ``cores`` below 1.
    TimeoutError
        When the workers have not registered within 60 s (the master's log is named).

    Examples
    --------
    >>> from deniable.tables.spark import standalone_session
    >>> with standalone_session(workers=2) as spark:  # doctest: +SKIP
    ...     spark.sparkContext.defaultParallelism
    2
    """
    require("pyspark", "spark")
    if workers < 1 or cores < 1:
        raise ValueError(f"workers and cores must be >= 1, got {workers} and {cores}")
    import pyspark
    from pyspark.sql import SparkSession

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    logs = Path(tempfile.mkdtemp(prefix="deniable-spark-"))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = [
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(_free_port())],
    ] + [
        ["org.apache.spark.deploy.worker.Worker", url, "--cores", str(cores), "--memory", memory,
         "--webui-port", str(_free_port()), "--work-dir", str(logs / f"worker-{i}")]
        for i in range(workers)
    ]  # fmt: skip
    with ExitStack() as stack:
        _start(spark_class, commands, env, logs, stack)
        deadline = time.monotonic() + _REGISTER_TIMEOUT
        while not _registered(logs / "0.log", workers):
            if time.monotonic() > deadline:
                raise TimeoutError(f"Spark workers did not register; see {logs / '0.log'}")
            time.sleep(0.5)
        session = (
            SparkSession.builder.master(url)
            .appName("deniable-standalone")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.executor.cores", str(cores))
            .config("spark.executor.memory", memory)
            .config("spark.cores.max", str(workers * cores))
            .config("spark.driver.host", "127.0.0.1")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        status = session.sparkContext._jsc.sc().getExecutorMemoryStatus()
        while status.size() <= workers:  # the driver's entry and one a worker's executor
            if time.monotonic() > deadline:
                session.stop()
                raise TimeoutError(f"Spark executors did not start; see {logs}")
            time.sleep(0.5)
            status = session.sparkContext._jsc.sc().getExecutorMemoryStatus()
        try:
            yield session
        finally:
            session.stop()
