#!/usr/bin/python3
"""Reference values for models_test.go, computed with numpy.

Points from known functions with 3% multiplicative noise (seeded), and for
each model kind the coefficients and R² as numpy computes them: np.polyfit
of y (or ln y) on the transformed x, R² = 1 - SS_res/SS_tot in the original
y. Also the Doane bin count (np.histogram_bin_edges(..., 'doane')),
Silverman's bandwidth and Nadaraya-Watson fitted values.

Run (Debian: apt-get install python3-numpy): /usr/bin/python3 testdata/reference.py > testdata/reference.json
"""
import json
import numpy as np

rng = np.random.default_rng(20260501)
x = np.arange(1, 21, dtype=float)
truth = {
    "constant": lambda x: 50.0 + 0 * x,
    "logarithmic": lambda x: 5.0 + 30.0 * np.log(x),
    "linear": lambda x: 3.0 + 2.5 * x,
    "quadratic": lambda x: 10.0 + 0.8 * x**2,
    "power": lambda x: 2.0 * x**1.5,
    "exponential": lambda x: 1.5 * np.exp(0.25 * x),
}


def fit(kind, x, y):
    if kind == "constant":
        return [float(y.mean()), 0.0], np.full_like(y, y.mean())
    if kind in ("power", "exponential"):
        tx = np.log(x) if kind == "power" else x
        b, a = np.polyfit(tx, np.log(y), 1)
        yhat = np.exp(a) * (x**b if kind == "power" else np.exp(b * x))
        return [float(b), float(np.exp(a))], yhat
    tx = {"logarithmic": np.log(x), "linear": x, "quadratic": x**2}[kind]
    b1, b0 = np.polyfit(tx, y, 1)
    return [float(b0), float(b1)], b0 + b1 * tx


def r2(y, yhat):
    ss_res = ((y - yhat) ** 2).sum()
    ss_tot = ((y - y.mean()) ** 2).sum()
    return 0.0 if ss_tot == 0 else float(1 - ss_res / ss_tot)


def silverman(x):
    sd = x.std(ddof=1)
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    a = min(sd, iqr / 1.34) if iqr > 0 else sd
    return 0.9 * a * len(x) ** -0.2


def nw(x, y, h, kernel):
    u = (x[:, None] - x[None, :]) / h
    k = np.where(np.abs(u) <= 1, 0.5, 0.0) if kernel == "box" else np.exp(-u * u / 2)
    return (k * y[None, :]).sum(1) / k.sum(1)


out = {"x": x.tolist(), "cases": []}
for name, f in truth.items():
    y = f(x) * (1 + 0.03 * rng.standard_normal(len(x)))
    fits = {}
    for kind in truth:
        coef, yhat = fit(kind, x, y)
        fits[kind] = {"b": coef, "r2": 0.0 if kind == "constant" else r2(y, yhat)}
    h = silverman(x)
    out["cases"].append({
        "truth": name,
        "y": y.tolist(),
        "fits": fits,
        "doane_bins_y": len(np.histogram_bin_edges(y, bins="doane")) - 1,
        "silverman": h,
        "nw_gaussian": nw(x, y, h, "gaussian").tolist(),
        "nw_box": nw(x, y, 2.0, "box").tolist(),
    })
print(json.dumps(out, indent=1))
