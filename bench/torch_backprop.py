#!/usr/bin/python3
"""PyTorch back-propagation peer of `convexnn bench torch`.

Usage: /usr/bin/python3 bench/torch_backprop.py DIR

DIR holds header.json and the raw little-endian float64 row-major files it
names: the training matrix X (n x d, without a bias column), its labels
y in {-1, +1}, and the validation set. For every learning rate in the header
the script trains, from the same seeded initialization and with the same
seeded minibatch order, the paper's two-layer ReLU network

    f(x) = sum_j (x . w_j + b_j)_+ alpha_j        (j = 1 ... width),

with hidden biases b_j when header["bias"] (convexnn's Problem.Bias appends a
column of ones to X, so its u_j carries the bias and is regularized with it),
on convexnn's objective (cvx.Backprop with the squared loss, eq.
nonconvex_general)

    1/2 sum_k (f(x_k) - y_k)^2 + beta/2 (||W||^2 + ||b||^2 + ||alpha||^2)

by Adam (beta1 0.9, beta2 0.999, eps 1e-8) on minibatches B of the shuffled
training set, each step on the unbiased estimate

    (n/|B|) 1/2 sum_{k in B} (f(x_k) - y_k)^2 + beta/2 (||W||^2 + ||b||^2 + ||alpha||^2),

as convexnn's solvers.Backprop does. Initialization as convexnn's: W entries
N(0, 2/d), b = 0, alpha_j ~ N(0, 1/width).

The validation accuracy (f(x) >= 0 predicts +1) is evaluated evals_per_epoch
times per epoch; the clock runs over the model's creation and the training
steps only (the evaluations, and the per-epoch training objective, are
excluded, as in convexnn reproduce). Each learning rate stops after
header["epochs"] epochs, header["seconds"] seconds of training, or when the
loss stops being finite. The script records the first time the validation
accuracy reaches header["target_correct"] correct images, the best accuracy
and the time it was first reached, and the final accuracy, and writes
DIR/result.json. Progress goes to stderr.
"""

import json
import math
import os
import sys
import time

import numpy as np
import torch


def load(dirpath, name, rows, cols):
    a = np.fromfile(os.path.join(dirpath, name), dtype="<f8")
    if a.size != rows * cols:
        raise ValueError("%s: %d values, want %d x %d" % (name, a.size, rows, cols))
    return a.reshape(rows, cols) if cols > 1 else a


def train(h, x, y, xv, yv, lr, dtype):
    """Trains one learning rate and returns its record."""
    n, d = x.shape
    m, beta, batch = h["width"], h["beta"], h["batch"]
    target = h["target_correct"]
    nval = yv.shape[0]
    per_epoch = (n + batch - 1) // batch
    every = max(1, per_epoch // max(1, h["evals_per_epoch"]))
    g = torch.Generator().manual_seed(h["seed"])
    ypos = yv > 0

    def correct(W, b, a):
        with torch.no_grad():
            z = xv @ W
            if b is not None:
                z = z + b
            return int(((torch.relu(z) @ a >= 0) == ypos).sum())

    def objective(W, b, a):
        with torch.no_grad():
            z = x @ W
            if b is not None:
                z = z + b
            loss = 0.5 * float(((torch.relu(z) @ a - y) ** 2).sum())
            reg = float((W * W).sum() + (a * a).sum())
            if b is not None:
                reg += float((b * b).sum())
            return loss, loss + beta / 2 * reg

    t0 = time.perf_counter()
    excluded = 0.0
    W = (torch.randn(d, m, generator=g, dtype=dtype) * math.sqrt(2.0 / d)).requires_grad_()
    a = (torch.randn(m, generator=g, dtype=dtype) * math.sqrt(1.0 / m)).requires_grad_()
    params = [W, a]
    b = None
    if h["bias"]:
        b = torch.zeros(m, dtype=dtype, requires_grad=True)
        params.append(b)
    opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)

    rec = {"lr": lr, "reached": False, "seconds_to_target": None, "epochs_to_target": None,
           "best_correct": -1, "seconds_to_best": None, "epochs_to_best": None,
           "diverged": False, "stopped": "epochs", "curve": []}
    steps = 0
    done = False
    epoch = 0
    for epoch in range(1, h["epochs"] + 1):
        perm = torch.randperm(n, generator=g)
        xs, ys = x[perm], y[perm]
        for lo in range(0, n, batch):
            xb, yb = xs[lo:lo + batch], ys[lo:lo + batch]
            z = xb @ W
            if b is not None:
                z = z + b
            f = torch.relu(z) @ a
            reg = (W * W).sum() + (a * a).sum()
            if b is not None:
                reg = reg + (b * b).sum()
            loss = (n / xb.shape[0]) * 0.5 * ((f - yb) ** 2).sum() + beta / 2 * reg
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            last = lo + batch >= n
            if steps % every == 0 or last:
                t1 = time.perf_counter()
                secs = t1 - t0 - excluded
                if not math.isfinite(float(loss)):
                    rec["diverged"], rec["stopped"] = True, "diverged"
                    excluded += time.perf_counter() - t1
                    done = True
                    break
                c = correct(W, b, a)
                ep = epoch - 1 + min(lo + batch, n) / n
                rec["curve"].append([secs, c / nval, ep])
                if c > rec["best_correct"]:
                    rec["best_correct"], rec["seconds_to_best"], rec["epochs_to_best"] = c, secs, ep
                if c >= target and not rec["reached"]:
                    rec["reached"], rec["seconds_to_target"], rec["epochs_to_target"] = True, secs, ep
                excluded += time.perf_counter() - t1
                if secs > h["seconds"]:
                    rec["stopped"] = "seconds"
                    done = True
                    break
        if done:
            break
    rec["train_seconds"] = time.perf_counter() - t0 - excluded
    rec["epochs"] = epoch
    rec["steps"] = steps
    rec["final_accuracy"] = rec["curve"][-1][1] if rec["curve"] else float("nan")
    rec["best_accuracy"] = rec["best_correct"] / nval if rec["best_correct"] >= 0 else float("nan")
    loss, obj = objective(W, b, a)
    rec["final_training_loss"] = loss if math.isfinite(loss) else None
    rec["final_objective"] = obj if math.isfinite(obj) else None
    if not math.isfinite(rec["final_accuracy"]):
        rec["final_accuracy"] = None
    if not math.isfinite(rec["best_accuracy"]):
        rec["best_accuracy"] = None
    return rec


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_backprop.py DIR")
    dirpath = sys.argv[1]
    start = time.perf_counter()
    with open(os.path.join(dirpath, "header.json")) as f:
        h = json.load(f)
    torch.set_num_threads(h["threads"])
    dtype = {"float32": torch.float32, "float64": torch.float64}[h["dtype"]]
    n, d, nv = h["n"], h["d"], h["n_val"]
    x = torch.from_numpy(load(dirpath, h["x_train"], n, d)).to(dtype).contiguous()
    y = torch.from_numpy(load(dirpath, h["y_train"], n, 1)).to(dtype).contiguous()
    xv = torch.from_numpy(load(dirpath, h["x_val"], nv, d)).to(dtype).contiguous()
    yv = torch.from_numpy(load(dirpath, h["y_val"], nv, 1)).to(dtype).contiguous()
    runs = []
    for lr in h["lrs"]:
        rec = train(h, x, y, xv, yv, lr, dtype)
        msg = "lr %g: %s, best %.2f%% at %.2f s, final %.2f%%, %d epochs, %.2f s (%s)" % (
            lr,
            "reached the target at %.2f s (epoch %.2f)" % (rec["seconds_to_target"], rec["epochs_to_target"])
            if rec["reached"] else "did not reach the target",
            100 * (rec["best_accuracy"] or 0), rec["seconds_to_best"] or 0,
            100 * (rec["final_accuracy"] or 0), rec["epochs"], rec["train_seconds"], rec["stopped"])
        print("   torch " + msg, file=sys.stderr, flush=True)
        runs.append(rec)
    out = {"torch_version": torch.__version__, "threads": torch.get_num_threads(), "dtype": h["dtype"],
           "runs": runs, "process_seconds": time.perf_counter() - start}
    tmp = os.path.join(dirpath, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, allow_nan=False)
    os.replace(tmp, os.path.join(dirpath, "result.json"))


if __name__ == "__main__":
    main()
