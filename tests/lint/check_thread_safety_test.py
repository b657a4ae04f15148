#!/usr/bin/env python3
"""Self-test of check_thread_safety.py on a tiny tree with the project's own Mutex: it passes
locked access and fails each kind of unlocked one (a guarded member read without its lock, a
REQUIRES function called without it, a wait loop outside the lock's scope)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", ".."))

GOOD = """
#include "detectors/base/mutex.h"
namespace {
class Queue {
 public:
  void put(int v) FRAUD_EXCLUDES(mu_) {
    fraud::base::MutexLock lock(mu_);
    value_ = v;
    putLocked();
    cv_.notify_all();
  }
  int take() FRAUD_EXCLUDES(mu_) {
    fraud::base::MutexLock lock(mu_);
    while (value_ == 0) lock.wait(cv_);
    lock.unlock();
    lock.lock();
    return value_;
  }
 private:
  void putLocked() FRAUD_REQUIRES(mu_) { ++puts_; }
  fraud::base::Mutex mu_;
  std::condition_variable cv_;
  int value_ FRAUD_GUARDED_BY(mu_) = 0;
  int puts_ FRAUD_GUARDED_BY(mu_) = 0;
};
}  // namespace
int use() { Queue q; q.put(1); return q.take(); }
"""

BAD = {
    "unlocked read": GOOD.replace("int take() FRAUD_EXCLUDES(mu_) {",
                                  "int peek() { return value_; }\n  int take() FRAUD_EXCLUDES(mu_) {"),
    "requires not held": GOOD.replace("    fraud::base::MutexLock lock(mu_);\n    value_ = v;\n"
                                      "    putLocked();",
                                      "    { fraud::base::MutexLock lock(mu_); value_ = v; }\n"
                                      "    putLocked();"),
    "read after unlock": GOOD.replace("    lock.lock();\n    return value_;",
                                      "    return value_;"),
}


def run(root, source):
    path = os.path.join(root, "service", "queue.cc")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    build = os.path.join(root, "build")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump([{"directory": build, "file": path,
                    "command": f"/usr/bin/c++ -I{root} -std=c++20 -Wall -Werror -o x.o -c {path}"}],
                  f)
    result = subprocess.run([sys.executable, os.path.join(HERE, "check_thread_safety.py"),
                             "--root", root, "--build-dir", build, "--jobs", "1"],
                            capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        shutil.copytree(os.path.join(REPO, "detectors", "base"),
                        os.path.join(root, "detectors", "base"))
        status, out = run(root, GOOD)
        if status != 0:
            failures.append(f"locked access reported:\n{out}")
        for name, source in BAD.items():
            status, out = run(root, source)
            if status != 1 or "-Wthread-safety" not in out:
                failures.append(f"{name}: not reported (status {status}):\n{out}")
    for failure in failures:
        print(f"check_thread_safety_test: {failure}")
    print(f"check_thread_safety_test: {1 + len(BAD)} cases, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
