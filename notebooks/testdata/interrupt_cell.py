"""Interrupts a running GoNB cell through the real kernel protocol.

Starts the "convexnn" kernel, declares a problem, runs a cell with a long
Iterate, sends Jupyter's interrupt once the live progress display shows up,
then runs a new cell that resumes the run. Prints one JSON object:
{"interrupted_output": ..., "resumed_at": N, "status": ...}.
Usage: /usr/bin/python3 interrupt_cell.py WORKDIR
"""
import json
import os
import re
import sys
import time

from jupyter_client.manager import start_new_kernel

workdir = sys.argv[1]
decl = '''import (
	"fmt"
	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
)

func problem() *cvx.Problem {
	X, y, err := data.Disk2D(400, 3)
	cvx.Check(err)
	return cvx.Classify(X, y).Beta(1e-6).Bias().SampleNeurons(3000, 1)
}
'''
long_cell = '%%\nrun := cvx.Start("interrupted", problem(), cvx.FISTA{Tol: 1e-300})\ncvx.Check(run.Iterate(100000000))\n'
resume_cell = '%%\nrun := cvx.Resume("interrupted", problem(), cvx.FISTA{Tol: 1e-300})\ncvx.Check(run.Err())\nfmt.Printf("RESUMED_AT %d HISTORY %d\\n", run.ResumedAt(), len(run.History()))\n'


def execute(kc, code, interrupt_after_progress=None, timeout=300):
    msg_id = kc.execute(code)
    outputs = []
    deadline = time.time() + timeout
    interrupted = False
    while True:
        msg = kc.get_iopub_msg(timeout=max(1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = msg["msg_type"], msg["content"]
        if t == "stream":
            outputs.append(c["text"])
        elif t in ("display_data", "update_display_data"):
            html = c["data"].get("text/html", "")
            outputs.append(html[-400:])
            if interrupt_after_progress and not interrupted and "convexnn-status" in html and "iteration" in html:
                time.sleep(interrupt_after_progress)
                km.interrupt_kernel()
                interrupted = True
        elif t == "error":
            outputs.append(c["ename"] + ": " + c["evalue"])
        elif t == "status" and c["execution_state"] == "idle":
            break
    return "".join(outputs), interrupted


os.chdir(workdir)
km, kc = start_new_kernel(kernel_name="convexnn", cwd=workdir)
try:
    out0, _ = execute(kc, decl)
    out1, interrupted = execute(kc, long_cell, interrupt_after_progress=2.0)
    out2, _ = execute(kc, resume_cell)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=False)  # a shutdown request: GoNB then stops its gopls (a kill left it running)
m = re.search(r"RESUMED_AT (\d+) HISTORY (\d+)", out2)
saved = re.findall(r"interrupted after iteration (\d+)", out1)
print(json.dumps({
    "declaration_output": out0[-2000:],
    "interrupt_sent": interrupted,
    "interrupted_output": out1[-3000:],
    "saved_iteration": int(saved[-1]) if saved else -1,
    "resume_output": out2[-2000:],
    "resumed_at": int(m.group(1)) if m else -1,
    "history": int(m.group(2)) if m else -1,
}))
