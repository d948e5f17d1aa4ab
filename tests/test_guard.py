"""The slow-marker guard (tests/fixtures/guard.py), run on deliberately mislabelled tests in
a separate pytest process: an unmarked test that loads a model, starts a server, a Ray
cluster or a browser fails; the same test marked slow passes; ordinary tests are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from testdeps import installed

TESTS = Path(__file__).resolve().parent
CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
pytest_plugins = ("fixtures.guard",)
"""
GUARD_SAYS = "not marked slow (mark it @pytest.mark.slow)"


def _run(
    pytester: pytest.Pytester, body: str, *, slow: bool, prelude: str = "", args: str = ""
) -> pytest.RunResult:
    mark = "@pytest.mark.slow\n" if slow else ""
    header = f"import subprocess, sys\nimport pytest\n\n{prelude}\n"
    pytester.makeini("[pytest]\nmarkers =\n    slow: a real model or server\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_mislabelled=f"{header}{mark}def test_it({args}):\n{body}\n")
    # A separate process: the guard patches library entry points process-wide.
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")


def _assert_caught(result: pytest.RunResult, what: str) -> None:
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{what}*{GUARD_SAYS}*"])


def _indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.strip().splitlines())


SERVER = _indent("""
proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--help"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
assert proc.wait(timeout=120) is not None
""")


def test_unmarked_server_start_fails(pytester: pytest.Pytester) -> None:
    _assert_caught(_run(pytester, SERVER, slow=False), "a child process runs llama_cpp.server")


def test_unmarked_server_start_in_a_child_fails(pytester: pytest.Pytester) -> None:
    """The server is started by a Python child (as the nabench CLI does): still caught."""
    child = "import subprocess, sys; subprocess.run([sys.executable, '-m', 'olah.server', '-h'])"
    body = _indent(f"subprocess.run([sys.executable, '-c', {child!r}], timeout=120)")
    _assert_caught(_run(pytester, body, slow=False), "in a child: pid * olah.server")


def test_unmarked_test_leaving_a_child_running_fails(pytester: pytest.Pytester) -> None:
    body = _indent("""
proc = subprocess.Popen(["sleep", "60"])
import atexit; atexit.register(proc.kill)  # the inner pytest process kills it on exit
""")
    _assert_caught(_run(pytester, body, slow=False), "a child process still runs*sleep 60")


def test_a_fixture_starting_a_server_for_an_unmarked_test_fails(pytester: pytest.Pytester) -> None:
    """Caught at setup, where a shared (session or module) fixture starts its server."""
    fixture = (
        '@pytest.fixture(scope="session")\n'
        "def server():\n"
        '    subprocess.run([sys.executable, "-m", "vllm.entrypoints.openai.api_server"])\n'
    )
    result = _run(pytester, "    pass", slow=False, prelude=fixture, args="server")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*vllm.entrypoints.openai.api_server*{GUARD_SAYS}*"])


def test_the_suite_runs_under_the_guard(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.has_plugin("fixtures.guard")


def test_ordinary_subprocesses_are_allowed(pytester: pytest.Pytester) -> None:
    body = _indent("assert subprocess.run(['true']).returncode == 0")
    body += _indent("assert subprocess.run([sys.executable, '-c', 'print(1)']).returncode == 0")
    _run(pytester, body, slow=False).assert_outcomes(passed=1)


# vLLM and transformers take 10-20 s to import: those two cases run in the slow lane.
@pytest.mark.parametrize(
    ("module", "code", "what"),
    [
        pytest.param(
            "llama_cpp",
            "import llama_cpp\nllama_cpp.Llama(model_path='m.gguf')",
            "llama_cpp.Llama",
            id="llama_cpp",
        ),
        pytest.param("ray", "import ray\nray.init(num_cpus=1)", "ray.init", id="ray"),
        pytest.param(
            "playwright",
            "from playwright.sync_api import sync_playwright\n"
            "with sync_playwright() as p:\n    p.chromium.launch()",
            "playwright launches a browser",
            id="playwright",
        ),
        pytest.param(
            "transformers",
            "from transformers import AutoModelForCausalLM\n"
            "AutoModelForCausalLM.from_pretrained('m')",
            "transformers from_pretrained",
            id="transformers",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "vllm", "import vllm\nvllm.LLM(model='m')", "vllm", id="vllm", marks=pytest.mark.slow
        ),
    ],
)
def test_unmarked_model_cluster_or_browser_fails(
    pytester: pytest.Pytester, module: str, code: str, what: str
) -> None:
    """The guard stops the call before it runs (so these cost an import, not a model)."""
    installed(module)
    _assert_caught(_run(pytester, _indent(code), slow=False), what)


def test_catching_exception_does_not_hide_a_model_load(pytester: pytest.Pytester) -> None:
    installed("llama_cpp")
    code = "import llama_cpp\ntry:\n    llama_cpp.Llama(model_path='m.gguf')\n"
    code += "except Exception:\n    pass"
    _assert_caught(_run(pytester, _indent(code), slow=False), "llama_cpp.Llama")


def test_unmarked_model_load_in_a_child_fails(pytester: pytest.Pytester) -> None:
    installed("llama_cpp")
    child = "import llama_cpp; llama_cpp.Llama(model_path='m.gguf')"
    body = _indent(f"subprocess.run([sys.executable, '-c', {child!r}], timeout=300)")
    _assert_caught(_run(pytester, body, slow=False), "in a child: pid * llama_cpp.Llama")


@pytest.mark.slow
def test_the_same_server_start_marked_slow_passes(pytester: pytest.Pytester) -> None:
    installed("llama_cpp")
    _run(pytester, SERVER, slow=True).assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_same_model_load_marked_slow_passes(pytester: pytest.Pytester) -> None:
    """A real model load, in the test and in a child, is allowed once marked slow."""
    installed("llama_cpp")
    from nabench.llm._models import smollm2_gguf_path

    gguf = str(smollm2_gguf_path())
    load = f"import llama_cpp; llama_cpp.Llama(model_path={gguf!r}, n_ctx=256, verbose=False)"
    body = _indent(load.replace("; ", "\n"))
    body += _indent(f"subprocess.run([sys.executable, '-c', {load!r}], check=True, timeout=300)")
    _run(pytester, body, slow=True).assert_outcomes(passed=1)
