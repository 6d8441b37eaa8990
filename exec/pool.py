"""The worker pool: a few threads for kernels that release the GIL (BLAS, large arrays).

A job is `(completions, node, iteration, fn, args)`: a worker calls `fn(*args)` and puts
`(node, iteration, result, exception)` on the `completions` queue of the run that sent it;
the run's scheduler thread delivers the result (exec/executor.py).
"""
from __future__ import annotations

import threading
from collections import deque
from queue import SimpleQueue

_URGENT = object()  # a queue token: look at the urgent jobs


class Pool:
    """Worker threads taking jobs in order, urgent jobs first.

    Urgent jobs (a loop's recurrence on a busy machine, exec/recurrence.py) go before the queued ones: a worker
    takes the pending urgent jobs first whenever it wakes, and each urgent job also puts a
    token in the queue so that an idle worker wakes for it.
    """

    def __init__(self, size: int):
        self.jobs: SimpleQueue = SimpleQueue()
        self.urgent: deque = deque()
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"exec-pool-{k}")
                        for k in range(size)]
        for t in self.threads:
            t.start()

    def put(self, job: tuple) -> None:
        self.jobs.put(job)

    def put_urgent(self, job: tuple) -> None:
        self.urgent.append(job)
        self.jobs.put(_URGENT)

    def _work(self) -> None:
        urgent = self.urgent
        while True:
            job = self.jobs.get()
            while urgent:
                try:
                    u = urgent.popleft()
                except IndexError:  # another worker took the last one
                    break
                self._run(*u)
            if job is None:
                return
            if job is not _URGENT:
                self._run(*job)

    @staticmethod
    def _run(done, i, it, f, args) -> None:
        try:
            done.put((i, it, f(*args), None))
        except BaseException as e:  # reported by the scheduler thread
            done.put((i, it, None, e))

    def shutdown(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
