#!/usr/bin/python3
"""Independent oracle for ipm.Solve (solvers/ipm): solves the convex training program
of Bai, Gautam and Sojoudi, eq. (convex_general),

    minimize   l(sum_i D_i X (v_i - w_i), y) + beta * sum_i (||v_i|| + ||w_i||)
    subject to (2 D_i - I) X v_i >= 0,  (2 D_i - I) X w_i >= 0,

with CVXOPT (Debian's python3-cvxopt; run with /usr/bin/python3).

stdin:  {"X": [[...], ...], "y": [...], "D": [[0/1, ...], ...],
         "loss": "squared" | "hinge", "beta": b}
stdout: {"status": ..., "objective": l^{v,w} recomputed from v and w,
         "solver_objective": CVXOPT's primal objective (plus the constant),
         "iterations": ..., "v": [[...]], "w": [[...]]}

Squared loss l = 1/2 ||yhat - y||^2: coneqp with P = F'F, q = -F'y
(constant 1/2 ||y||^2 added back). Hinge loss l = (1/n) sum_k max(0, 1 - y_k
yhat_k): conelp with slacks xi >= 0, xi_k >= 1 - y_k yhat_k. Both use the
epigraphs t_j >= ||u_j|| as second-order cones. Variables, in order:
v_1..v_P, w_1..w_P (d each), t (2P), xi (n, hinge only).
"""
import json
import math
import sys

from cvxopt import matrix, spmatrix, solvers


def build(prob):
    X, y, D = prob["X"], prob["y"], prob["D"]
    loss, beta = prob["loss"], float(prob["beta"])
    n, d, P = len(X), len(X[0]), len(D)
    ng = 2 * P
    nu = ng * d
    hinge = loss == "hinge"
    if loss not in ("squared", "hinge"):
        raise ValueError("unknown loss %r" % loss)
    nx = nu + ng + (n if hinge else 0)

    def group(j):
        """pattern index and sign of group j in the prediction"""
        return j % P, (1.0 if j < P else -1.0)

    # F (n x nx): yhat = F x.
    F = matrix(0.0, (n, nx))
    for j in range(ng):
        i, sg = group(j)
        for k in range(n):
            if D[i][k]:
                for l in range(d):
                    F[k, j * d + l] = sg * X[k][l]

    vals, rows, cols = [], [], []
    h = []
    row = 0
    # Pattern rows: -(2D_i - I) X u_j <= 0.
    for j in range(ng):
        i, _ = group(j)
        for k in range(n):
            s = 1.0 if D[i][k] else -1.0
            for l in range(d):
                if X[k][l] != 0:
                    vals.append(-s * X[k][l]); rows.append(row); cols.append(j * d + l)
            h.append(0.0)
            row += 1
    nl = row
    if hinge:
        xi0 = nu + ng
        for k in range(n):  # -xi_k <= 0
            vals.append(-1.0); rows.append(row); cols.append(xi0 + k)
            h.append(0.0)
            row += 1
        for k in range(n):  # -xi_k - y_k (F u)_k <= -1
            for c in range(nu):
                if F[k, c] != 0:
                    vals.append(-y[k] * F[k, c]); rows.append(row); cols.append(c)
            vals.append(-1.0); rows.append(row); cols.append(xi0 + k)
            h.append(-1.0)
            row += 1
        nl = row
    # Second-order cones: -(t_j, u_j) <=_Q 0.
    for j in range(ng):
        vals.append(-1.0); rows.append(row); cols.append(nu + j)
        h.append(0.0)
        row += 1
        for l in range(d):
            vals.append(-1.0); rows.append(row); cols.append(j * d + l)
            h.append(0.0)
            row += 1
    G = spmatrix(vals, rows, cols, (row, nx))
    h = matrix(h, (row, 1))
    dims = {"l": nl, "q": [d + 1] * ng, "s": []}

    c = matrix(0.0, (nx, 1))
    for j in range(ng):
        c[nu + j] = beta
    if hinge:
        for k in range(n):
            c[nu + ng + k] = 1.0 / n
        const = 0.0
    else:
        c += -(F.T * matrix(y, (n, 1)))
        const = 0.5 * sum(v * v for v in y)
    return X, y, D, n, d, P, hinge, F, G, h, dims, c, const, beta


def objective(X, y, D, v, w, hinge, beta):
    n, d, P = len(X), len(X[0]), len(D)
    yhat = [0.0] * n
    for i in range(P):
        for k in range(n):
            if D[i][k]:
                yhat[k] += sum(X[k][l] * (v[i][l] - w[i][l]) for l in range(d))
    if hinge:
        loss = sum(max(0.0, 1.0 - y[k] * yhat[k]) for k in range(n)) / n
    else:
        loss = 0.5 * sum((yhat[k] - y[k]) ** 2 for k in range(n))
    reg = sum(math.sqrt(sum(x * x for x in r)) for r in v) + sum(math.sqrt(sum(x * x for x in r)) for r in w)
    return loss + beta * reg


def main():
    prob = json.load(sys.stdin)
    X, y, D, n, d, P, hinge, F, G, h, dims, c, const, beta = build(prob)
    nu = 2 * P * d
    nx = c.size[0]
    if not hinge:
        Q = matrix(0.0, (nx, nx))
        Q[:nu, :nu] = F[:, :nu].T * F[:, :nu]
    # CVXOPT can fail ("domain error") when its last steps leave the cone at
    # very tight tolerances; retry a little looser and report the tolerance.
    for tol in (1e-10, 1e-9, 1e-8):
        solvers.options.update({"abstol": tol, "reltol": tol, "feastol": tol,
                                "maxiters": 200, "show_progress": False})
        try:
            if hinge:
                sol = solvers.conelp(c, G, h, dims)
            else:
                sol = solvers.coneqp(Q, c, G, h, dims)
            break
        except ArithmeticError:
            continue
        except ValueError:
            continue
    else:
        raise RuntimeError("CVXOPT failed at every tolerance")
    x = sol["x"]
    v = [[x[i * d + l] for l in range(d)] for i in range(P)]
    w = [[x[(P + i) * d + l] for l in range(d)] for i in range(P)]
    out = {
        "status": sol["status"],
        "objective": objective(X, y, D, v, w, hinge, beta),
        "solver_objective": sol["primal objective"] + const,
        "iterations": sol["iterations"],
        "tolerance": tol,
        "v": v,
        "w": w,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
