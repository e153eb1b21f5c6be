#!/usr/bin/python3
"""Reference values for models_test.go, computed with numpy and statsmodels.

Points from known functions with 3% multiplicative noise (seeded), and for
each model kind the coefficients and R² as numpy computes them: np.polyfit
of y (or ln y) on the transformed x, R² = 1 - SS_res/SS_tot in the original
y. Also the Doane bin count (np.histogram_bin_edges(..., 'doane')),
Silverman's bandwidth and Nadaraya-Watson fitted values. For the kinds
that are linear in y (logarithmic, linear, quadratic), R² as statsmodels'
OLS computes it, and the coefficients and R² of statsmodels' WLS with the
fixed weights WEIGHTS (its rsquared: 1 - sum w(y-yhat)^2 / sum w(y-ybar_w)^2).

Run (Debian: apt-get install python3-numpy python3-statsmodels):
/usr/bin/python3 testdata/reference.py > testdata/reference.json
"""
import json
import numpy as np
import statsmodels.api as sm

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


# Weights of the WLS reference: uneven, one point left out (weight 0), as
# robust weights leave out an outlier.
weights = np.array([0.25 + 0.75 * ((i * 7) % 5) / 4 for i in range(len(x))])
weights[3] = 0.0

out = {"x": x.tolist(), "weights": weights.tolist(), "cases": []}
for name, f in truth.items():
    y = f(x) * (1 + 0.03 * rng.standard_normal(len(x)))
    fits = {}
    for kind in truth:
        coef, yhat = fit(kind, x, y)
        fits[kind] = {"b": coef, "r2": 0.0 if kind == "constant" else r2(y, yhat)}
    sm_ols, sm_wls = {}, {}
    for kind in ("logarithmic", "linear", "quadratic"):
        tx = {"logarithmic": np.log(x), "linear": x, "quadratic": x**2}[kind]
        X = sm.add_constant(tx)
        sm_ols[kind] = float(sm.OLS(y, X).fit().rsquared)
        w = sm.WLS(y, X, weights=weights).fit()
        sm_wls[kind] = {"b": [float(w.params[0]), float(w.params[1])], "r2": float(w.rsquared)}
    h = silverman(x)
    out["cases"].append({
        "truth": name,
        "y": y.tolist(),
        "fits": fits,
        "doane_bins_y": len(np.histogram_bin_edges(y, bins="doane")) - 1,
        "silverman": h,
        "nw_gaussian": nw(x, y, h, "gaussian").tolist(),
        "nw_box": nw(x, y, 2.0, "box").tolist(),
        "statsmodels_ols_r2": sm_ols,
        "statsmodels_wls": sm_wls,
    })
print(json.dumps(out, indent=1))
