"""The sandbox HTTP API through a real server on 127.0.0.1: SandboxFusion compatibility and our extensions."""
from __future__ import annotations

import base64
import json
import shutil
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "3", "--token", TOKEN, "--max-output-bytes", "65536",
                        "--max-request-mb", "2") as base:
        yield base


def post(url, path, body, token=TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(url + path, json=body, headers=headers, timeout=60)


def run(url, code, language="python", **fields):
    reply = post(url, "/run_code", {"code": code, "language": language, **fields})
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_verl_style_request_gets_sandboxfusion_shaped_answer(url):
    # Exactly what verl's call_sandbox_api sends (json.dumps body, no extra headers but the token
    # in the URL, since verl cannot add one).
    payload = json.dumps({"compile_timeout": 10, "run_timeout": 10, "code": "print(int(input()) * 2)",
                          "stdin": "21\n", "memory_limit_MB": 1024, "language": "python",
                          "files": {}, "fetch_files": []})
    reply = requests.post(f"{url}/run_code?token={TOKEN}", data=payload,
                          headers={"Content-Type": "application/json", "Accept": "application/json"}, timeout=30)
    assert reply.status_code == 200
    body = reply.json()
    assert body["status"] == "Success"
    assert body["compile_result"] is None
    run_result = body["run_result"]
    assert run_result["status"] == "Finished"
    assert run_result["return_code"] == 0
    assert run_result["stdout"] == "42\n"
    assert run_result["stderr"] == ""
    assert run_result["execution_time"] > 0
    assert run_result["cpu_time"] >= 0
    assert body["files"] == {}


def test_runtime_error_is_failed_with_traceback(url):
    body = run(url, "def f():\n    raise ValueError('boom')\nf()\n")
    assert body["status"] == "Failed"
    assert body["run_result"]["status"] == "Finished"
    assert body["run_result"]["return_code"] == 1
    assert body["run_result"]["verdict"] == "RuntimeError"
    stderr = body["run_result"]["stderr"]
    assert "ValueError: boom" in stderr and 'File "/tmp/work/solution.py", line 2' in stderr
    assert "worker.py" not in stderr


def test_sys_exit_code_and_syntax_error(url):
    assert run(url, "import sys; print('x'); sys.exit(3)")["run_result"]["return_code"] == 3
    body = run(url, "def (:\n")
    assert body["run_result"]["return_code"] == 1 and "SyntaxError" in body["run_result"]["stderr"]


def test_threads_work_under_a_memory_limit(url):
    code = textwrap.dedent("""
        import threading
        out = []
        threads = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(32)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(sum(out))
    """)
    body = run(url, code, memory_limit_MB=256)
    assert body["status"] == "Success", body
    assert body["run_result"]["stdout"] == f"{sum(i * i for i in range(32))}\n"


def test_exit_waits_for_non_daemon_threads_as_python_does(url):
    code = textwrap.dedent("""
        import sys, threading, time
        def late():
            time.sleep(0.2)
            print("late", flush=True)
        threading.Thread(target=late).start()
        print("main done", flush=True)
        sys.exit(3)
    """)
    body = run(url, code)
    assert body["run_result"]["stdout"] == "main done\nlate\n"
    assert body["run_result"]["return_code"] == 3


def test_warm_path_has_what_site_gives_a_program(url):
    code = textwrap.dedent("""
        import os, site, sys
        print(all(p in sys.path for p in site.getsitepackages() if os.path.isdir(p)))
        print(callable(help), callable(copyright), callable(exit))
        quit(4)
    """)
    body = run(url, code)
    assert body["run_result"]["stdout"] == "True\nTrue True True\n", body
    assert body["run_result"]["return_code"] == 4


def test_no_state_leaks_between_warm_runs(url):
    leak = "import json, sys\njson.LEAK = 1\nsys.modules['leaked'] = json\nopen('/tmp/left','w').write('x')\nprint('ok')"
    check = ("import json, sys, os\nprint(hasattr(json, 'LEAK'), 'leaked' in sys.modules, "
             "os.path.exists('/tmp/left'), os.listdir('.'))")
    assert run(url, leak)["run_result"]["stdout"] == "ok\n"
    for _ in range(6):  # several runs, so every worker has had its turn
        assert run(url, check)["run_result"]["stdout"] == "False False False ['solution.py']\n"


def test_random_state_differs_between_runs(url):
    draws = {run(url, "import random; print(random.random())")["run_result"]["stdout"] for _ in range(4)}
    assert len(draws) == 4


def test_bash_and_files_round_trip(url):
    files = {"data/in.txt": base64.b64encode(b"hello\n").decode()}
    body = run(url, "cat data/in.txt | tr a-z A-Z > out.txt; wc -c < out.txt", language="bash",
               files=files, fetch_files=["out.txt", "missing.txt"])
    assert body["status"] == "Success"
    assert body["run_result"]["stdout"].strip() == "6"
    assert base64.b64decode(body["files"]["out.txt"]) == b"HELLO\n"
    assert "missing.txt" in body["message"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")
def test_cpp_compile_and_run(url):
    code = "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}"
    body = run(url, code, language="cpp", stdin="40 2\n")
    assert body["status"] == "Success", body
    assert body["compile_result"]["status"] == "Finished" and body["compile_result"]["return_code"] == 0
    assert body["run_result"]["stdout"] == "42\n"


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")
def test_cpp_compile_error(url):
    body = run(url, "int main( { return 0; }", language="cpp")
    assert body["status"] == "Failed"
    assert body["run_result"] is None
    assert body["compile_result"]["verdict"] == "CompileError"
    assert body["compile_result"]["return_code"] != 0 and "error" in body["compile_result"]["stderr"]


ECHO_SUM = {
    "python": ("python3", "a, b = map(int, input().split())\nprint(a + b)"),
    "bash": ("bash", "read a b; echo $((a + b))"),
    "cpp": ("g++", "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}"),
    "c": ("gcc", "#include <stdio.h>\nint main(){long a,b;scanf(\"%ld %ld\",&a,&b);printf(\"%ld\\n\",a+b);}"),
    "nodejs": ("node", "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\n"
                       "console.log(a + b);"),
    "perl": ("perl", "my ($a, $b) = split ' ', <STDIN>; print $a + $b, \"\\n\";"),
}


@pytest.mark.parametrize("language", sorted(ECHO_SUM))
def test_every_installed_language_runs_under_a_memory_limit(url, language):
    tool, code = ECHO_SUM[language]
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (the {language} toolchain)")
    body = run(url, code, language=language, stdin="40 2\n", memory_limit_MB=256)
    assert body["status"] == "Success", body
    assert body["run_result"]["stdout"] == "42\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Debian package nodejs)")
def test_nodejs_heap_is_bounded_by_the_memory_limit(url):
    body = run(url, "const a = []; while (true) a.push(new Array(1e6).fill(1));", language="nodejs",
               memory_limit_MB=128, run_timeout=20)
    assert body["run_result"]["verdict"] == "MemoryLimitExceeded", body["run_result"]["stderr"][-500:]


def test_batch_runs_every_case_in_order(url):
    body = {"code": "print(sum(map(int, input().split())))", "language": "python", "run_timeout": 5,
            "cases": [{"stdin": f"{i} {i}\n"} for i in range(12)] + [{"stdin": ""}]}
    reply = post(url, "/v1/run_batch", body)
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["stdout"] for r in results[:12]] == [f"{2 * i}\n" for i in range(12)]
    assert results[12]["verdict"] == "RuntimeError" and "EOFError" in results[12]["stderr"]
    assert reply.json()["status"] == "Failed"


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")
def test_batch_compiles_once(url):
    code = "#include <cstdio>\nint main(){int x;scanf(\"%d\",&x);printf(\"%d\\n\",x*x);}"
    before = requests.get(url + "/v1/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    reply = post(url, "/v1/run_batch", {"code": code, "language": "cpp", "cases": [{"stdin": str(i)} for i in range(5)]})
    after = requests.get(url + "/v1/status", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert [r["stdout"] for r in reply.json()["results"]] == [f"{i * i}\n" for i in range(5)]
    runs = sum(after["runs_by_verdict"].values()) - sum(before["runs_by_verdict"].values())
    assert runs == 5  # five runs counted; the compile step is not a run of its own
    assert reply.json()["compile_result"]["return_code"] == 0


def test_token_is_required(url):
    assert post(url, "/run_code", {"code": "print(1)"}, token=None).status_code == 401
    assert post(url, "/run_code", {"code": "print(1)"}, token="wrong").status_code == 401
    assert requests.get(url + "/v1/status", timeout=10).status_code == 401
    assert requests.get(url + "/v1/ping", timeout=10).text == "pong"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"language": "python"}, "code"),
        ({"code": "print(1)", "run_timeout": "soon"}, "run_timeout"),
        ({"code": "print(1)", "run_timeout": -1}, "run_timeout"),
        ({"code": "print(1)", "memory_limit_MB": 0}, "memory_limit_MB"),
        ({"code": "print(1)", "files": {"/etc/passwd": "eA=="}}, "files"),
        ({"code": "print(1)", "files": {"a/../../x": "eA=="}}, "files"),
        ({"code": "print(1)", "files": {"ok.txt": "not base64!"}}, "files"),
        ({"code": "print(1)", "fetch_files": ["../../etc/shadow"]}, "fetch_files"),
        ({"code": "print(1)", "fetch_files": ["/etc/shadow"]}, "fetch_files"),
        ({"code": "print(1)", "language": "cobol"}, "language"),
        ({"code": "print(1)", "run_timeout": 10_000}, "run_timeout"),
    ],
)
def test_bad_requests_name_the_field(url, body, field):
    reply = post(url, "/run_code", body)
    assert 400 <= reply.status_code < 500, reply.text
    assert field in reply.json()["detail"]


def test_oversized_request_is_413_declared_or_streamed(url):
    big = {"code": "print(1)", "stdin": "x" * (3 << 20)}
    reply = post(url, "/run_code", big)
    assert reply.status_code == 413 and "2 MiB" in reply.json()["detail"]

    def chunks():  # no Content-Length: the limit applies while the body streams in
        yield b'{"code": "print(1)", "stdin": "'
        for _ in range(3):
            yield b"x" * (1 << 20)
        yield b'"}'

    reply = requests.post(url + "/run_code", data=chunks(), timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert reply.status_code == 413
    assert run(url, "print('fine')", stdin="y" * (1 << 20))["run_result"]["stdout"] == "fine\n"


def test_status_reports_layers_queue_and_verdicts(url):
    run(url, "print(1)")
    run(url, "raise SystemExit(2)")
    status = requests.get(url + "/v1/status", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()
    assert status["missing_layers"] == []
    assert all(status["isolation"].values()) and "network_namespace" in status["isolation"]
    assert status["queue_depth"] == 0
    assert status["runs_by_verdict"]["OK"] >= 1 and status["runs_by_verdict"]["RuntimeError"] >= 1
    assert "python" in status["languages"]


def test_concurrent_requests_all_succeed(url):
    def one(i):
        return run(url, f"print({i} * 3)")["run_result"]["stdout"]

    with ThreadPoolExecutor(16) as pool:
        outs = list(pool.map(one, range(64)))
    assert outs == [f"{i * 3}\n" for i in range(64)]
