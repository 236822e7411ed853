"""What the llama.cpp client tests share (issue 9): paths, the skip rule, the
model generator and one run of run.mjs."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
MAKE_GGUF = os.path.join(ROOT, "tools", "gguf", "make_gguf.py")
RUN_MJS = os.path.join(HERE, "run.mjs")
SKIP = 77  # the ctests' SKIP_RETURN_CODE
QUANTS = ("f16", "q8_0", "q4_0")
# tiny: a few seconds per model on 2 cores of lavapipe
DIMS = ["--layers", "2", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ff", "128",
        "--vocab", "384", "--context", "256"]
SEED = 7


def skip_unless_setup():
    """The only reason to skip: scripts/setup-llama.sh was not run."""
    if not os.path.isfile(os.path.join(HERE, "node_modules", "node-llama-cpp", "package.json")):
        print("SKIP: tests/clients/llama/node_modules is missing: run scripts/setup-llama.sh "
              "(the CI test script does)")
        sys.exit(SKIP)


def node():
    return os.environ.get("NODE", "node")


def make_model(work, quant, seed=SEED):
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "random-%s-s%d.gguf" % (quant, seed))
    subprocess.run([sys.executable, MAKE_GGUF, "-o", path, "--type", quant, "--seed", str(seed)] + DIMS,
                   check=True)
    return path


class Run:
    def __init__(self, rc, out, err, secs):
        self.rc, self.stdout, self.stderr, self.secs = rc, out, err, secs
        self.result = None
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if lines:
            try:
                self.result = json.loads(lines[-1])
            except ValueError:
                pass

    @property
    def tokens(self):
        return self.result["tokens"] if self.result else None


def run_llama(model, env_extra=None, args=(), env_drop=()):
    """One run of run.mjs on lavapipe's device 0 (GGML_VK_VISIBLE_DEVICES=0)."""
    env = dict(os.environ, GGML_VK_VISIBLE_DEVICES="0")
    for k in env_drop:
        env.pop(k, None)
    env.update(env_extra or {})
    t = time.monotonic()
    p = subprocess.run([node(), RUN_MJS, model] + list(args), env=env, capture_output=True, text=True,
                       errors="replace", timeout=240)
    return Run(p.returncode, p.stdout, p.stderr, time.monotonic() - t)


class Checks:
    def __init__(self):
        self.failed = []

    def __call__(self, ok, what, detail=""):
        print("%s: %s%s" % ("ok" if ok else "FAIL", what, (" -- " + str(detail)) if (detail and not ok) else ""))
        if not ok:
            self.failed.append(what)
        return ok

    def finish(self):
        if self.failed:
            print("%d check(s) failed" % len(self.failed))
            return 1
        print("all checks passed")
        return 0


def tail(s, n=3000):
    return s[-n:]
