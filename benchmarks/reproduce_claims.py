"""Each source study's headline comparison, run in simulation with the ready-made studies
(configs/study/*.yaml, evaluated by studies.runner): the claim, our numbers, reproduced or not,
on the studies' first scenarios (one path per bottleneck, steady competition, a receive buffer
that never limits) and on the networks that rebuild them (envs/network.py: MPTCP-TUT's full mesh
of shared bottlenecks, KATO's arriving and leaving competition, LEEYOO under quic-go's flow
control).

    python benchmarks/reproduce_claims.py [--runs 10] [--docs docs/claims.md]

``--docs`` writes the table (claim, where in the study, simulator, live, verdict, cause) to a
Markdown page; the live column says which claims were checked on a live testbed and the cause
column (``CAUSES`` below, written from the numbers of the last run) why a claim does not hold.

Nothing here is tuned to make a claim come out: a claim that does not reproduce is a finding.
It also times the MPTCP-TUT grid (5 schedulers x 4 coupled CCs x 8 experiments, 60 s each; the
study's 160 runs, one per combination), the figure issue #3 asks for.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envs.metrics import mean_ci  # noqa: E402
from studies import runner, spec  # noqa: E402


def run(name: str, runs: int, out: Path) -> tuple[dict, float]:
    """The study's cells (per-run metrics) and its wall time."""
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose(config_name="evaluate", overrides=[f"study={name}", f"study.runs={runs}"])
    study = spec.from_config(cfg, out / name)
    start = time.perf_counter()
    with runner.backend(study) as backend:
        cells = runner.evaluate_cells(study, backend)
    return {k: v["metrics"] for k, v in cells.items()}, time.perf_counter() - start


def m(cells: dict, label: str, scen: str, cc: str, metric: str) -> float:
    return mean_ci(cells[(label, scen, cc)][metric])[0]


Row = tuple[str, str, bool, str]  # claim, our numbers, holds, kind (what the live column checks the same way)
Cells = dict  # (label, scenario, cc) -> {metric: per-run values}


def sod(runs: int, out: Path) -> list[Row]:
    cells, _ = run("sod", runs, out)
    rows = []
    for cc in ("reno", "cubic"):
        wins, parts = 0, []
        for k in range(1, 7):
            s = f"sod_{k}"
            r = {x: m(cells, x, s, cc, "reorder_max_bytes") / 1e3 for x in ("sod", "rr", "atlb")}
            wins += r["sod"] < min(r["rr"], r["atlb"])
            parts.append(f"{s}: {r['sod']:.0f}/{r['rr']:.0f}/{r['atlb']:.0f}")
        rows.append((f"SOD ({cc}): smaller max reorder buffer than RR and ATLB (kB, SOD/RR/ATLB)",
                     f"{wins}/6 scenarios; " + ", ".join(parts), wins == 6, "sod"))
    return rows


def mptcp_tut(runs: int, out: Path, study: str = "mptcp_tut") -> tuple[list[Row], float]:
    cells, wall = run(study, runs, out)
    prefix = "mptcp_tut_mesh_e" if study == "mptcp_tut_mesh" else "mptcp_tut_e"
    where = " (full mesh)" if study == "mptcp_tut_mesh" else ""
    rows = mptcp_tut_checks(cells, [f"{prefix}{k}" for k in range(8)], [f"{prefix}{k}" for k in (2, 3, 6, 7)],
                            ("lia", "olia", "balia", "wvegas"), where, " (e2, e3, e6, e7 x 4 CCs)")
    return rows, wall


MPTCP_TUT_SCHEDULERS = ("rr", "minrtt", "hsr", "lws", "lts")


def mptcp_tut_checks(cells: Cells, scens: list[str], hetero: list[str], ccs: tuple[str, ...], where: str,
                     grid: str) -> list[Row]:
    """RR worst on the heterogeneous experiments; HSR, LWS, LTS at or above LL (minRTT) within LL's CI."""
    scheds = MPTCP_TUT_SCHEDULERS
    worst = [min(scheds, key=lambda x: m(cells, x, s, cc, "goodput_mbps")) for s in hetero for cc in ccs]
    n_rr = sum(w == "rr" for w in worst)
    rows = [(f"MPTCP-TUT{where}: RR worst on heterogeneous capacities{grid}",
             f"RR worst in {n_rr}/{len(worst)} cells (others worst: "
             + ", ".join(f"{x} {worst.count(x)}" for x in scheds if x != 'rr' and worst.count(x)) + ")",
             n_rr >= 0.75 * len(worst), "mptcp_tut:rr")]
    for x in ("hsr", "lws", "lts"):
        ok, ratios = 0, []
        for s in scens:
            for cc in ccs:
                mine, ll = cells[(x, s, cc)]["goodput_mbps"], cells[("minrtt", s, cc)]["goodput_mbps"]
                ok += mean_ci(mine)[0] >= mean_ci(ll)[0] - mean_ci(ll)[1]  # at or above LL, within LL's CI
                ratios.append(mean_ci(mine)[0] / max(mean_ci(ll)[0], 1e-9))
        n = len(scens) * len(ccs)
        rows.append((f"MPTCP-TUT{where}: {x.upper()} at or above LL (minRTT) goodput",
                     f"{ok}/{n} cells; goodput ratio to LL median {np.median(ratios):.2f} "
                     f"(min {min(ratios):.2f})", ok >= 0.75 * n, f"mptcp_tut:{x}"))
    return rows


def mptcp_tut_receive_buffer(rcvbuf: float = 256 * 1024) -> list[Row]:
    """A sensitivity, not the study's setting: the full mesh's heterogeneous experiments with a
    receive buffer that limits (one run per cell, seed 0), where head-of-line blocking behind the
    slower subflows throttles the sender."""
    from envs.scenario import load_scenario, scenario_from_dict
    from envs.sim.simulator import SimConfig, Simulator
    scheds = ("rr", "minrtt", "hsr", "lws", "lts")
    worst, ok, cells = [], dict.fromkeys(scheds[2:], 0), 0
    for k in (2, 3, 6, 7):
        base = load_scenario(f"mptcp_tut_mesh_e{k}").model_dump(exclude_none=True)
        scen = scenario_from_dict({**base, "receive_buffer_bytes": rcvbuf})
        for cc in ("lia", "olia", "balia", "wvegas"):
            g = {}
            for x in scheds:
                sim = Simulator(scen, cc, scheduler=x, batch=1, seed=0, config=SimConfig(stack="linux"))
                sim.reset()
                sim.run()
                g[x] = float(sim.results()["goodput_mbps"][0])
            worst.append(min(scheds, key=g.__getitem__))
            cells += 1
            for x in ok:
                ok[x] += g[x] >= 0.99 * g["minrtt"]
    return [(f"MPTCP-TUT (full mesh, {rcvbuf / 1024:.0f} kB receive buffer; a sensitivity): RR worst, HSR, LWS, "
             "LTS at or above LL (within 1%) on e2, e3, e6, e7 x 4 CCs",
             f"RR worst in {worst.count('rr')}/{cells} cells; at or above LL: "
             + ", ".join(f"{x.upper()} {n}/{cells}" for x, n in ok.items()),
             worst.count("rr") >= 0.75 * cells and min(ok.values()) >= 0.75 * cells, "mptcp_tut:all")]


def kato(runs: int, out: Path, study: str = "kato") -> list[Row]:
    cells, _ = run(study, runs, out)
    scens = ("kato_churn_3", "kato_churn_6") if study == "kato_churn" else tuple(f"kato_{k}" for k in range(1, 7))
    where = " (arriving and leaving competition)" if study == "kato_churn" else ""
    return kato_checks(cells, scens, "lia", where)


def kato_checks(cells: Cells, scens: tuple[str, ...], cc: str, where: str) -> list[Row]:
    """Per alpha: KATO's 1 s throughput variance below minRTT's beyond both 95% CIs, at a mean
    within 10%, in at least 2/3 of the scenarios."""
    rows = []
    for alpha in ("0.25", "0.5", "0.75"):
        label, parts, wins = f"kato_{alpha}", [], 0
        for s in scens:
            (v, cv), (v0, cv0) = (mean_ci(cells[(x, s, cc)]["throughput_var_mbps2"]) for x in (label, "minrtt"))
            mu, mu0 = m(cells, label, s, cc, "throughput_mean_mbps"), m(cells, "minrtt", s, cc, "throughput_mean_mbps")
            similar = abs(mu - mu0) <= 0.1 * mu0
            wins += v0 - v > np.hypot(cv, cv0) and similar  # lower beyond the runs' noise, mean within 10%
            parts.append(f"{s}: var {v:.2f}/{v0:.2f}, mean {mu:.2f}/{mu0:.2f}")
        rows.append((f"KATO{where} alpha={alpha}: lower 1 s throughput variance than minRTT (beyond the 95% CIs) "
                     f"at a mean within 10% ({cc.upper() if cc == 'lia' else cc}; KATO/minRTT)",
                     f"{wins}/{len(scens)} scenarios; " + "; ".join(parts), wins >= 2 * len(scens) / 3,
                     f"kato:{alpha}"))
    return rows


def leeyoo(runs: int, out: Path, study: str = "leeyoo") -> list[Row]:
    cells, _ = run(study, runs, out)
    s = "leeyoo_flow_dash" if study == "leeyoo_flow" else "leeyoo_static_dash"
    where = " (quic-go flow control)" if study == "leeyoo_flow" else ""
    return [leeyoo_check(cells, s, "cubic", where)]


def leeyoo_check(cells: Cells, s: str, cc: str, where: str = "") -> Row:
    """ECF's chunk download time below minRTT's beyond both 95% CIs."""
    e, mr = (cells[(x, s, cc)]["download_time_s"] for x in ("ecf", "minrtt"))
    (me, ce), (mm, cm) = mean_ci(e), mean_ci(mr)
    text = f"ECF {me * 1e3:.0f} ± {ce * 1e3:.0f} ms vs minRTT {mm * 1e3:.0f} ± {cm * 1e3:.0f} ms per chunk"
    if "avg_bitrate_mbps" in cells[("ecf", s, cc)]:
        br = m(cells, "ecf", s, cc, "avg_bitrate_mbps"), m(cells, "minrtt", s, cc, "avg_bitrate_mbps")
        text += f"; bitrate {br[0]:.2f} vs {br[1]:.2f} Mbit/s"
    return (f"LEEYOO static{where}: ECF beats minRTT on chunk download time", text, me + ce < mm - cm, "leeyoo")


# Where each claim stands in its study (the comparison docs/scenarios.md describes; the studies'
# figure numbers are not recorded there), keyed by the claim's first words.
WHERE = {
    "SOD": "SOD: maximum out-of-order queue per scenario, SOD against RR and ATLB",
    "MPTCP-TUT": "MPTCP-TUT: goodput of the 20 scheduler x CC combinations in e0-e7",
    "KATO": "KATO: throughput mean and variance with 95% CIs, kato_1-6",
    "LEEYOO": "LEEYOO: chunk download time box plots, leeyoo_static",
}
# Why a claim does not hold in simulation, from the numbers of the last run (docs/claims.md).
_BACKLOGGED = ("every subflow of a backlogged transfer is window-limited and any work-conserving scheduler "
               "fills every window: goodput is what the bottlenecks and the CC give")
CAUSES: dict[str, str] = {
    "MPTCP-TUT": f"{_BACKLOGGED}; the receive buffer (RFC 6182's sizing) never limits, so the order of "
                 "the packets over the paths costs nothing (goodput ratios to LL 0.97-1.02)",
    "MPTCP-TUT (full mesh)": f"{_BACKLOGGED} (mesh e3: 34.89 Mbit/s for all five, the client-side "
                             "bottlenecks' 35); the receive buffer (3.15 MB by RFC 6182) never limits. With "
                             "a buffer that limits the pattern appears in part (next row)",
    "MPTCP-TUT (full mesh, 256 kB receive buffer; a sensitivity)":
        "only e3 (delays 5-80 ms, no loss) separates them: RR 17.8 against 24.9-25.0 Mbit/s for the "
        "others under LIA, OLIA and BALIA, head-of-line blocking behind the 80 ms subflows; in e2 "
        "(equal delays) nothing blocks, and in e6/e7 loss keeps the windows too small for the buffer "
        "to limit: the five lie within 3% (one run per cell: noise decides the order)",
    "KATO": "with 10-20 competing flows at 1-3% loss each subflow's window is a few packets and always "
            "full: the scheduler seldom has two paths with room, so KATO and minRTT send alike; its "
            "variance is set by the competition (bulk and a web workload of 50 kB objects alike: "
            "kato_churn_3 web 0.050 vs 0.050 Mbit/s^2)",
    "KATO (arriving and leaving competition)": "as for KATO: the competition's churn moves both "
                                               "schedulers' throughput alike (kato_churn_3: variance "
                                               "0.128 vs 0.128, identical runs)",
    "LEEYOO static": "ECF waits for the 5 ms path more than it pays: it puts 18% of the bytes on the "
                     "77 ms path against minRTT's 24% (60 chunks, seed 0) and each chunk ends later",
    "LEEYOO static (quic-go flow control)": "the auto-tuned window reaches the chunk's needs within a "
                                            "few RTTs and then never limits; ECF's extra waiting "
                                            "remains (see the row above)",
}
# What the live runs (tests/data/claims_live.json, benchmarks/claims_live.py) found where the
# simulator and the live stack differ, by claim kind; written from the numbers of that file.
LIVE_CAUSES: dict[str, str] = {
    "leeyoo": ("as in simulation ECF puts fewer bytes on the 77 ms path (8.6% against minRTT's 10.9%) and "
               "finishes later; live even later than the 20 Mbit/s path alone would take (500 ms): 7 of 10 "
               "ECF chunks took 819-832 ms, 3 took 627-657 ms, minRTT's 480-534 ms; what holds ECF's last "
               "packets back in XQUIC was not isolated"),
    "mptcp_tut:rr": "live too the five schedulers get about the same goodput: on mesh e3 30.7-31.1 Mbit/s (RR 30.8, LL 31.1, the client-side bottlenecks' 35 Mbit/s fill whatever the order), on the lossy mesh e7 3.4-3.8 Mbit/s over 20 s (RR 3.54, LL 3.75, spread of the runs +-0.3); LTS is lowest in both; the at-or-above-LL tests are decided by differences of 0-9% inside the runs' spread, with XQUIC's Reno standing in for the coupled CCs",
    "mptcp_tut:hsr": "live too the five schedulers get about the same goodput: on mesh e3 30.7-31.1 Mbit/s (RR 30.8, LL 31.1, the client-side bottlenecks' 35 Mbit/s fill whatever the order), on the lossy mesh e7 3.4-3.8 Mbit/s over 20 s (RR 3.54, LL 3.75, spread of the runs +-0.3); LTS is lowest in both; the at-or-above-LL tests are decided by differences of 0-9% inside the runs' spread, with XQUIC's Reno standing in for the coupled CCs",
    "mptcp_tut:lws": "live too the five schedulers get about the same goodput: on mesh e3 30.7-31.1 Mbit/s (RR 30.8, LL 31.1, the client-side bottlenecks' 35 Mbit/s fill whatever the order), on the lossy mesh e7 3.4-3.8 Mbit/s over 20 s (RR 3.54, LL 3.75, spread of the runs +-0.3); LTS is lowest in both; the at-or-above-LL tests are decided by differences of 0-9% inside the runs' spread, with XQUIC's Reno standing in for the coupled CCs",
    "mptcp_tut:lts": "live too the five schedulers get about the same goodput: on mesh e3 30.7-31.1 Mbit/s (RR 30.8, LL 31.1, the client-side bottlenecks' 35 Mbit/s fill whatever the order), on the lossy mesh e7 3.4-3.8 Mbit/s over 20 s (RR 3.54, LL 3.75, spread of the runs +-0.3); LTS is lowest in both; the at-or-above-LL tests are decided by differences of 0-9% inside the runs' spread, with XQUIC's Reno standing in for the coupled CCs",
    "mptcp_tut:all": "live too the five schedulers get about the same goodput: on mesh e3 30.7-31.1 Mbit/s (RR 30.8, LL 31.1, the client-side bottlenecks' 35 Mbit/s fill whatever the order), on the lossy mesh e7 3.4-3.8 Mbit/s over 20 s (RR 3.54, LL 3.75, spread of the runs +-0.3); LTS is lowest in both; the at-or-above-LL tests are decided by differences of 0-9% inside the runs' spread, with XQUIC's Reno standing in for the coupled CCs",
    "kato:0.25": "as in simulation, no alpha lowers the variance beyond the runs' noise: per-run variances spread widely under 10-20 competing flows (minRTT on kato_4: 0.22-1.27 (Mbit/s)^2 over 6 runs). The point estimate of alpha=0.25 on kato_4 is half minRTT's (0.29 +- 0.10 against 0.60 +- 0.43, mean 1.35 against 1.37 Mbit/s), a hint more runs could settle; on kato_churn_3 the alphas scatter on both sides of minRTT",
    "kato:0.5": "as in simulation, no alpha lowers the variance beyond the runs' noise: per-run variances spread widely under 10-20 competing flows (minRTT on kato_4: 0.22-1.27 (Mbit/s)^2 over 6 runs). The point estimate of alpha=0.25 on kato_4 is half minRTT's (0.29 +- 0.10 against 0.60 +- 0.43, mean 1.35 against 1.37 Mbit/s), a hint more runs could settle; on kato_churn_3 the alphas scatter on both sides of minRTT",
    "kato:0.75": "as in simulation, no alpha lowers the variance beyond the runs' noise: per-run variances spread widely under 10-20 competing flows (minRTT on kato_4: 0.22-1.27 (Mbit/s)^2 over 6 runs). The point estimate of alpha=0.25 on kato_4 is half minRTT's (0.29 +- 0.10 against 0.60 +- 0.43, mean 1.35 against 1.37 Mbit/s), a hint more runs could settle; on kato_churn_3 the alphas scatter on both sides of minRTT",
}
LIVE_FILE = ROOT / "tests" / "data" / "claims_live.json"
LIVE_METRICS = {"completion_s": "download_time_s"}  # live field -> the simulator metric it stands for


def live_cells(family: dict) -> tuple[Cells, list[str], str]:
    """A recorded family as the checks read the simulator's cells (every finished run), its
    scenarios and its CC."""
    cells: Cells = {}
    cc = family["cc"]
    for scen, by_label in family["cells"].items():
        for label, cell in by_label.items():
            runs = cell["runs"]
            metrics = {k: np.array([r[k] for r in runs], dtype=float)
                       for k in ("goodput_mbps", "throughput_mean_mbps", "throughput_var_mbps2", "completion_s")}
            for k, sim_name in LIVE_METRICS.items():
                metrics[sim_name] = metrics[k]
            cells[(label, scen, cc)] = metrics
    return cells, list(family["cells"]), cc


def live_rows(path: Path = LIVE_FILE) -> dict[str, tuple[str, bool, dict]]:
    """kind -> (the live numbers, whether the claim holds live, the family's record) for every
    claim kind the recorded file covers (empty without the file)."""
    if not path.is_file():
        return {}
    record = json.loads(path.read_text())
    out: dict[str, tuple[str, bool, dict]] = {}
    fams = record["families"]

    def complete(fam: dict, labels: tuple[str, ...]) -> list[str]:
        return [s for s, by in fam["cells"].items() if all(len(by.get(x, {}).get("runs", [])) >= 3 for x in labels)]

    if "leeyoo" in fams:
        fam = fams["leeyoo"]
        cells, _, cc = live_cells(fam)
        for scen in complete(fam, ("ecf", "minrtt")):
            _, text, ok, kind = leeyoo_check(cells, scen, cc)
            out[kind] = (text, ok, fam)
    if "kato" in fams:
        fam = fams["kato"]
        cells, _, cc = live_cells(fam)
        scens = tuple(complete(fam, ("minrtt", "kato_0.25", "kato_0.5", "kato_0.75")))
        if scens:
            for _, text, ok, kind in kato_checks(cells, scens, cc, ""):
                out[kind] = (text, ok, fam)
    if "mptcp_tut" in fams:
        fam = fams["mptcp_tut"]
        cells, _, cc = live_cells(fam)
        scens = complete(fam, MPTCP_TUT_SCHEDULERS)
        if scens:
            checks = mptcp_tut_checks(cells, scens, scens, (cc,), "", "")
            for _, text, ok, kind in checks:
                out[kind] = (text, ok, fam)
            out["mptcp_tut:all"] = ("; ".join(t for _, t, _, _ in checks), all(ok for _, _, ok, _ in checks), fam)
    return out


def live_text(text: str, ok: bool, fam: dict) -> str:
    n = min(len(c["runs"]) for by in fam["cells"].values() for c in by.values())
    scens = ", ".join(fam["cells"])
    return f"XQUIC, {fam['cc']}, {scens}, >= {n} runs per cell: {text}: {'holds' if ok else 'does not hold'}"


def verdict(ok: bool, live: tuple[str, bool, dict] | None) -> str:
    if live is None:
        return "reproduced" if ok else "not reproduced, not checked live"
    if ok:
        return "reproduced" + ("; holds live too" if live[1] else "; does not hold live")
    return "not reproduced in simulation; holds live (see cause)" if live[1] else \
        "not reproduced; does not hold live either"


def docs_table(rows: list[Row], live: dict[str, tuple[str, bool, dict]] | None = None) -> str:
    """The claims table; ``live`` (``live_rows()``) fills the live column by claim kind."""
    live = live or {}
    lines = ["| claim | study | simulator | live | verdict | cause |", "|---|---|---|---|---|---|"]
    for claim, ours, ok, kind in rows:
        key = claim.split(":")[0].split(" alpha=")[0]
        study = WHERE[next(k for k in WHERE if claim.startswith(k))]
        here = live.get(kind)
        cause = "" if ok else CAUSES.get(key, "")
        if here is not None and kind in LIVE_CAUSES:
            cause = f"{cause}. Live: {LIVE_CAUSES[kind]}" if cause else f"Live: {LIVE_CAUSES[kind]}"
        lines.append(f"| {claim} | {study} | {ours} | {live_text(*here) if here else 'not run'} | "
                     f"{verdict(ok, here)} | {cause} |")
    return "\n".join(lines)


def live_tail(path: Path = LIVE_FILE) -> str:
    """The page's closing paragraph: where the live column comes from and how it was recorded."""
    if not path.is_file():
        return DOCS_TAIL_NONE
    record = json.loads(path.read_text())
    parts = []
    for name, fam in record["families"].items():
        runs = [r for by in fam["cells"].values() for c in by.values() for r in c["runs"]]
        if not runs:
            continue
        loads = [r["load"] for r in runs]
        batches = fam["batches"]
        dates = sorted(r["time"][:16] for r in runs)
        parts.append(f"- {name}: {fam['workload']}. Substitution: {fam['substitution']}. XQUIC "
                     f"{batches[-1]['xquic_commit'][:12]}, kernel {batches[-1]['kernel']}, {dates[0]} to {dates[-1]} "
                     f"UTC, load average {min(loads):.1f}-{max(loads):.1f} at the runs.")
    return DOCS_TAIL_LIVE + "\n".join(parts) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="runs per cell (MPTCP-TUT's timed grids use 1)")
    ap.add_argument("--out", type=Path, default=Path("outputs/reproduce_claims"))
    ap.add_argument("--docs", type=Path, help="write the claims table to this Markdown file")
    args = ap.parse_args()
    grid_rows, grid_wall = mptcp_tut(1, args.out)
    mesh_rows, mesh_wall = mptcp_tut(1, args.out, "mptcp_tut_mesh")
    rows = (sod(args.runs, args.out) + grid_rows + mesh_rows + mptcp_tut_receive_buffer() + kato(args.runs, args.out)
            + kato(args.runs, args.out, "kato_churn") + leeyoo(args.runs, args.out)
            + leeyoo(args.runs, args.out, "leeyoo_flow"))
    print("\n| claim | our numbers | reproduced |\n|---|---|---|")
    for claim, ours, ok, _ in rows:
        print(f"| {claim} | {ours} | {'yes' if ok else 'no'} |")
    timing = (f"MPTCP-TUT grid (5 schedulers x 4 coupled CCs x 8 experiments x 60 s, 1 run each, 2 workers): "
              f"{grid_wall:.1f} s wall one path per bottleneck, {mesh_wall:.1f} s on the full mesh (6 subflows)")
    print(f"\n{timing}")
    if args.docs:
        args.docs.write_text(f"{DOCS_HEAD}\n{docs_table(rows, live_rows())}\n\n{timing}; `--runs {args.runs}` for the "
                             f"others.\n{live_tail()}", encoding="utf-8")
        print(f"wrote {args.docs}")


DOCS_HEAD = """# The source studies' claims, reproduced or not

Written by `python benchmarks/reproduce_claims.py --docs docs/claims.md` (each claim's test and
numbers are in that script; the scenarios in docs/scenarios.md and configs/scenario/). Rows marked
"(full mesh)", "(arriving and leaving competition)" and "(quic-go flow control)" run the networks
that rebuild the studies' settings (docs/transport.md, "Network"): shared bottlenecks, competing
flows that come and go, a receive window that limits.
"""
DOCS_TAIL_NONE = """
Live: no claim was checked live for this table (no tests/data/claims_live.json; record it with
benchmarks/claims_live.py).
"""
DOCS_TAIL_LIVE = """
Live: the "live" column is read from `tests/data/claims_live.json`, recorded with
`benchmarks/claims_live.py` (every run with its load average, the testbeds and their
verification): XQUIC with the workbench's schedulers inside it (`bindings/src/mps_rules.c`) on
the scenarios' networks as `envs/live/network_testbed.py` builds them (a router pair per link, so
subflows share bottleneck queues; competing kernel TCP flows, long-lived and arriving and
leaving, on the links that have them). Upstream Linux MPTCP runs only its default scheduler, so
it cannot compare schedulers. The claims are tested live exactly as in simulation (same code, the
recorded runs as cells). What differs from the studies:

"""


if __name__ == "__main__":
    main()
