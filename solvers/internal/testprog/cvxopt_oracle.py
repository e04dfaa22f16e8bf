#!/usr/bin/python3
"""Independent oracle for the interior-point solvers of solvers/ipm, with
CVXOPT (Debian's python3-cvxopt; run with /usr/bin/python3):

    cvxopt_oracle.py [general | robust | batchnorm | ctgeneral | robustcnn] < program.json > answer.json

Mode "general" (the default) is the oracle for ipm.Solve, mode "robust" the
one for ipm.SolveRobust; both read a program on stdin and write
{"status", "objective" (recomputed from v and w), "solver_objective",
"iterations", "tolerance", "v", "w"} on stdout, the robust mode with
"violation" too.

general: the convex training program of Bai, Gautam and Sojoudi,
eq. (convex_general),

    minimize   l(sum_i D_i X (v_i - w_i), y) + beta * sum_i (||v_i|| + ||w_i||)
    subject to (2 D_i - I) X v_i >= 0,  (2 D_i - I) X w_i >= 0.

stdin:  {"X": [[...], ...], "y": [...], "D": [[0/1, ...], ...],
         "loss": "squared" | "hinge", "beta": b}
"solver_objective" is CVXOPT's primal objective plus the constant.

Squared loss l = 1/2 ||yhat - y||^2: coneqp with P = F'F, q = -F'y
(constant 1/2 ||y||^2 added back). Hinge loss l = (1/n) sum_k max(0, 1 - y_k
yhat_k): conelp with slacks xi >= 0, xi_k >= 1 - y_k yhat_k. Both use the
epigraphs t_j >= ||u_j|| as second-order cones. Variables, in order:
v_1..v_P, w_1..w_P (d each), t (2P), xi (n, hinge only).

batchnorm: eq. (BNregularizedtrainingconvex), the general program with the
data U' = [U, 1/sqrt(n)] from the oracle's own SVD of the centred raw X
(stdin as for general, X without a bias column); the answer adds "rank".

ctgeneral: eq. (ct_general) with an explicit F and block-diagonal G (see
solve_ctgeneral).

robustcnn: convex adversarial training of a two-layer CNN with average or
max pooling and the hinge, squared, BCE or logistic loss (see
solve_robustcnn).

robust: the robust convex training programs of section "Convex Adversarial
Training" (eq. hinge_adv_D, hinge_adv_D_lp, SOCP3).

stdin:  {"X": [[...]], "y": [...], "D": [[0/1, ...]], "loss": "hinge" |
         "squared" | "bce" | "logistic", "beta": b, "eps": e,
         "norm": "inf" | "2" | "1",
         "bias": true/false}
"objective" is recomputed from v, w by robust_objective below, and
"violation" is the largest violation of the robust constraints.

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

from cvxopt import lapack, matrix, spmatrix, solvers


# ---- both modes -------------------------------------------------------------

def solve(attempt, retry_inexact):
    """Runs attempt() (a CVXOPT solve) at the tolerance 1e-10 and returns its
    solution and the tolerance. CVXOPT can fail ("domain error") when its last
    steps leave the cone at very tight tolerances; then it retries a little
    looser (1e-9, 1e-8), as it does after a status other than "optimal" when
    retry_inexact."""
    for tol in (1e-10, 1e-9, 1e-8):
        solvers.options.update({"abstol": tol, "reltol": tol, "feastol": tol,
                                "maxiters": 200, "show_progress": False})
        try:
            sol = attempt()
        except (ArithmeticError, ValueError):
            continue
        if retry_inexact and sol["status"] != "optimal" and tol < 1e-8:
            continue
        return sol, tol
    raise RuntimeError("CVXOPT failed at every tolerance")


def weights(sol, d, P):
    """v_i = u_i and w_i = u_{P+i} from the solution x."""
    x = sol["x"]
    v = [[x[i * d + l] for l in range(d)] for i in range(P)]
    w = [[x[(P + i) * d + l] for l in range(d)] for i in range(P)]
    return v, w


def answer(sol, tol, v, w, **values):
    """The oracle's output: the solution's status and iterations, the
    tolerance, the weights and the named values."""
    return dict(status=sol["status"], iterations=sol.get("iterations", 0), tolerance=tol, v=v, w=w, **values)


# ---- mode "general" ---------------------------------------------------------

def build_general(prob):
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


def general_objective(X, y, D, v, w, hinge, beta):
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


def solve_general(prob):
    X, y, D, n, d, P, hinge, F, G, h, dims, c, const, beta = build_general(prob)
    nu = 2 * P * d
    nx = c.size[0]
    if not hinge:
        Q = matrix(0.0, (nx, nx))
        Q[:nu, :nu] = F[:, :nu].T * F[:, :nu]

    def attempt():
        if hinge:
            return solvers.conelp(c, G, h, dims)
        return solvers.coneqp(Q, c, G, h, dims)

    sol, tol = solve(attempt, retry_inexact=False)
    v, w = weights(sol, d, P)
    return answer(sol, tol, v, w,
                  objective=general_objective(X, y, D, v, w, hinge, beta),
                  solver_objective=sol["primal objective"] + const)


# ---- mode "batchnorm" -------------------------------------------------------

def bn_features(X):
    """U' = [U, 1/sqrt(n)] from the compact SVD (I - 11'/n) X = U S V' of
    rank r (singular values above max(n, d) * eps * s_1), by LAPACK's gesvd
    through CVXOPT: the oracle's own centring and SVD."""
    n, d = len(X), len(X[0])
    mean = [sum(X[k][l] for k in range(n)) / n for l in range(d)]
    A = matrix([[X[k][l] - mean[l] for k in range(n)] for l in range(d)])  # n x d, column-major
    m = min(n, d)
    S = matrix(0.0, (m, 1))
    U = matrix(0.0, (n, m))
    lapack.gesvd(A, S, jobu="S", U=U)
    cut = max(n, d) * 2.220446049250313e-16 * S[0]
    r = sum(1 for s in S if s > cut)
    return [[U[k, l] for l in range(r)] + [1.0 / math.sqrt(n)] for k in range(n)], r


def solve_batchnorm(prob):
    """eq. (BNregularizedtrainingconvex): the general program with U' of the
    raw data X (no bias column) in place of X."""
    U, r = bn_features(prob["X"])
    q = dict(prob)
    q["X"] = U
    out = solve_general(q)
    out["rank"] = r
    return out


# ---- mode "ctgeneral" -------------------------------------------------------

def solve_ctgeneral(prob):
    """eq. (ct_general) with explicit matrices: F (n x N, rows), the group
    sizes and each group's constraint block G_g (rows, or [] for none):

        minimize   l(F (w - w'), y) + beta * sum_g (||w_g|| + ||w'_g||)
        subject to G_g w_g >= 0,  G_g w'_g >= 0.

    Variables w, w' (N each), t (2K), xi (n, hinge only); the same cone
    program as mode general, written over F and the blocks."""
    F0, y, sizes, blocks = prob["F"], prob["y"], prob["sizes"], prob["G"]
    loss, beta = prob["loss"], float(prob["beta"])
    n, N, K = len(F0), len(F0[0]), len(sizes)
    hinge = loss == "hinge"
    if loss not in ("squared", "hinge"):
        raise ValueError("unknown loss %r" % loss)
    offs = [0]
    for s in sizes:
        offs.append(offs[-1] + s)
    nx = 2 * N + 2 * K + (n if hinge else 0)
    F = matrix(0.0, (n, nx))
    for k in range(n):
        for j in range(N):
            F[k, j] = F0[k][j]
            F[k, N + j] = -F0[k][j]
    vals, rows, cols, h = [], [], [], []
    row = 0
    for half in range(2):
        for g in range(K):
            for r in blocks[g]:
                for j, v in enumerate(r):
                    if v != 0:
                        vals.append(-v); rows.append(row); cols.append(half * N + offs[g] + j)
                h.append(0.0)
                row += 1
    if hinge:
        xi0 = 2 * N + 2 * K
        for k in range(n):
            vals.append(-1.0); rows.append(row); cols.append(xi0 + k)
            h.append(0.0)
            row += 1
        for k in range(n):
            for c in range(2 * N):
                if F[k, c] != 0:
                    vals.append(-y[k] * F[k, c]); rows.append(row); cols.append(c)
            vals.append(-1.0); rows.append(row); cols.append(xi0 + k)
            h.append(-1.0)
            row += 1
    nl = row
    for half in range(2):
        for g in range(K):
            vals.append(-1.0); rows.append(row); cols.append(2 * N + half * K + g)
            h.append(0.0)
            row += 1
            for j in range(sizes[g]):
                vals.append(-1.0); rows.append(row); cols.append(half * N + offs[g] + j)
                h.append(0.0)
                row += 1
    G = spmatrix(vals, rows, cols, (row, nx))
    h = matrix(h, (row, 1))
    dims = {"l": nl, "q": [s + 1 for s in sizes] * 2, "s": []}
    c = matrix(0.0, (nx, 1))
    for g in range(2 * K):
        c[2 * N + g] = beta
    if hinge:
        for k in range(n):
            c[2 * N + 2 * K + k] = 1.0 / n
        const = 0.0
        attempt = lambda: solvers.conelp(c, G, h, dims)
    else:
        c += -(F.T * matrix(y, (n, 1)))
        const = 0.5 * sum(v * v for v in y)
        Q = F.T * F
        attempt = lambda: solvers.coneqp(Q, c, G, h, dims)
    sol, tol = solve(attempt, retry_inexact=False)
    x = sol["x"]
    w = [x[j] for j in range(N)]
    wp = [x[N + j] for j in range(N)]
    yhat = [sum(F0[k][j] * (w[j] - wp[j]) for j in range(N)) for k in range(n)]
    if hinge:
        lval = sum(max(0.0, 1.0 - y[k] * yhat[k]) for k in range(n)) / n
    else:
        lval = 0.5 * sum((yhat[k] - y[k]) ** 2 for k in range(n))
    reg = sum(math.sqrt(sum(v * v for v in u[offs[g]:offs[g + 1]])) for g in range(K) for u in (w, wp))
    return answer(sol, tol, [w], [wp], objective=lval + beta * reg,
                  solver_objective=sol["primal objective"] + const)


# ---- mode "robustcnn" -------------------------------------------------------

def solve_robustcnn(prob):
    """Convex adversarial training of a two-layer CNN with average ("pool":
    "avg", the default) or max ("pool": "max") pooling and the hinge (the
    default), squared, BCE or logistic loss against ||delta||_inf <= eps on
    every image's pixels, written from its definition: images X (rows, CHW
    order), "shape" [C, H, W], "conv" [size, stride, pad], "bias" (filters
    with a bias: every patch ends with a constant 1), "signs"[i][k][m] the
    pattern of filter group i on patch k of image m (max pooling:
    signs[i][0][m] the sign of the winner's response and "argmax"[i][m] the
    winning patch). For each patch the pixels it reads are listed (padding
    reads none). Average pooling: f_m sums (1/K) x_km' u over the patches
    with sign 1, and every patch has a robust sign constraint
    s * (x_km' u) - eps * sum_{l reads a pixel} |u_l| >= 0. Max pooling: f_m
    is x_am' u for the winner a when its sign is 1, the winner has the
    robust sign constraint, and for every other patch k the robust winner
    constraint (x_am - x_km)' u - eps * sum_pixels |lay_a(u) - lay_k(u)| >= 0,
    lay_k(u) the filter laid on patch k's pixels (one epigraph variable per
    pixel). With g_m the gradient of f at x_m over the pixels the worst-case
    terms are max(0, 1 - y_m f_m + eps ||g_m||_1) (hinge, mean),
    (|f_m - y_m| + eps ||g_m||_1)^2 / 2 (squared, sum), softplus(c_m f_m +
    |c_m| eps ||g_m||_1) (mean; BCE c_m = 2 (1 - 2 y_m), logistic c_m =
    -y_m). The absolute values are epigraphs; conelp, coneqp or cp over u =
    (v_1..v_P, w_1..w_P), t (2P), a = |u| (2P f), xi (n), e (n * pixels),
    then the winner epigraphs.

    "pool": "max-bound" is max pooling's winner-bound program: no sign or
    winner constraints. Image m's loss sees the worst margin bounded by the
    filters on its favourable side (the v half when the loss falls as f
    grows: hinge and logistic y_m = 1, BCE y_m = 1; else the w half) through
    their winners as above, f_m and g_m from that half only, plus, for each
    filter u of the other half, s_mj >= max(0, max_k x_km' u + eps * sum_{l
    reads a pixel} |u_l|), added to the margin's bound (times |c_m|)."""
    X, y, (C, H, W), (size, stride, pad) = prob["X"], prob["y"], prob["shape"], prob["conv"]
    bias = bool(prob.get("bias", False))
    loss = prob.get("loss", "hinge")
    bound = prob.get("pool", "avg") == "max-bound"
    maxpool = prob.get("pool", "avg") == "max" or bound
    argmax = prob.get("argmax")
    signs, beta, eps = prob["signs"], float(prob["beta"]), float(prob["eps"])
    n, P = len(X), len(signs)
    f = C * size * size + (1 if bias else 0)
    npix = C * H * W
    rows_out = (H + 2 * pad - size) // stride + 1
    cols_out = (W + 2 * pad - size) // stride + 1
    patches = []  # per patch position: list of pixel indices or -1
    for a in range(rows_out):
        for b in range(cols_out):
            idx = []
            for c in range(C):
                for i in range(size):
                    for j in range(size):
                        hh, ww = a * stride + i - pad, b * stride + j - pad
                        idx.append((c * H + hh) * W + ww if 0 <= hh < H and 0 <= ww < W else -1)
            if bias:
                idx.append(-2)  # the filter's bias: a constant 1, not a pixel
            patches.append(idx)
    K = len(patches)
    ng = 2 * P
    nu = ng * f
    ot, oa, oxi = nu, nu + ng, nu + ng + nu
    oe = oxi + n
    owin = oe + n * npix
    winners = []  # (group j, image m, winner a, other patch k)
    if maxpool and not bound:
        for j in range(ng):
            for m in range(n):
                for k in range(K):
                    if k != argmax[j % P][m]:
                        winners.append((j, m, argmax[j % P][m], k))
    def union(a, k):
        return sorted({q for q in patches[a] + patches[k] if q >= 0})

    oup = owin + sum(len(union(a, k)) for _, _, a, k in winners)
    nx = oup + (n * P if bound else 0)

    def scale(m):
        """c_m: the loss grows with c_m f_m"""
        if loss == "bce":
            return 2.0 * (1.0 - 2.0 * y[m])
        return -y[m]

    def favourable(m, j):
        """whether filter group j (v: j < P) answers in image m's f_m"""
        if not bound:
            return True
        return (j < P) == (scale(m) < 0)

    def val(m, q):
        return X[m][q] if q >= 0 else (1.0 if q == -2 else 0.0)

    def terms(i, m):
        """the (patch, weight) pairs through which group i answers on image m"""
        if maxpool:
            return [(argmax[i][m], 1.0)] if signs[i][0][m] else []
        return [(k, 1.0 / K) for k in range(K) if signs[i][k][m]]

    def sign_rows(i, m):
        """the (patch, sign) of group i's robust sign constraints on image m"""
        if bound:
            return []
        if maxpool:
            return [(argmax[i][m], 1.0 if signs[i][0][m] else -1.0)]
        return [(k, 1.0 if signs[i][k][m] else -1.0) for k in range(K)]

    lin = []  # (dict, rhs): sum coef x <= rhs
    for j in range(ng):
        i = j % P
        for m in range(n):
            for k, s in sign_rows(i, m):
                row = {}
                for l, q in enumerate(patches[k]):
                    if q != -1:
                        row[j * f + l] = row.get(j * f + l, 0.0) - s * val(m, q)
                    if q >= 0:
                        row[oa + j * f + l] = row.get(oa + j * f + l, 0.0) + eps
                lin.append((row, 0.0))
    ev = owin  # the next epigraph variable of a winner row's pixel
    for j, m, a, k in winners:
        row = {}
        lay = {}  # pixel -> {column: coefficient} of lay_a(u) - lay_k(u)
        for patch, sg in ((a, 1.0), (k, -1.0)):
            for l, q in enumerate(patches[patch]):
                if q != -1:
                    row[j * f + l] = row.get(j * f + l, 0.0) - sg * val(m, q)
                if q >= 0:
                    lay.setdefault(q, {})
                    lay[q][j * f + l] = lay[q].get(j * f + l, 0.0) + sg
        for q in union(a, k):
            row[ev] = eps
            for sg in (1.0, -1.0):
                r2 = {col: sg * cf for col, cf in lay[q].items()}
                r2[ev] = -1.0
                lin.append((r2, 0.0))
            ev += 1
        lin.append((row, 0.0))
    for c in range(nu):
        lin.append(({c: 1.0, oa + c: -1.0}, 0.0))
        lin.append(({c: -1.0, oa + c: -1.0}, 0.0))

    def frow(m, a):
        """a * f_m as {column: coefficient}"""
        row = {}
        for i in range(P):
            for k, wt in terms(i, m):
                for l, q in enumerate(patches[k]):
                    if q != -1:
                        for j, sg in ((i, 1.0), (P + i, -1.0)):
                            if favourable(m, j):
                                row[j * f + l] = row.get(j * f + l, 0.0) + a * sg * val(m, q) * wt
        return row

    def with_e(row, m, coef):
        for q in range(npix):
            row[oe + m * npix + q] = coef
        row[oxi + m] = -1.0
        if bound:  # coef = |c_m| eps: the upper epigraphs enter with |c_m|
            for i in range(P):
                row[oup + m * P + i] = coef / eps
        return row

    if bound:
        for m in range(n):
            for i in range(P):
                j = P + i if favourable(m, i) else i  # the adverse half's filter
                sv = oup + m * P + i
                lin.append(({sv: -1.0}, 0.0))
                for k in range(K):
                    row = {sv: -1.0}
                    for l, q in enumerate(patches[k]):
                        if q != -1:
                            row[j * f + l] = row.get(j * f + l, 0.0) + val(m, q)
                        if q >= 0:
                            row[oa + j * f + l] = row.get(oa + j * f + l, 0.0) + eps
                    lin.append((row, 0.0))

    for m in range(n):
        if loss == "squared":  # z_m >= |f_m - y_m| + eps ||g_m||_1, z in xi's place
            for a in (1.0, -1.0):
                lin.append((with_e(frow(m, a), m, eps), a * y[m]))
        elif loss in ("bce", "logistic"):  # zeta_m >= c_m f_m + |c_m| eps ||g_m||_1
            c = 2.0 * (1.0 - 2.0 * y[m]) if loss == "bce" else -y[m]
            lin.append((with_e(frow(m, c), m, abs(c) * eps), 0.0))
        else:
            lin.append(({oxi + m: -1.0}, 0.0))
            lin.append((with_e(frow(m, -y[m]), m, eps), -1.0))
    for m in range(n):
        grads = [dict() for _ in range(npix)]
        for i in range(P):
            for k, wt in terms(i, m):
                for l, q in enumerate(patches[k]):
                    if q >= 0:
                        for j, sg in ((i, 1.0), (P + i, -1.0)):
                            if favourable(m, j):
                                grads[q][j * f + l] = grads[q].get(j * f + l, 0.0) + sg * wt
        for q in range(npix):
            for sg in (1.0, -1.0):
                row = {c: sg * a for c, a in grads[q].items()}
                row[oe + m * npix + q] = -1.0
                lin.append((row, 0.0))
    vals, rr, cc, h = [], [], [], []
    for r, (row, rhs) in enumerate(lin):
        for c, a in row.items():
            if a != 0:
                vals.append(a); rr.append(r); cc.append(c)
        h.append(rhs)
    r = len(lin)
    for j in range(ng):
        vals.append(-1.0); rr.append(r); cc.append(ot + j)
        h.append(0.0)
        r += 1
        for l in range(f):
            vals.append(-1.0); rr.append(r); cc.append(j * f + l)
            h.append(0.0)
            r += 1
    G = spmatrix(vals, rr, cc, (r, nx))
    h = matrix(h, (r, 1))
    c = matrix(0.0, (nx, 1))
    for j in range(ng):
        c[ot + j] = beta
    dims = {"l": len(lin), "q": [f + 1] * ng, "s": []}
    if loss == "squared":  # 1/2 sum z^2
        Q = spmatrix([1.0] * n, list(range(oxi, oxi + n)), list(range(oxi, oxi + n)), (nx, nx))
        sol, tol = solve(lambda: solvers.coneqp(Q, c, G, h, dims), retry_inexact=True)
    elif loss in ("bce", "logistic"):
        sol, tol = solve(lambda: solvers.cp(smooth_objective(c, oxi, n, nx), G, h, dims), retry_inexact=True)
        x = sol["x"]
        obj = sum(beta * x[ot + j] for j in range(ng)) + sum(softplus(x[oxi + m]) for m in range(n)) / n
        return dict(status=sol["status"], tolerance=tol, objective=obj)
    else:
        for m in range(n):
            c[oxi + m] = 1.0 / n
        sol, tol = solve(lambda: solvers.conelp(c, G, h, dims), retry_inexact=True)
    return dict(status=sol["status"], tolerance=tol, objective=sol["primal objective"])


# ---- mode "robust" ----------------------------------------------------------

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


def build_robust(prob):
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


def solve_robust(prob):
    X, y, D, n, d, P, loss, beta, eps, norm, bias, Q, c, G, h, dims = build_robust(prob)

    def attempt():
        if loss in ("bce", "logistic"):
            return solvers.cp(smooth_objective(c, 2 * P * d + 2 * P, n, len(c)), G, h, dims)
        if Q is None:
            return solvers.conelp(c, G, h, dims)
        return solvers.coneqp(Q, c, G, h, dims)

    sol, tol = solve(attempt, retry_inexact=True)
    v, w = weights(sol, d, P)
    return answer(sol, tol, v, w,
                  objective=robust_objective(X, y, D, v, w, loss, beta, eps, norm, bias),
                  solver_objective=sol["primal objective"] if "primal objective" in sol else None,
                  violation=robust_violation(X, D, v, w, eps, norm, bias))


# ---- main -------------------------------------------------------------------

MODES = {"general": solve_general, "robust": solve_robust, "batchnorm": solve_batchnorm, "ctgeneral": solve_ctgeneral, "robustcnn": solve_robustcnn}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "general"
    if mode not in MODES or len(sys.argv) > 2:
        sys.exit("usage: cvxopt_oracle.py [general | robust | batchnorm | ctgeneral | robustcnn] < program.json (one program, or a list of programs)")
    prob = json.load(sys.stdin)
    if isinstance(prob, list):  # a batch: one answer per program
        json.dump([MODES[mode](p) for p in prob], sys.stdout)
    else:
        json.dump(MODES[mode](prob), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
