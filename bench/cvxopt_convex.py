#!/usr/bin/python3
"""CVXOPT side of `convexnn bench cvxopt`: time to a relative objective gap
on the convex training program of Bai, Gautam and Sojoudi, eq.
(convex_general),

    minimize   l(sum_i D_i X (v_i - w_i), y) + beta * sum_i (||v_i|| + ||w_i||)
    subject to (2 D_i - I) X v_i >= 0,  (2 D_i - I) X w_i >= 0,  i = 1..P,

with Debian's python3-cvxopt (run with /usr/bin/python3).

The formulation is that of solvers/internal/testprog/cvxopt_oracle.py (mode
"general"), built with numpy instead of Python loops (so that the problem construction, which is
timed, costs what a competent user's would): variables v_1..v_P, w_1..w_P
(d each), t (2P) with (t_j, u_j) in the second-order cone Q^{d+1}, and for the
hinge loss xi (n). The squared loss l = 1/2 ||yhat - y||^2 is the cone QP

    minimize 1/2 u'F'Fu - y'Fu + beta 1't   (coneqp, 1/2 ||y||^2 added back),

the hinge loss l = (1/n) sum_k max(0, 1 - y_k yhat_k) the cone LP

    minimize (1/n) 1'xi + beta 1't,  xi >= 0,  xi_k + y_k (Fu)_k >= 1   (conelp).

CVXOPT has no per-iteration callback, so the time to the target is that of
the fastest run, from scratch, with options['maxiters'] = k whose returned
point reaches the target: its objective l^{v,w}, recomputed from v and w,
within target * |pstar| of pstar, and its largest constraint violation
max (-(2D_i - I) X u_j)_+ at most viol_tol * viol_scale. A run is timed with
time.perf_counter() inside this script and includes the problem
construction (numpy -> cvxopt matrices) and the solve with CVXOPT's default
KKT solver; Python start-up, the imports and the JSON parsing of the
instance are not included.

The smallest passing k (k*) is found without sweeping k = 1, 2, ..., since
every run costs seconds per iteration at the benchmark's size:

 1. A reference solve at tight tolerances (1e-9, or 1e-8 if CVXOPT fails
    with a domain error) gives CVXOPT's own optimum, which the Go side
    compares with its pstar. It runs CVXOPT's default KKT solver (misc.kkt_chol
    for coneqp, misc.kkt_qr for conelp, built exactly as coneprog builds
    them) through a wrapper that, at each call, copies the current iterate
    from the solver's frame (locals `iters`, `x`, and `tau` for conelp, whose
    point is x/tau). The iterate of iteration k is the point a run with
    maxiters = k returns (the tolerances only decide when to stop), so this
    one run gives every candidate: k* is the first that passes, and k* - 1
    is known to fail.
 2. The timed runs are ordinary runs (no wrapper) with maxiters = k*; the
    first one's point is tested again. If it does not pass (or no iterates
    could be copied, should CVXOPT's internals differ), k* is searched by
    runs: up from the guess (the first k whose logged primal objective is
    within the target, else the reference's iteration count) until one
    passes, then down while k - 1 passes.

Mode "tolerance" (`convexnn bench accuracy`), stdin {"mode": "tolerance",
"X", "y", "D", "loss": squared|hinge|bce|logistic, "beta", "eps", "norm":
inf|2|1, "bias", "tol": t}: one run at abstol = reltol = feastol = t;
stdout {"status", "iterations", "seconds", "objective", "violation", "v",
"w"} (solve_to_tolerance). The BCE and logistic programs and the robust
programs (eps > 0) are built by build_any, in numpy as well.

stdin:  {"X": [[...]], "y": [...], "D": [[0/1, ...]], "loss": "squared"|"hinge",
         "beta": b, "pstar": p*, "target": 1e-4, "viol_scale": s,
         "viol_tol": 1e-6, "runs": N, "max_k": K}
stdout: {"reference": {...}, "trajectory": [per reference iterate: k, seconds, rel_gap,
         rel_violation], "guess": k, "sweep": [every run from scratch], "k": k* (0 if never reached),
         "hit": {...}, "hit_weights": {"v": [[...]], "w": [[...]]},
         "runs": [{"build": s, "solve": s, "total": s}],
         "median_seconds": s, "median_build_seconds": s, "median_solve_seconds": s}
"""
import contextlib
import io
import json
import os
import re
import sys
import time
import traceback

import numpy as np
from cvxopt import matrix, misc, solvers, spmatrix


def shared_entries(X, D):
    """The entries of G every program has (build and build_any): the pattern
    rows -(2D_i - I) X u_j <= 0 (row j*n + k, columns j*d .. j*d+d-1) and the
    groups' second-order cones -(t_j, u_j) <=_Q 0 (row j*(d+1) + l of their
    block), each as (vals, rows, cols) with rows from 0."""
    n, d = X.shape
    P = D.shape[0]
    ng, nu = 2 * P, 2 * P * d
    S = 2.0 * D - 1.0
    kk = np.repeat(np.arange(n), d)
    ll = np.tile(np.arange(d), n)
    pattern = (np.concatenate([(-S[j % P][:, None] * X).ravel() for j in range(ng)]),
               np.concatenate([j * n + kk for j in range(ng)]),
               np.concatenate([j * d + ll for j in range(ng)]))
    cone = (-np.ones(ng * (d + 1)),
            np.arange(ng * (d + 1)),
            np.concatenate([np.concatenate(([nu + j], j * d + np.arange(d))) for j in range(ng)]))
    return pattern, cone


def build(X, y, D, loss, beta):
    """The cone program as cvxopt matrices: (Q or None, c, G, h, dims, const)."""
    n, d = X.shape
    P = D.shape[0]
    ng = 2 * P
    nu = ng * d
    hinge = loss == "hinge"
    nx = nu + ng + (n if hinge else 0)

    # F_v = [D_1 X ... D_P X] (n x dP); F = [F_v, -F_v] on u.
    Fv = (D[:, :, None] * X[None, :, :]).transpose(1, 0, 2).reshape(n, P * d)

    (pv, pr, pc), (qv, qr, qc) = shared_entries(X, D)
    vals, rows, cols = [pv], [pr], [pc]
    row = ng * n
    hl = [np.zeros(ng * n)]
    if hinge:
        xi0 = nu + ng
        # -xi_k <= 0
        vals.append(-np.ones(n))
        rows.append(row + np.arange(n))
        cols.append(xi0 + np.arange(n))
        hl.append(np.zeros(n))
        row += n
        # -xi_k - y_k (F u)_k <= -1
        M = -y[:, None] * np.hstack([Fv, -Fv])
        r, c = np.nonzero(M)
        vals.append(M[r, c])
        rows.append(row + r)
        cols.append(c)
        vals.append(-np.ones(n))
        rows.append(row + np.arange(n))
        cols.append(xi0 + np.arange(n))
        hl.append(-np.ones(n))
        row += n
    nl = row
    # Second-order cones -(t_j, u_j) <=_Q 0.
    vals.append(qv)
    rows.append(row + qr)
    cols.append(qc)
    row += ng * (d + 1)
    hl.append(np.zeros(ng * (d + 1)))
    vals = np.concatenate(vals)
    rows = np.concatenate(rows).astype(int)
    cols = np.concatenate(cols).astype(int)
    G = spmatrix(matrix(vals), matrix(rows), matrix(cols), (row, nx))
    h = matrix(np.concatenate(hl))
    dims = {"l": nl, "q": [d + 1] * ng, "s": []}

    c = np.zeros(nx)
    c[nu:nu + ng] = beta
    if hinge:
        c[nu + ng:] = 1.0 / n
        return None, matrix(c), G, h, dims, 0.0
    fty = Fv.T @ y
    c[:nu] = np.concatenate([-fty, fty])
    B = Fv.T @ Fv
    Q = np.zeros((nx, nx))
    Q[:P * d, :P * d] = B
    Q[:P * d, P * d:nu] = -B
    Q[P * d:nu, :P * d] = -B
    Q[P * d:nu, P * d:nu] = B
    return matrix(Q), matrix(c), G, h, dims, 0.5 * float(y @ y)


def build_any(X, y, D, loss, beta, eps, norm, bias):
    """Any program of `bench accuracy` as cvxopt matrices: every loss, and
    the robust programs of section "Convex Adversarial Training" (eps > 0:
    the adversary moves the f raw features, f = d - 1 with a bias, by
    ||delta||_p <= eps; the dual norm ||.||_* is l1 for p = inf, l2 for
    p = 2 and l_inf for p = 1). With g_k = sum_i D_ik (v_i - w_i) and
    yhat_k = x_k'g_k, the worst case shifts yhat_k by eps ||g_k^f||_*, so
    with s_k >= ||g_k^f||_* and s_j >= ||u_j^f||_* (epigraph variables):

        patterns   (2D_ik - 1) x_k'u_j - eps s_j >= 0
        hinge      xi_k >= 0,  xi_k + y_k yhat_k - eps s_k >= 1,   (1/n) 1'xi
        squared    r_k -+ (yhat_k - y_k) - eps s_k >= 0,          1/2 r'r
        BCE, log.  m_k - a_k yhat_k - |a_k| eps s_k >= 0,         (1/n) sum softplus(m_k)
                   (a_k = 2(1 - 2y_k) for BCE, -y_k for the logistic loss)

    plus beta 1't with (t_j, u_j) in the second-order cone. The epigraphs:
    p = inf: s >= 1'z, z >= +-g (z in R^f); p = 1: s >= +-g; p = 2: (s, g^f)
    in the second-order cone. Returns (kind, Q, c, G, h, dims): kind "lp"
    (conelp), "qp" (coneqp, Q the sparse 1/2 r'r) or "cp" (cp, Q the
    objective function c'x + (1/n) sum softplus(m_k))."""
    n, d = X.shape
    P = D.shape[0]
    ng = 2 * P
    nu = ng * d
    f = d - 1 if bias else d
    robust = eps > 0 and f > 0
    e0 = nu + ng  # xi, r or m
    nx = e0 + n
    if robust:
        sg0, sk0 = nx, nx + ng  # s_j, s_k
        nx += ng + n
        if norm == "inf":
            a0, z0 = nx, nx + ng * f  # l1 epigraph entries
            nx += ng * f + n * f
    pi, pk = np.nonzero(D)  # the pairs (i, k) with D_ik = 1

    lin = {"vals": [], "rows": [], "cols": [], "h": [], "m": 0}
    soc = {"vals": [], "rows": [], "cols": [], "h": [], "m": 0, "q": []}

    def add(blk, r, c, v):
        """entries v of "expression >= 0" rows r (block-local), columns c"""
        r, c, v = np.broadcast_arrays(r, c, np.asarray(v, dtype=float))
        blk["vals"].append(-v.ravel())
        blk["rows"].append(blk["m"] + r.ravel())
        blk["cols"].append(c.ravel())

    def close(blk, m, h=None):
        blk["h"].append(np.zeros(m) if h is None else h)
        blk["m"] += m

    def g_rows(blk, rows_of, coef=1.0):
        """coef * g_k^f (l < f) into rows rows_of(k, l) of blk"""
        ll = np.arange(f)
        r = rows_of(pk[:, None], ll[None, :])
        add(blk, r, pi[:, None] * d + ll[None, :], coef)
        add(blk, r, (P + pi[:, None]) * d + ll[None, :], -coef)

    def yhat_rows(blk, rowk, coef):
        """coef_k * yhat_k into rows rowk[k] of blk"""
        r, c = pk[:, None], np.arange(d)[None, :]
        v = (coef[pk][:, None] * X[pk, :])
        add(blk, rowk[r], pi[:, None] * d + c, v)
        add(blk, rowk[r], (P + pi[:, None]) * d + c, -v)

    # Pattern rows, group j: row j*n + k (the robust ones less eps s_j).
    (pv, pr, pc), (qv, qr, qc) = shared_entries(X, D)
    lin["vals"].append(pv)
    lin["rows"].append(pr)
    lin["cols"].append(pc)
    if robust:
        for j in range(ng):
            add(lin, j * n + np.arange(n), np.full(n, sg0 + j), -eps)
    close(lin, ng * n)
    # Loss rows.
    ks = np.arange(n)
    if loss == "hinge":
        add(lin, ks, e0 + ks, 1.0)
        close(lin, n)
        add(lin, ks, e0 + ks, 1.0)
        yhat_rows(lin, ks, y)
        if robust:
            add(lin, ks, sk0 + ks, -eps)
        close(lin, n, -np.ones(n))
    elif loss == "squared":
        for sg in (1.0, -1.0):
            add(lin, ks, e0 + ks, 1.0)
            yhat_rows(lin, ks, np.full(n, -sg))
            if robust:
                add(lin, ks, sk0 + ks, -eps)
            close(lin, n, sg * y)
    else:
        a = 2 * (1 - 2 * y) if loss == "bce" else -y
        add(lin, ks, e0 + ks, 1.0)
        yhat_rows(lin, ks, -a)
        if robust:
            add(lin, ks, sk0 + ks, -eps * np.abs(a))
        close(lin, n)
    # Dual-norm epigraphs.
    if robust and norm in ("inf", "1"):
        js, fl = np.arange(ng)[:, None], np.arange(f)[None, :]
        for sg in (1.0, -1.0):
            # group j: a_jl -+ u_jl >= 0 (inf), s_j -+ u_jl >= 0 (1)
            r = js * f + fl
            add(lin, r, (a0 + r) if norm == "inf" else sg0 + js + 0 * fl, 1.0)
            add(lin, r, js * d + fl, -sg)
            close(lin, ng * f)
            # point k: z_kl -+ g_kl >= 0 (inf), s_k -+ g_kl >= 0 (1)
            r = ks[:, None] * f + fl
            add(lin, r, (z0 + r) if norm == "inf" else sk0 + ks[:, None] + 0 * fl, 1.0)
            g_rows(lin, lambda k, l: k * f + l, -sg)
            close(lin, n * f)
        if norm == "inf":
            # s_j - 1'a_j >= 0, s_k - 1'z_k >= 0
            add(lin, np.arange(ng), sg0 + np.arange(ng), 1.0)
            add(lin, np.repeat(np.arange(ng), f), a0 + np.arange(ng * f), -1.0)
            close(lin, ng)
            add(lin, ks, sk0 + ks, 1.0)
            add(lin, np.repeat(ks, f), z0 + np.arange(n * f), -1.0)
            close(lin, n)
    # Second-order cones: (t_j, u_j), and for p = 2 (s_j, u_j^f), (s_k, g_k^f).
    soc["vals"].append(qv)
    soc["rows"].append(qr)
    soc["cols"].append(qc)
    close(soc, ng * (d + 1))
    soc["q"].extend([d + 1] * ng)
    if robust and norm == "2":
        for j in range(ng):
            add(soc, np.arange(f + 1), np.concatenate(([sg0 + j], j * d + np.arange(f))), 1.0)
            close(soc, f + 1)
            soc["q"].append(f + 1)
        add(soc, ks * (f + 1), sk0 + ks, 1.0)
        g_rows(soc, lambda k, l: k * (f + 1) + 1 + l)
        close(soc, n * (f + 1))
        soc["q"].extend([f + 1] * n)

    ml = lin["m"]
    vals = np.concatenate(lin["vals"] + soc["vals"])
    rows = np.concatenate(lin["rows"] + [r + ml for r in soc["rows"]]).astype(int)
    cols = np.concatenate(lin["cols"] + soc["cols"]).astype(int)
    m = ml + soc["m"]
    G = spmatrix(matrix(vals), matrix(rows), matrix(cols), (m, nx))
    h = matrix(np.concatenate(lin["h"] + soc["h"]))
    dims = {"l": ml, "q": soc["q"], "s": []}
    c = np.zeros(nx)
    c[nu:nu + ng] = beta
    if loss == "hinge":
        c[e0:e0 + n] = 1.0 / n
        return "lp", None, matrix(c), G, h, dims
    if loss == "squared":
        Q = spmatrix(1.0, range(e0, e0 + n), range(e0, e0 + n), (nx, nx))
        return "qp", Q, matrix(c), G, h, dims
    return "cp", softplus_objective(matrix(c), e0, n), matrix(c), G, h, dims


def softplus_objective(c, m0, n):
    """cp's F for c'x + (1/n) sum_k softplus(x[m0 + k]) (diagonal Hessian).
    F.hessians counts the calls with z, the Hessian evaluations (one per
    KKT factorization, so per iteration): cp does not report its iterations."""
    nx = c.size[0]
    cv = np.array(c).ravel()

    def F(x=None, z=None):
        if x is None:
            return 0, matrix(0.0, (nx, 1))
        xv = np.array(x).ravel()
        t = xv[m0:m0 + n]
        sig = 0.5 * (1.0 + np.tanh(0.5 * t))
        val = float(cv @ xv + np.sum(np.logaddexp(0.0, t)) / n)
        Df = cv.copy()
        Df[m0:m0 + n] += sig / n
        if z is None:
            return matrix(val), matrix(Df).T
        H = spmatrix(matrix(float(z[0]) * sig * (1 - sig) / n), range(m0, m0 + n), range(m0, m0 + n), (nx, nx))
        F.hessians += 1
        return matrix(val), matrix(Df).T, H
    F.hessians = 0
    return F


def dual_norm(G, norm):
    """||row||_* of each row of G: l1 for p = inf, l2 for p = 2, l_inf for p = 1."""
    if norm == "inf":
        return np.sum(np.abs(G), axis=1)
    if norm == "2":
        return np.linalg.norm(G, axis=1)
    return np.max(np.abs(G), axis=1)


def evaluate_any(X, y, D, v, w, loss, beta, eps, norm, bias):
    """The (robust) objective from its definition at (v, w), and the largest
    violation of the (robust) pattern constraints."""
    n, d = X.shape
    f = d - 1 if bias else d
    S = 2.0 * D - 1.0
    g = D.T @ (v - w)  # n x d: g_k
    yhat = np.sum(X * g, axis=1)
    shift = eps * dual_norm(g[:, :f], norm) if eps > 0 and f > 0 else np.zeros(n)
    if loss == "hinge":
        val = float(np.mean(np.maximum(0.0, 1.0 - y * yhat + shift)))
    elif loss == "squared":
        val = 0.5 * float(np.sum((np.abs(yhat - y) + shift) ** 2))
    else:
        a = 2 * (1 - 2 * y) if loss == "bce" else -y
        val = float(np.mean(np.logaddexp(0.0, a * yhat + np.abs(a) * shift)))
    reg = float(np.sum(np.linalg.norm(v, axis=1)) + np.sum(np.linalg.norm(w, axis=1)))
    viol = 0.0
    for u in (v, w):
        marg = S.T * (X @ u.T)  # n x P
        if eps > 0 and f > 0:
            marg = marg - eps * dual_norm(u[:, :f], norm)[None, :]
        viol = max(viol, float(np.max(-marg)))
    return val + beta * reg, viol


def solve_any(prob, maxiters, tol):
    """One CVXOPT run on a program of build_any, with its default KKT solver."""
    kind, Q, c, G, h, dims = prob
    solvers.options.update({"abstol": tol, "reltol": tol, "feastol": tol,
                            "maxiters": maxiters, "show_progress": False})
    if kind == "lp":
        return solvers.conelp(c, G, h, dims)
    if kind == "qp":
        return solvers.coneqp(Q, c, G, h, dims)
    return solvers.cp(Q, G, h, dims)


def solve(prob, hinge, maxiters, tol, progress=False, kktsolver=None):
    Q, c, G, h, dims, _ = prob
    solvers.options.update({"abstol": tol, "reltol": tol, "feastol": tol,
                            "maxiters": maxiters, "show_progress": progress})
    kw = {} if kktsolver is None else {"kktsolver": kktsolver}
    if hinge:
        return solvers.conelp(c, G, h, dims, **kw)
    return solvers.coneqp(Q, c, G, h, dims, **kw)


def recording_kktsolver(prob, hinge):
    """CVXOPT's default KKT solver for the program (conelp: 'qr', coneqp:
    'chol', as coneprog builds them), wrapped to copy the iterate of every
    iteration from the solver's frame: returns (kktsolver, {k: (x, seconds)})."""
    Q, c, G, h, dims, _ = prob
    A = spmatrix([], [], [], (0, c.size[0]))
    factor = misc.kkt_qr(G, dims, A) if hinge else misc.kkt_chol(G, dims, A)
    seen = {}
    t0 = time.perf_counter()

    def kktsolver(W):
        loc = sys._getframe(1).f_locals
        k, x = loc.get("iters"), loc.get("x")
        if isinstance(k, int) and isinstance(x, matrix) and k not in seen:
            pt = np.array(x).ravel()
            if hinge:
                pt = pt / loc["tau"]
            seen[k] = (pt, time.perf_counter() - t0)
        return factor(W) if hinge else factor(W, Q)

    return kktsolver, seen


def weights(sol, P, d):
    return point_weights(np.array(sol["x"]).ravel(), P, d)


def point_weights(x, P, d):
    return x[:P * d].reshape(P, d), x[P * d:2 * P * d].reshape(P, d)


def evaluate(X, y, D, v, w, hinge, beta):
    """l^{v,w} recomputed from v and w, and the largest constraint violation."""
    S = 2.0 * D - 1.0
    zv, zw = X @ v.T, X @ w.T  # n x P
    yhat = np.sum(D.T * (zv - zw), axis=1)
    if hinge:
        loss = float(np.mean(np.maximum(0.0, 1.0 - y * yhat)))
    else:
        loss = 0.5 * float(np.sum((yhat - y) ** 2))
    reg = float(np.sum(np.linalg.norm(v, axis=1)) + np.sum(np.linalg.norm(w, axis=1)))
    viol = max(0.0, float(np.max(-S.T * zv)), float(np.max(-S.T * zw)))
    return loss + beta * reg, viol


def progress_costs(log, const):
    """The primal objective (plus const) of every iterate in a progress log:
    line k of the log is the point after k iterations, the one a run with
    maxiters = k returns."""
    costs = {}
    for line in log.splitlines():
        m = re.match(r"\s*(\d+):\s+(\S+)", line)
        if m:
            try:
                costs[int(m.group(1))] = float(m.group(2)) + const
            except ValueError:
                pass
    return costs


def solve_to_tolerance(X, y, D, loss, beta, tol, eps=0.0, norm="inf", bias=False):
    """Mode "tolerance" (`convexnn bench accuracy`): one ordinary run with
    CVXOPT's abstol = reltol = feastol = tol, timed from the problem
    construction to the solution (time.perf_counter()). The standard squared
    and hinge programs are those of build (coneqp with the dense F'F, conelp);
    the BCE and logistic programs (cp) and the robust programs (eps > 0) are
    those of build_any. Returns the status, the iterations, the seconds, the
    weights and the objective with the largest constraint violation,
    recomputed from them; the Go side certifies the point against its own
    lower bound. A run CVXOPT cannot start (its dense KKT matrix does not fit
    in memory) returns status "error: ..." with the matrix's size."""
    P, d = D.shape[0], X.shape[1]
    plain = loss in ("squared", "hinge") and eps == 0
    hinge = loss == "hinge"

    def make(X, y, D):
        if plain:
            return build(X, y, D, loss, beta)
        return build_any(X, y, D, loss, beta, eps, norm, bias)

    def run(prob, maxiters, tol):
        if plain:
            return solve(prob, hinge, maxiters, tol)
        return solve_any(prob, maxiters, tol)

    # Warm-up, not timed: the first CVXOPT solve in a process pays for
    # loading and initializing its BLAS and LAPACK. Its answer does not
    # matter, nor whether so small a program fails.
    try:
        run(make(X[:4, :3], y[:4], D[:1, :4]), 5, 1e-3)
    except (ArithmeticError, ValueError):
        pass
    t0 = time.perf_counter()
    prob = None
    try:
        prob = make(X, y, D)
        sol = run(prob, 500, tol)
    except (ArithmeticError, ValueError, MemoryError) as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        status = "error: %s: %s, in %s %s" % (type(e).__name__, e, os.path.basename(where.filename), where.name)
        if prob is not None:
            m, nx = prob[3].size
            status += " (G is %d x %d: %.0f GB dense)" % (m, nx, 8.0 * m * nx / 1e9)
        return {"status": status, "seconds": time.perf_counter() - t0}
    secs = time.perf_counter() - t0
    v, w = weights(sol, P, d)
    if plain:
        obj, viol = evaluate(X, y, D, v, w, hinge, beta)
    else:
        obj, viol = evaluate_any(X, y, D, v, w, loss, beta, eps, norm, bias)
    iters = sol["iterations"] if "iterations" in sol else prob[1].hessians
    return {"status": sol["status"], "iterations": iters, "seconds": secs,
            "objective": obj, "violation": viol, "v": v.tolist(), "w": w.tolist()}


def main():
    inp = json.load(sys.stdin)
    X = np.array(inp["X"], dtype=float)
    y = np.array(inp["y"], dtype=float)
    D = np.array(inp["D"], dtype=float)
    loss, beta = inp["loss"], float(inp["beta"])
    if inp.get("mode") == "tolerance":
        eps, norm = float(inp.get("eps", 0)), inp.get("norm") or "inf"
        if loss not in ("squared", "hinge", "bce", "logistic"):
            raise ValueError("unknown loss %r" % loss)
        if norm not in ("inf", "2", "1"):
            raise ValueError("unknown perturbation norm %r" % norm)
        json.dump(solve_to_tolerance(X, y, D, loss, beta, float(inp["tol"]), eps, norm,
                                     bool(inp.get("bias", False))), sys.stdout)
        return
    if loss not in ("squared", "hinge"):
        raise ValueError("unknown loss %r" % loss)
    hinge = loss == "hinge"
    pstar, target = float(inp["pstar"]), float(inp["target"])
    vscale, vtol = float(inp["viol_scale"]), float(inp["viol_tol"])
    runs, max_k = int(inp["runs"]), int(inp["max_k"])
    P, d = D.shape[0], X.shape[1]

    def judge(v, w):
        obj, viol = evaluate(X, y, D, v, w, hinge, beta)
        gap = abs(obj - pstar) / abs(pstar)
        rv = viol / vscale if vscale > 0 else viol
        return obj, gap, rv, gap <= target and rv <= vtol

    prob = build(X, y, D, loss, beta)

    # 1. Reference optimum at tight tolerances, recording every iterate.
    ref, log, seen = None, "", {}
    for tol in (1e-9, 1e-8):
        buf = io.StringIO()
        kkt, seen = recording_kktsolver(prob, hinge)
        try:
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(buf):
                sol = solve(prob, hinge, max_k, tol, progress=True, kktsolver=kkt)
            secs = time.perf_counter() - t0
        except (ArithmeticError, ValueError):
            continue
        v, w = weights(sol, P, d)
        obj, viol = evaluate(X, y, D, v, w, hinge, beta)
        ref = {"status": sol["status"], "objective": obj,
               "solver_objective": sol["primal objective"] + prob[5],
               "iterations": sol["iterations"], "tolerance": tol,
               "violation": viol, "solve_seconds": secs}
        seen.setdefault(sol["iterations"], (np.array(sol["x"]).ravel(), secs))
        log = buf.getvalue()
        break
    if ref is None:
        raise RuntimeError("CVXOPT failed at tolerances 1e-9 and 1e-8")

    trajectory, guess = [], 0
    for k in sorted(seen):
        v, w = point_weights(seen[k][0], P, d)
        obj, gap, rv, ok = judge(v, w)
        trajectory.append({"k": k, "seconds": seen[k][1], "objective": obj,
                           "rel_gap": gap, "rel_violation": rv, "pass": ok})
        if ok and not guess and k >= 1:
            guess = k
    from_trajectory = guess > 0
    if not guess:
        # No iterates copied: guess from the progress log.
        costs = progress_costs(log, prob[5])
        guess = ref["iterations"]
        for k in sorted(costs):
            if k >= 1 and abs(costs[k] - pstar) <= target * abs(pstar):
                guess = k
                break
    guess = max(1, min(guess, max_k))

    # 2. Runs from scratch: construction + solve with maxiters = k.
    tried, points = {}, {}

    def trial(k):
        if k in tried:
            return tried[k]
        t0 = time.perf_counter()
        p2 = build(X, y, D, loss, beta)
        t1 = time.perf_counter()
        try:
            sol = solve(p2, hinge, k, 1e-9)
        except (ArithmeticError, ValueError) as e:
            tried[k] = {"k": k, "error": str(e), "pass": False}
            return tried[k]
        t2 = time.perf_counter()
        v, w = weights(sol, P, d)
        points[k] = {"v": v.tolist(), "w": w.tolist()}
        obj, gap, rv, ok = judge(v, w)
        tried[k] = {"k": k, "iterations": sol["iterations"], "status": sol["status"],
                    "build": t1 - t0, "solve": t2 - t1, "total": t2 - t0,
                    "objective": obj, "rel_gap": gap, "rel_violation": rv, "pass": ok}
        return tried[k]

    kstar = 0
    if from_trajectory and trial(guess)["pass"]:
        kstar = guess  # and guess - 1 fails: the same iterate failed in the trajectory
    else:
        from_trajectory = False
        k = guess
        while k <= max_k:
            r = trial(k)
            if r["pass"]:
                kstar = k
                break
            if r.get("status") == "optimal" and r["iterations"] < k:
                break  # converged before k: larger k changes nothing
            k += 1
        if kstar:
            while kstar > 1 and trial(kstar - 1)["pass"]:
                kstar -= 1

    out = {"reference": ref, "trajectory": trajectory, "guess": guess,
           "k_from_trajectory": from_trajectory, "sweep": [tried[k] for k in sorted(tried)],
           "k": kstar, "hit": tried.get(kstar), "hit_weights": points.get(kstar), "runs": []}
    if kstar:
        hit = tried[kstar]
        out["runs"].append({"build": hit["build"], "solve": hit["solve"], "total": hit["total"]})
        for _ in range(runs - 1):
            t0 = time.perf_counter()
            p2 = build(X, y, D, loss, beta)
            t1 = time.perf_counter()
            solve(p2, hinge, kstar, 1e-9)
            t2 = time.perf_counter()
            out["runs"].append({"build": t1 - t0, "solve": t2 - t1, "total": t2 - t0})
        out["median_seconds"] = float(np.median([r["total"] for r in out["runs"]]))
        out["median_build_seconds"] = float(np.median([r["build"] for r in out["runs"]]))
        out["median_solve_seconds"] = float(np.median([r["solve"] for r in out["runs"]]))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
