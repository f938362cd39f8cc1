"""Tiny summary tables of the two Fig. 3 studies, for the tests that draw their figures."""


def m_n_tables():
    """``(rates, predictions)`` of a success_vs_mn run: n in (5, 20), m in (10, 40, 120), r in
    (0.1, 0.25); every rule fails below the predicted m_needed = 150 / n and succeeds above it."""
    rates, predictions = [], []
    for n in (5, 20):
        for m in (10, 40, 120):
            predictions.append(dict(m=m, n=n, m_needed=150.0 / n, ls_unlikely=m < 150.0 / n,
                                    oracle_success_probability=float(m >= 150.0 / n)))
            for r in (0.1, 0.25):
                row = dict(r=r, n=n, m=m, separation_mean=5.0 * r)
                for rule in ("official", "honest", "oracle"):
                    rate = 0.0 if m < 150.0 / n else 1.0
                    row.update({f"{rule}_success_rate": rate, f"{rule}_success_low": 0.0,
                                f"{rule}_success_high": 1.0})
                rates.append(row)
    return rates, predictions


def separation_rates():
    """The rates of a success_vs_R run: sigma in (0, 0.5), three r, every rule at 0.1, 0.5, 0.9."""
    rows = []
    for sigma in (0.0, 0.5):
        for r, delta, rate in ((0.1, 0.5, 0.1), (0.2, 1.0, 0.5), (0.4, 2.0, 0.9)):
            row = {"sigma": sigma, "r": r, "separation_mean": delta, "trials": 10}
            for rule in ("official", "honest", "oracle"):
                row.update({f"{rule}_success_rate": rate, f"{rule}_success_low": max(rate - 0.1, 0),
                            f"{rule}_success_high": min(rate + 0.1, 1)})
            rows.append(row)
    return rows
