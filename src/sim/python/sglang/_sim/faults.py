"""Fault modes of the simulated server (mixed into Sim)."""

import os
import signal
import subprocess
import sys
import time
from sglang._sim.common import cleanup


class FaultsMixin:
    """The fault modes of Sim (see sim-fault): hangs, stalls, crashes of the server and of its scheduler children."""

    def silent_round(self, mode, dt):
        """A hung or stalled scheduler: requests stay running and queued, no stat lines. A hang prints the
        watchdog's lines once (a soft watchdog: the process stays)."""
        if self.fault_started is None:
            self.fault_started = time.time()
            if mode == "hang":
                t = self.rank_tag(0)
                if self.fmt == "2026":
                    # srt/utils/watchdog.py: py-spy first, then the watchdog line; soft=True only dumps diagnostics,
                    # the process stays
                    self.write(self.pyspy_lines(t) + self.line("Scheduler watchdog timeout (self.watchdog_timeout=%s, self.soft=True)"
                                                               % ("%g" % self.args.watchdog_timeout), t))
                else:
                    self.log("Pyspy failed to dump PID %d. Error: Permission denied" % os.getpid(), t)
                    self.log("Watchdog timeout (self.watchdog_timeout=%s)" % int(self.args.watchdog_timeout), t)
            else:
                # the last stat line before the silence shows the queue building up
                for d in range(self.dp):
                    self.last_queue[d] = 12
                    self.last_tps[d] = 0.0
                    self.write(self.decode_line(d, max(1, self.running[d]), self.last_tokens[d] or 1000,
                                                (self.last_tokens[d] or 1000) / float(self.max_total_num_tokens),
                                                0.0, max(1.0, self.last_accept[d]), 12))
        for d in range(self.dp):
            self.last_queue[d] = 12
            self.last_tps[d] = 0.0

    def pyspy_lines(self, t):
        """The 2026 py-spy diagnostics of a stuck scheduler (its own pid), as printed when py-spy cannot attach."""
        pid = self.children[0].pid if self.children else os.getpid()
        return (self.line("Pyspy failed (py-spy dump --native --pid %d). Error: Permission denied (os error 13)" % pid, t)
                + self.line("All pyspy dump attempts failed for PID %d." % pid, t))

    def hard_watchdog(self):
        """The 2026 hard scheduler watchdog (srt/utils/watchdog.py, soft=False): py-spy, then its line, then it waits
        for CUDA core dumps (delayS, 5 s by default) before the SIGQUIT handler kills the server (v0.5.18 wording,
        sglang#36081); the 2025 form in "2025"/"old"."""
        t = self.rank_tag(0)
        if self.fmt == "2026":
            self.write(self.pyspy_lines(t) + self.line("Scheduler watchdog timeout (self.watchdog_timeout=%s, self.soft=False)"
                                                       % ("%g" % self.args.watchdog_timeout), t))
        else:
            self.log("Watchdog timeout (self.watchdog_timeout=%s)" % int(self.args.watchdog_timeout), t)
            self.log("Pyspy failed to dump PID %d. Error: Permission denied" % os.getpid(), t)
        self.stop.wait(float(self.fault.get("delayS", 5) or 0))
        self.sigquit_exit()

    def subprocess_crash(self):
        """The 2026 subprocess watchdog (sglang PR #18582): a scheduler child dies (SIGKILL: exit code -9, as the
        OOM killer does, or exitCode=N), the watchdog names it and SIGQUITs the server."""
        code = int(self.fault.get("exitCode", -9))
        child = self.children[0] if self.children else None
        pid = child.pid if child else os.getpid() + 1
        if child:
            try:
                child.send_signal(-code if code < 0 else signal.SIGKILL)
                child.wait(2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.log("Subprocess scheduler_0 (pid=%d) crashed with exit code %d. Triggering SIGQUIT for cleanup..." % (pid, code))
        self.sigquit_exit()

    def sigquit_exit(self):
        with self.out_lock:
            sys.stdout.flush()
            if self.fmt == "2026":
                sys.stderr.write("[%s] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
                                 "[%s] No live scheduler processes found; skipping py-spy and CUDA coredump.\n" % (self.ts(), self.ts()))
            else:
                sys.stderr.write("[%s] Received sigquit from a child process. It usually means the child failed.\n" % self.ts())
            sys.stderr.flush()
        self.kill_children()
        cleanup(self.args.port)
        os._exit(1)

    def start_children(self):
        """One child per GPU named as SGLang's scheduler processes are ("sglang::scheduler_TP0", setproctitle),
        each exiting when the server goes; the fake nvidia-smi lists them as the GPUs' compute processes."""
        if os.environ.get("SGLANG_SIM_SCHEDULER_PROCS", "1") == "0":
            return
        code = "import os,sys,time\nwhile os.getppid() == %d: time.sleep(0.5)\n" % os.getpid()
        for i, _g in enumerate(self.gpus):
            d, t = (i // self.tp, i % self.tp) if not self.args.enable_dp_attention else (None, i)
            name = "sglang::scheduler" + ("_DP%d" % d if self.dp > 1 and d is not None else "") + "_TP%d" % t
            try:
                self.children.append(subprocess.Popen([name, "-c", code], executable=sys.executable,
                                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                      stderr=subprocess.DEVNULL, close_fds=True))
            except OSError:
                break

    def kill_children(self):
        for c in self.children:
            try:
                c.kill()
            except OSError:
                pass

    def crash(self, kind="oom"):
        """Die as SGLang does: a scheduler exception (or an NCCL timeout), "Received sigquit ...", exit 1."""
        if kind == "nccl":
            self.write_crash(None, nccl=True)
        if kind == "crash":
            self.write_crash("ValueError: Unexpected token id -1 in the batch (simulated scheduler crash)")
        self.write_crash("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                         "of %.2f GiB of which 1.12 GiB is free." % self.gpu_gb)

    def write_crash(self, exc_line, nccl=False):
        """A scheduler exception (or an NCCL collective timeout) as SGLang prints it, then exit 1."""
        with self.out_lock:
            sys.stdout.flush()
            if nccl:
                sys.stderr.write(
                    "[rank0]:[E%s ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
                    "WorkNCCL(SeqNum=4127, OpType=ALLREDUCE, NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran for "
                    "600043 milliseconds before timing out.\n"
                    "terminate called after throwing an instance of 'c10::DistBackendError'\n"
                    "[%s] Received sigquit from a child process. It usually means the child failed.\n"
                    % (time.strftime("%m%d %H:%M:%S"), self.ts()))
                if self.fmt == "2026":
                    # torch's teardown warning (sglang#36081): printed while the server stops, not a failure
                    sys.stderr.write("[rank0]:[W%s ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not "
                                     "called before program exit, which can leak resources.\n"
                                     % time.strftime("%-m%d %H:%M:%S.000000000"))
            else:
                # the scheduler's header carries its rank tags (" TP0", " DP0 TP0", " PP0", ...), as real ones do
                sys.stderr.write(
                    "[%s%s] Scheduler hit an exception: Traceback (most recent call last):\n"
                    "  File \"/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py\", line 2817, in run_scheduler_process\n"
                    "    scheduler.event_loop_overlap()\n"
                    "  File \"/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py\", line 1012, in event_loop_overlap\n"
                    "    batch_result = self.run_batch(batch)\n"
                    "%s\n\n"
                    "[%s] Received sigquit from a child process. It usually means the child failed.\n"
                    % (self.ts(), self.rank_tag(0), exc_line, self.ts()))
            sys.stderr.flush()
        self.kill_children()
        cleanup(self.args.port)
        os._exit(1)
