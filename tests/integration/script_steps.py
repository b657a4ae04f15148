"""What the Python integration scripts share (console/console_browser_test.py,
loadgen/report_browser_test.py and the modules they import): failing the test, reading a log
that may not exist yet, waiting for a condition while a service runs, running a command that
must succeed. Import it after putting this folder on sys.path."""
import subprocess
import sys
import time


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def read(path):
    """The file's text, or "" while it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_for(what, condition, timeout_s, process=None, interval_s=0.2):
    """condition()'s first true value, polled every interval_s; fails the test after timeout_s,
    or as soon as `process` (the service, when given) has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            fail(f"the service exited ({process.returncode}) while waiting for {what}")
        time.sleep(interval_s)
    fail(f"timed out after {timeout_s} s waiting for {what}")


def run(command, **kwargs):
    """Runs `command` (up to 5 min); fails the test when it exits non-zero."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result
