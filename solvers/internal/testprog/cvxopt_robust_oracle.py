#!/usr/bin/python3
"""Independent oracle for ipm.SolveRobust (solvers/ipm): the robust convex training
programs of section "Convex Adversarial Training" (eq. hinge_adv_D,
hinge_adv_D_lp, SOCP3) with CVXOPT (Debian's python3-cvxopt; run with
/usr/bin/python3).

stdin:  {"X": [[...]], "y": [...], "D": [[0/1, ...]], "loss": "hinge" |
         "squared" | "bce" | "logistic", "beta": b, "eps": e,
         "norm": "inf" | "2" | "1",
         "bias": true/false}
stdout: {"status", "objective" (recomputed from v, w by robust_objective
         below), "solver_objective", "violation", "iterations", "tolerance",
         "v", "w"}

The formulation is deliberately not the Go one. The adversary moves the f
raw features of each x_k (f = d - 1 with a bias column, which stays 1) in
the ball ||delta||_p <= eps. Every worst case is written directly as
constraints over the perturbation set, with no dual-norm auxiliaries:

* polytopes (norm "inf": the 2^f vertices eps*s, s in {-1,1}^f; norm "1":
  the 2f vertices +-eps*e_l): a constraint min_delta a(delta) >= 0 with a
  affine in delta holds iff it holds at every vertex, and
  max_delta loss(yhat_k + delta'g_k) is the maximum over the vertices, so
  each robust row is repeated once per vertex;
* the l2 ball: min_{||delta||<=eps} c + delta'g = c - eps ||g||, i.e. the
  second-order cone (c/eps, g) in Q^{f+1}, one cone per robust row.

Rows (u_j = v_1..v_P, w_1..w_P; S = 2D - I; g_k = sum_i d_ik (v_i - w_i)):
  robust constraints   S_ik (x_k + delta)' u_j >= 0          for all delta
  hinge                xi_k >= 0, xi_k >= 1 - y_k (x_k + delta)' g_k
  squared              z_k >= +-((x_k + delta)' g_k - y_k)
  bce (labels 0/1)     m_k >= 2(1 - 2y_k) (x_k + delta)' g_k
  logistic (labels +-1) m_k >= -y_k (x_k + delta)' g_k
with objective (1/n) sum xi + beta sum t (conelp), 1/2 sum z^2 + beta sum t
(coneqp) or (1/n) sum log(1 + exp(m_k)) + beta sum t (cp, the smooth convex
solver: the worst case of the increasing softplus is at the largest m_k),
t_j >= ||u_j||_2 as second-order cones. Variables: u (2Pd), t (2P), xi, z or
m (n).
"""
import itertools
import json
import math
import sys

from cvxopt import matrix, spmatrix, solvers


def vertices(norm, f, eps):
    if norm in ("inf", ""):
        return [[eps * s for s in signs] for signs in itertools.product((-1.0, 1.0), repeat=f)]
    if norm == "1":
        out = []
        for l in range(f):
            for s in (-1.0, 1.0):
                v = [0.0] * f
                v[l] = eps * s
                out.append(v)
        return out
    raise ValueError("no vertices for norm %r" % norm)


def softplus(t):
    return t + math.log1p(math.exp(-t)) if t > 0 else math.log1p(math.exp(t))


def robust_objective(X, y, D, v, w, loss, beta, eps, norm, bias):
    """The robust objective from its definition, worst cases by enumeration
    of the vertices (polytopes) or by the l2 maximizer eps*g/||g||."""
    n, d, P = len(X), len(X[0]), len(D)
    f = d - 1 if bias else d
    total = 0.0
    for k in range(n):
        g = [0.0] * d
        for i in range(P):
            if D[i][k]:
                for l in range(d):
                    g[l] += v[i][l] - w[i][l]
        yhat = sum(X[k][l] * g[l] for l in range(d))
        if eps > 0 and f > 0:
            if norm == "2":
                ng = math.sqrt(sum(g[l] ** 2 for l in range(f)))
                shifts = [eps * ng, -eps * ng]
            else:
                shifts = [sum(dl * g[l] for l, dl in enumerate(delta)) for delta in vertices(norm, f, eps)]
        else:
            shifts = [0.0]
        if loss == "hinge":
            total += max(max(0.0, 1.0 - y[k] * (yhat + s)) for s in shifts)
        elif loss == "bce":
            total += softplus(max(2 * (1 - 2 * y[k]) * (yhat + s) for s in shifts))
        elif loss == "logistic":
            total += softplus(max(-y[k] * (yhat + s) for s in shifts))
        else:
            total += max(0.5 * (yhat + s - y[k]) ** 2 for s in shifts)
    if loss != "squared":
        total /= n
    reg = sum(math.sqrt(sum(x * x for x in r)) for r in v) + sum(math.sqrt(sum(x * x for x in r)) for r in w)
    return total + beta * reg


def robust_violation(X, D, v, w, eps, norm, bias):
    n, d, P = len(X), len(X[0]), len(D)
    f = d - 1 if bias else d
    worst = 0.0
    for i in range(P):
        for u in (v[i], w[i]):
            for k in range(n):
                s = 1.0 if D[i][k] else -1.0
                c = s * sum(X[k][l] * u[l] for l in range(d))
                if eps > 0 and f > 0:
                    if norm == "2":
                        c -= eps * math.sqrt(sum(u[l] ** 2 for l in range(f)))
                    else:
                        c = min(c + s * sum(dl * u[l] for l, dl in enumerate(delta)) for delta in vertices(norm, f, eps))
                worst = max(worst, -c)
    return worst


def build(prob):
    X, y, D = prob["X"], prob["y"], prob["D"]
    loss, beta = prob["loss"], float(prob["beta"])
    eps, norm, bias = float(prob.get("eps", 0)), prob.get("norm", "inf") or "inf", bool(prob.get("bias", False))
    if loss not in ("squared", "hinge", "bce", "logistic"):
        raise ValueError("unknown loss %r" % loss)
    if norm not in ("inf", "2", "1"):
        raise ValueError("unknown norm %r" % norm)
    n, d, P = len(X), len(X[0]), len(D)
    f = d - 1 if bias else d
    ng = 2 * P
    nu = ng * d
    nx = nu + ng + n
    robust = eps > 0 and f > 0
    verts = vertices(norm, f, eps) if robust and norm != "2" else [None]

    # A row is (coefficients {col: val}, constant): expression >= 0, or one
    # entry of a second-order cone.
    lin = []  # orthant rows
    socs = []  # lists of rows

    def ucol(j, l):
        return j * d + l

    def robust_rows(base, gcoef):
        """base: dict+const of the clean expression c(x); gcoef[l]: dict, the
        coefficient of delta_l. Adds min_delta c + delta'g >= 0."""
        coefs, const = base
        if not robust:
            lin.append((coefs, const))
        elif norm == "2":
            cone = [({c: a / eps for c, a in coefs.items()}, const / eps)]
            for l in range(f):
                cone.append((dict(gcoef[l]), 0.0))
            socs.append(cone)
        else:
            for delta in verts:
                row = dict(coefs)
                for l in range(f):
                    for c, a in gcoef[l].items():
                        row[c] = row.get(c, 0.0) + delta[l] * a
                lin.append((row, const))

    for j in range(ng):
        i = j % P
        for k in range(n):
            s = 1.0 if D[i][k] else -1.0
            base = ({ucol(j, l): s * X[k][l] for l in range(d) if X[k][l] != 0}, 0.0)
            robust_rows(base, [{ucol(j, l): s} for l in range(f)])
    for k in range(n):
        g = [dict() for _ in range(d)]
        for i in range(P):
            if D[i][k]:
                for l in range(d):
                    g[l][ucol(i, l)] = g[l].get(ucol(i, l), 0.0) + 1.0
                    g[l][ucol(P + i, l)] = g[l].get(ucol(P + i, l), 0.0) - 1.0
        slack = nu + ng + k
        if loss == "hinge":
            lin.append(({slack: 1.0}, 0.0))
            # xi_k - 1 + y_k (x_k + delta)' g_k >= 0
            row = {slack: 1.0}
            for l in range(d):
                for c, a in g[l].items():
                    row[c] = row.get(c, 0.0) + y[k] * X[k][l] * a
            robust_rows((row, -1.0), [{c: y[k] * a for c, a in g[l].items()} for l in range(f)])
        elif loss in ("bce", "logistic"):
            # m_k - a_k (x_k + delta)' g_k >= 0
            a = 2 * (1 - 2 * y[k]) if loss == "bce" else -y[k]
            row = {slack: 1.0}
            for l in range(d):
                for c, b in g[l].items():
                    row[c] = row.get(c, 0.0) - a * X[k][l] * b
            robust_rows((row, 0.0), [{c: -a * b for c, b in g[l].items()} for l in range(f)])
        else:
            for sg in (1.0, -1.0):
                # z_k - sg ((x_k + delta)' g_k - y_k) >= 0
                row = {slack: 1.0}
                for l in range(d):
                    for c, a in g[l].items():
                        row[c] = row.get(c, 0.0) - sg * X[k][l] * a
                robust_rows((row, sg * y[k]), [{c: -sg * a for c, a in g[l].items()} for l in range(f)])
    for j in range(ng):
        socs.append([({nu + j: 1.0}, 0.0)] + [({ucol(j, l): 1.0}, 0.0) for l in range(d)])

    vals, rows, cols, h = [], [], [], []
    for r, (coefs, const) in enumerate(lin + [e for cone in socs for e in cone]):
        for c, a in coefs.items():
            if a != 0:
                vals.append(-a); rows.append(r); cols.append(c)
        h.append(const)
    m = len(h)
    G = spmatrix(vals, rows, cols, (m, nx))
    h = matrix(h, (m, 1))
    dims = {"l": len(lin), "q": [len(cone) for cone in socs], "s": []}
    c = matrix(0.0, (nx, 1))
    for j in range(ng):
        c[nu + j] = beta
    if loss in ("hinge", "bce", "logistic"):
        for k in range(n):
            c[nu + ng + k] = 1.0 / n if loss == "hinge" else 0.0
        Q = None
    else:
        Q = spmatrix([1.0] * n, list(range(nu + ng, nx)), list(range(nu + ng, nx)), (nx, nx))
    return X, y, D, n, d, P, loss, beta, eps, norm, bias, Q, c, G, h, dims


def smooth_objective(c, m0, n, nx):
    """cp's F for c'x + (1/n) sum_k softplus(x[m0 + k])."""
    def F(x=None, z=None):
        if x is None:
            return 0, matrix(0.0, (nx, 1))
        f = sum(c[i] * x[i] for i in range(nx))
        Df = matrix(c.T)
        hess = []
        for k in range(n):
            t = x[m0 + k]
            sig = 1 / (1 + math.exp(-t)) if t > -700 else 0.0
            f += softplus(t) / n
            Df[m0 + k] += sig / n
            hess.append(sig * (1 - sig) / n)
        if z is None:
            return matrix(f), Df
        H = spmatrix([z[0] * h for h in hess], list(range(m0, m0 + n)), list(range(m0, m0 + n)), (nx, nx))
        return matrix(f), Df, H
    return F


def main():
    prob = json.load(sys.stdin)
    X, y, D, n, d, P, loss, beta, eps, norm, bias, Q, c, G, h, dims = build(prob)
    # CVXOPT can fail ("domain error") when its last steps leave the cone at
    # very tight tolerances; retry a little looser and report the tolerance.
    for tol in (1e-10, 1e-9, 1e-8):
        solvers.options.update({"abstol": tol, "reltol": tol, "feastol": tol,
                                "maxiters": 200, "show_progress": False})
        try:
            if loss in ("bce", "logistic"):
                sol = solvers.cp(smooth_objective(c, 2 * P * d + 2 * P, n, len(c)), G, h, dims)
            elif Q is None:
                sol = solvers.conelp(c, G, h, dims)
            else:
                sol = solvers.coneqp(Q, c, G, h, dims)
            if sol["status"] != "optimal" and tol < 1e-8:
                continue
            break
        except (ArithmeticError, ValueError):
            continue
    else:
        raise RuntimeError("CVXOPT failed at every tolerance")
    x = sol["x"]
    v = [[x[i * d + l] for l in range(d)] for i in range(P)]
    w = [[x[(P + i) * d + l] for l in range(d)] for i in range(P)]
    out = {
        "status": sol["status"],
        "objective": robust_objective(X, y, D, v, w, loss, beta, eps, norm, bias),
        "solver_objective": sol["primal objective"] if "primal objective" in sol else None,
        "violation": robust_violation(X, D, v, w, eps, norm, bias),
        "iterations": sol.get("iterations", 0),
        "tolerance": tol,
        "v": v,
        "w": w,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
