"""Each source study's headline comparison, run in simulation with the ready-made studies
(configs/study/*.yaml, evaluated by studies.runner): the claim, our numbers, reproduced or not,
on the studies' first scenarios (one path per bottleneck, steady competition, the stack's default
receive buffer: RFC 6182's under Linux, XQUIC's 16 MiB) and on the networks that rebuild them (envs/network.py: MPTCP-TUT's full mesh of shared
bottlenecks, KATO's arriving and leaving competition, LEEYOO with a receive window that starts at
64 KiB and auto-tunes).

    python benchmarks/reproduce_claims.py [--runs 10] [--docs docs/claims.md]

``--docs`` writes the table (claim, where in the study, simulator, live, verdict, cause) to a
Markdown page; the live column says which claims were checked on a live testbed and the cause
column why a claim does not hold, written by each check from the numbers it measured (``Row.cause``)
and from the recorded live runs (``live_*_cause``).

Nothing here is tuned to make a claim come out: a claim that does not reproduce is a finding.
It also times the MPTCP-TUT grid (5 schedulers x 4 coupled CCs x 8 experiments, 60 s each; the
study's 160 runs, one per combination), the figure issue #3 asks for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envs.metrics import mean_ci  # noqa: E402
from studies import runner, spec  # noqa: E402


def run(name: str, runs: int, out: Path, overrides: tuple[str, ...] = ()) -> tuple[dict, float]:
    """The study's cells (per-run metrics) and its wall time; ``overrides`` are more Hydra overrides
    of the study (``study.ccs=[lia]``)."""
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose(config_name="evaluate", overrides=[f"study={name}", f"study.runs={runs}", *overrides])
    study = spec.from_config(cfg, out / name)
    start = time.perf_counter()
    with runner.backend(study) as backend:
        cells = runner.evaluate_cells(study, backend)
    return {k: v["metrics"] for k, v in cells.items()}, time.perf_counter() - start


def m(cells: dict, label: str, scen: str, cc: str, metric: str) -> float:
    return mean_ci(cells[(label, scen, cc)][metric])[0]


class Row(NamedTuple):
    """One claim: its text, our numbers, whether it holds, its kind (what the live column checks
    the same way) and why it does not hold, written from the same numbers ("" when it holds)."""

    claim: str
    ours: str
    ok: bool
    kind: str
    cause: str = ""


Cells = dict  # (label, scenario, cc) -> {metric: per-run values}
MPTCP_TUT_SCHEDULERS = ("rr", "minrtt", "hsr", "lws", "lts")
MPTCP_TUT_CCS = ("lia", "olia", "balia", "wvegas")
MPTCP_TUT_HETERO = (2, 3, 6, 7)  # the experiments with heterogeneous capacities
# why the order of the packets matters little to a backlogged transfer
_BACKLOGGED = ("every subflow of a backlogged transfer is window-limited and any work-conserving scheduler "
               "fills every window, so goodput is mostly what the bottlenecks and the CC give")


def goodput_spread(goodputs: Iterable[float]) -> float:
    """The schedulers' goodput spread in a cell, (max - min) / max."""
    g = list(goodputs)
    return (max(g) - min(g)) / max(max(g), 1e-9)


def _span(values, fmt: str = ".2f", unit: str = "") -> str:
    """``lo-hi`` of ``values`` (one number when they agree to the format)."""
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def _links(scen: str) -> str:
    """A network scenario's one-way delays and losses over its links, as 'delays 5-80 ms, loss <= 12%'."""
    from envs.scenario import load_scenario
    links = load_scenario(scen).links or {}
    return (f"delays {_span([x.delay_ms for x in links.values()], '.0f', ' ms')}, "
            f"loss <= {max(x.loss_pct for x in links.values()):.0f}%")


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
        rows.append(Row(f"SOD ({cc}): smaller max reorder buffer than RR and ATLB (kB, SOD/RR/ATLB)",
                        f"{wins}/6 scenarios; " + ", ".join(parts), wins == 6, "sod",
                        "" if wins == 6 else "SOD's buffer is not the smallest in every scenario (numbers beside)"))
    return rows


def mptcp_tut(runs: int, out: Path, study: str = "mptcp_tut") -> tuple[list[Row], float]:
    from envs.scenario import load_scenario
    from envs.sim import stacks
    cells, wall = run(study, runs, out)
    mesh = study == "mptcp_tut_mesh"
    prefix = "mptcp_tut_mesh_e" if mesh else "mptcp_tut_e"
    scens = [f"{prefix}{k}" for k in range(8)]
    rows = mptcp_tut_checks(cells, [(s, cc) for s in scens for cc in MPTCP_TUT_CCS],
                            [f"{prefix}{k}" for k in MPTCP_TUT_HETERO], " (full mesh)" if mesh else "",
                            " (e2, e3, e6, e7 x 4 CCs)")
    buffers = [load_scenario(s).receive_buffer(stacks.LINUX.packet_bytes) / 1e6 for s in scens]  # Linux MPTCP's
    spreads = []
    for cc in MPTCP_TUT_CCS:  # per CC: the experiment where the five differ most
        def spread(s: str, cc: str = cc) -> float:
            return goodput_spread(m(cells, x, s, cc, "goodput_mbps") for x in MPTCP_TUT_SCHEDULERS)
        worst = max(scens, key=spread)
        g = {x: m(cells, x, worst, cc, "goodput_mbps") for x in MPTCP_TUT_SCHEDULERS}
        spreads.append(f"{cc} {100 * spread(worst):.0f}% (e{worst[-1]}: "
                       + ", ".join(f"{x.upper() if x != 'minrtt' else 'LL'} {v:.2f}" for x, v in g.items()) + ")")
    cause = (f"{_BACKLOGGED}; the five schedulers' largest goodput spread ((max - min) / max) over e0-e7, per CC: "
             + "; ".join(spreads) + f". The receive buffer is RFC 6182's ({_span(buffers)} MB over e0-e7), twice the "
             "largest RTT times the summed rates")
    if mesh:
        net = load_scenario(f"{prefix}3")
        client = sorted({p.links[0] for p in net.paths})  # the client-side bottlenecks (first link of every path)
        cap = sum((net.links or {})[x].bandwidth_mbps for x in client)
        cause += f"; e3's client-side bottlenecks carry {cap:.0f} Mbit/s. The next row shrinks the buffer"
    return [row if row.ok else row._replace(cause=cause) for row in rows], wall


class TutCell(NamedTuple):
    """One experiment under one CC as MPTCP-TUT's claim reads it (``mptcp_tut_cell``)."""

    lowest: str  # the scheduler with the lowest mean goodput
    above_ll: dict[str, bool]  # HSR, LWS, LTS -> mean goodput at or above LL's (minRTT's) within LL's 95% CI


def mptcp_tut_cell(cells: Cells, s: str, cc: str) -> TutCell:
    """One experiment under one CC as MPTCP-TUT's claim reads it: the scheduler with the lowest mean
    goodput, and for HSR, LWS and LTS whether its mean goodput is at or above LL's (minRTT's)
    within LL's 95% CI."""
    worst = min(MPTCP_TUT_SCHEDULERS, key=lambda x: m(cells, x, s, cc, "goodput_mbps"))
    ll, ci = mean_ci(cells[("minrtt", s, cc)]["goodput_mbps"])
    return TutCell(worst, {x: m(cells, x, s, cc, "goodput_mbps") >= ll - ci for x in ("hsr", "lws", "lts")})


def mptcp_tut_checks(cells: Cells, pairs: list[tuple[str, str]], hetero: list[str], where: str,
                     grid: str) -> list[Row]:
    """RR worst on the heterogeneous experiments (``hetero``); HSR, LWS, LTS at or above LL (minRTT)
    within LL's CI; over the (experiment, CC) cells ``pairs``."""
    scheds = MPTCP_TUT_SCHEDULERS
    answers = {(s, cc): mptcp_tut_cell(cells, s, cc) for s, cc in pairs}
    worst = [answers[(s, cc)].lowest for s, cc in pairs if s in hetero]
    n_rr = sum(w == "rr" for w in worst)
    rows = [Row(f"MPTCP-TUT{where}: RR worst on heterogeneous capacities{grid}",
                f"RR worst in {n_rr}/{len(worst)} cells (others worst: "
                + ", ".join(f"{x} {worst.count(x)}" for x in scheds if x != 'rr' and worst.count(x)) + ")",
                bool(worst) and n_rr >= 0.75 * len(worst), "mptcp_tut:rr")]
    for x in ("hsr", "lws", "lts"):
        ok = sum(answers[pair].above_ll[x] for pair in pairs)
        ratios = [m(cells, x, s, cc, "goodput_mbps") / max(m(cells, "minrtt", s, cc, "goodput_mbps"), 1e-9)
                  for s, cc in pairs]
        rows.append(Row(f"MPTCP-TUT{where}: {x.upper()} at or above LL (minRTT) goodput",
                        f"{ok}/{len(pairs)} cells; goodput ratio to LL median {np.median(ratios):.2f} "
                        f"(min {min(ratios):.2f})", ok >= 0.75 * len(pairs), f"mptcp_tut:{x}"))
    return rows


def mptcp_tut_receive_buffer(rcvbuf: float = 256 * 1024) -> list[Row]:
    """A sensitivity, not the study's setting: the full mesh's heterogeneous experiments with a
    receive buffer that limits (one run per cell, seed 0), where head-of-line blocking behind the
    slower subflows throttles the sender."""
    from envs.scenario import load_scenario, scenario_from_dict
    from envs.sim.simulator import SimConfig, Simulator
    scheds = MPTCP_TUT_SCHEDULERS
    worst, ok, cells = [], dict.fromkeys(scheds[2:], 0), 0
    spread: dict[int, list[float]] = {}
    e3: list[str] = []
    for k in MPTCP_TUT_HETERO:
        base = load_scenario(f"mptcp_tut_mesh_e{k}").model_dump(exclude_none=True)
        scen = scenario_from_dict({**base, "receive_buffer_bytes": rcvbuf})
        for cc in MPTCP_TUT_CCS:
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
            spread.setdefault(k, []).append(goodput_spread(g.values()))
            if k == 3:
                e3.append(f"{cc} {g['rr']:.1f} against {_span([g[x] for x in scheds if x != 'rr'], '.1f')}")
    holds = worst.count("rr") >= 0.75 * cells and min(ok.values()) >= 0.75 * cells
    cause = ("the five schedulers' goodput spread ((max - min) / max, largest over the 4 CCs): "
             + ", ".join(f"e{k} ({_links(f'mptcp_tut_mesh_e{k}')}) {100 * max(v):.0f}%" for k, v in spread.items())
             + f"; on e3, RR against the others (Mbit/s): {', '.join(e3)}; one run per cell")
    return [Row(f"MPTCP-TUT (full mesh, {rcvbuf / 1024:.0f} kB receive buffer; a sensitivity): RR worst, HSR, LWS, "
                "LTS at or above LL (within 1%) on e2, e3, e6, e7 x 4 CCs",
                f"RR worst in {worst.count('rr')}/{cells} cells; at or above LL: "
                + ", ".join(f"{x.upper()} {n}/{cells}" for x, n in ok.items()),
                holds, "mptcp_tut:all", "" if holds else cause)]


def kato(runs: int, out: Path, study: str = "kato") -> list[Row]:
    cells, _ = run(study, runs, out)
    churn = study == "kato_churn"
    scens = ("kato_churn_3", "kato_churn_6") if churn else tuple(f"kato_{k}" for k in range(1, 7))
    rows = kato_checks(cells, scens, "lia", " (arriving and leaving competition)" if churn else "")
    return [row if row.ok else row._replace(cause=kato_cause(cells, scens, "lia")) for row in rows]


KATO_ALPHAS = ("0.25", "0.5", "0.75")


def kato_cause(cells: Cells, scens: tuple[str, ...], cc: str) -> str:
    """How close KATO's variance and mean are to minRTT's, over the scenarios and alphas."""
    dv, dm, same = [], [], []
    for s in scens:
        base = cells[("minrtt", s, cc)]
        v0, mu0 = mean_ci(base["throughput_var_mbps2"])[0], mean_ci(base["throughput_mean_mbps"])[0]
        for a in KATO_ALPHAS:
            mine = cells[(f"kato_{a}", s, cc)]
            dv.append(mean_ci(mine["throughput_var_mbps2"])[0] / max(v0, 1e-12) - 1)
            dm.append(mean_ci(mine["throughput_mean_mbps"])[0] / max(mu0, 1e-12) - 1)
            same.append(np.array_equal(mine["throughput_var_mbps2"], base["throughput_var_mbps2"]))
    text = (f"KATO's 1 s throughput variance lies within {100 * min(dv):+.0f}% to {100 * max(dv):+.0f}% of minRTT's "
            f"over {', '.join(scens)} and the three alphas (means {100 * min(dm):+.0f}% to {100 * max(dm):+.0f}%): "
            "the competing flows, not the choice between the paths, set it")
    return text + (f"; {sum(same)} of {len(same)} cells give runs identical to minRTT's" if any(same) else "")


def kato_checks(cells: Cells, scens: tuple[str, ...], cc: str, where: str) -> list[Row]:
    """Per alpha: KATO's 1 s throughput variance below minRTT's beyond both 95% CIs, at a mean
    within 10%, in at least 2/3 of the scenarios."""
    rows = []
    for alpha in KATO_ALPHAS:
        label, parts, wins = f"kato_{alpha}", [], 0
        for s in scens:
            (v, cv), (v0, cv0) = (mean_ci(cells[(x, s, cc)]["throughput_var_mbps2"]) for x in (label, "minrtt"))
            mu, mu0 = m(cells, label, s, cc, "throughput_mean_mbps"), m(cells, "minrtt", s, cc, "throughput_mean_mbps")
            similar = abs(mu - mu0) <= 0.1 * mu0
            wins += v0 - v > np.hypot(cv, cv0) and similar  # lower beyond the runs' noise, mean within 10%
            parts.append(f"{s}: var {v:.2f}/{v0:.2f}, mean {mu:.2f}/{mu0:.2f}")
        rows.append(Row(f"KATO{where} alpha={alpha}: lower 1 s throughput variance than minRTT (beyond the 95% CIs) "
                        f"at a mean within 10% ({cc.upper() if cc == 'lia' else cc}; KATO/minRTT)",
                        f"{wins}/{len(scens)} scenarios; " + "; ".join(parts), wins >= 2 * len(scens) / 3,
                        f"kato:{alpha}"))
    return rows


def leeyoo(runs: int, out: Path) -> list[Row]:
    """LEEYOO static with the stack's default window (the study runs XQUIC's profile: its fixed 16 MiB),
    then with the auto-tuned one (leeyoo_flow)."""
    from envs.evaluation import evaluate_heuristic
    from envs.scenario import load_scenario
    fixed, _ = run("leeyoo", runs, out)
    tuned, _ = run("leeyoo_flow", runs, out)
    scen = load_scenario("leeyoo_static_dash")
    fast, slow = sorted(range(len(scen.paths)), key=lambda i: scen.paths[i].delay_ms)[::len(scen.paths) - 1]
    rows = []
    for cells, s, where in ((fixed, "leeyoo_static_dash", ""), (tuned, "leeyoo_flow_dash", " (auto-tuned receive window)")):
        row = leeyoo_check(cells, s, "cubic", where)
        share = {}
        for x in ("ecf", "minrtt"):  # the study's runs again (same seed), for what the study keeps not: bytes per path
            per_path = evaluate_heuristic(load_scenario(s), "cubic", x, runs, 0)["per_path_goodput_mbps"]
            share[x] = float(np.mean(per_path[:, slow] / per_path.sum(axis=1)))
        e, mr = (m(cells, x, s, "cubic", "download_time_s") * 1e3 for x in ("ecf", "minrtt"))
        cause = (f"ECF waits for the {scen.paths[fast].delay_ms:.0f} ms path: it puts {share['ecf']:.0%} of the bytes "
                 f"on the {scen.paths[slow].delay_ms:.0f} ms path against minRTT's {share['minrtt']:.0%} "
                 f"({runs} runs of {scen.workload.chunks} chunks), and its chunks take {e - mr:+.0f} ms on average")
        if where:
            e0, mr0 = (m(fixed, x, "leeyoo_static_dash", "cubic", "download_time_s") * 1e3 for x in ("ecf", "minrtt"))
            cause += (f"; the window auto-tuned from 64 KiB by the stack's rule leaves ECF at {e:.0f} and minRTT at "
                      f"{mr:.0f} ms against {e0:.0f} and {mr0:.0f} ms with the stack's fixed window (row above)")
        rows.append(row if row.ok else row._replace(cause=cause))
    return rows


def leeyoo_check(cells: Cells, s: str, cc: str, where: str = "") -> Row:
    """ECF's chunk download time below minRTT's beyond both 95% CIs."""
    e, mr = (cells[(x, s, cc)]["download_time_s"] for x in ("ecf", "minrtt"))
    (me, ce), (mm, cm) = mean_ci(e), mean_ci(mr)
    text = f"ECF {me * 1e3:.0f} ± {ce * 1e3:.0f} ms vs minRTT {mm * 1e3:.0f} ± {cm * 1e3:.0f} ms per chunk"
    if "avg_bitrate_mbps" in cells[("ecf", s, cc)]:
        br = m(cells, "ecf", s, cc, "avg_bitrate_mbps"), m(cells, "minrtt", s, cc, "avg_bitrate_mbps")
        text += f"; bitrate {br[0]:.2f} vs {br[1]:.2f} Mbit/s"
    return Row(f"LEEYOO static{where}: ECF beats minRTT on chunk download time", text, me + ce < mm - cm, "leeyoo")


# Where each claim stands in its study (the comparison docs/scenarios.md describes; the studies'
# figure numbers are not recorded there), keyed by the claim's first words.
WHERE = {
    "SOD": "SOD: maximum out-of-order queue per scenario, SOD against RR and ATLB",
    "MPTCP-TUT": "MPTCP-TUT: goodput of the 20 scheduler x CC combinations in e0-e7",
    "KATO": "KATO: throughput mean and variance with 95% CIs, kato_1-6",
    "LEEYOO": "LEEYOO: chunk download time box plots, leeyoo_static",
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
            metrics["path_recv_bytes"] = np.array([r["path_recv_bytes"] for r in runs], dtype=float)
            for k, sim_name in LIVE_METRICS.items():
                metrics[sim_name] = metrics[k]
            cells[(label, scen, cc)] = metrics
    return cells, list(family["cells"]), cc


def live_leeyoo_cause(cells: Cells, scen: str, cc: str, fam: dict) -> str:
    """What the recorded LEEYOO runs show: byte shares, chunk times, the fast path alone."""
    from envs.scenario import load_scenario
    paths = load_scenario(scen).paths
    fast, slow = sorted(range(len(paths)), key=lambda i: paths[i].delay_ms)[::len(paths) - 1]
    alone = fam["file_mb"] * 8 / paths[fast].bandwidth_mbps * 1e3
    part = {}
    for x in ("ecf", "minrtt"):
        c = cells[(x, scen, cc)]
        share = float(np.mean(c["path_recv_bytes"][:, slow] / c["path_recv_bytes"].sum(axis=1)))
        t = c["completion_s"] * 1e3
        part[x] = (share, t)
    (se, te), (sm, tm) = part["ecf"], part["minrtt"]
    text = (f"ECF puts {se:.1%} of the bytes on the {paths[slow].delay_ms:.0f} ms path against minRTT's {sm:.1%}; "
            f"ECF's chunks took {_span(te, '.0f', ' ms')} (median {np.median(te):.0f}), minRTT's "
            f"{_span(tm, '.0f', ' ms')} (median {np.median(tm):.0f}); the {paths[fast].bandwidth_mbps:.0f} Mbit/s path "
            f"alone would take {alone:.0f} ms")
    if np.median(te) > alone:
        text += "; what holds ECF's last packets back in XQUIC was not isolated"
    return text


def live_mptcp_cause(cells: Cells, pairs: list[tuple[str, str]]) -> str:
    """Per recorded coupled CC and mesh: the five schedulers' goodput, RR's and LL's, the lowest,
    the runs' spread."""
    per_cc = []
    for cc in dict.fromkeys(c for _, c in pairs):
        parts = []
        for s in (s for s, c in pairs if c == cc):
            g = {x: mean_ci(cells[(x, s, cc)]["goodput_mbps"]) for x in MPTCP_TUT_SCHEDULERS}
            low = min(g, key=lambda x: g[x][0])
            parts.append(f"{s.removeprefix('mptcp_tut_mesh_')} {_span([v[0] for v in g.values()], '.1f')} Mbit/s "
                         f"(RR {g['rr'][0]:.2f}, LL {g['minrtt'][0]:.2f}, lowest {low.upper()}, 95% CI up to "
                         f"+-{max(v[1] for v in g.values()):.2f})")
        per_cc.append(f"{cc.upper()}: " + "; ".join(parts))
    return ("the five schedulers' goodput per mesh, per coupled CC across XQUIC's paths (wVegas, the study's fourth, "
            "not run live): " + ". ".join(per_cc))


def pooled_tut(fams: list[dict]) -> tuple[Cells, list[tuple[str, str]], dict]:
    """MPTCP-TUT's recorded families, one per coupled CC (``benchmarks/claims_live.py``: ``mptcp_tut``
    LIA, ``mptcp_tut_olia``, ``mptcp_tut_balia``), read as one: their cells, the (experiment, CC)
    pairs with at least 3 runs of every scheduler, and the pooled family the live column shows."""
    cells: Cells = {}
    pairs: list[tuple[str, str]] = []
    shown: dict = {"cc": ", ".join(f["cc"] for f in fams), "cells": {},
                   "set_aside": "; ".join(f["set_aside"] for f in fams if f.get("set_aside"))}
    for fam in fams:
        fam_cells, _, cc = live_cells(fam)
        cells.update(fam_cells)
        for s, by in sorted(fam["cells"].items()):
            if all(len(by.get(x, {}).get("runs", [])) >= 3 for x in MPTCP_TUT_SCHEDULERS):
                pairs.append((s, cc))
                shown["cells"].setdefault(s, {}).update({f"{x}/{cc}": by[x] for x in MPTCP_TUT_SCHEDULERS})
    return cells, pairs, shown


def tut_rows(fams: list[dict]) -> dict[str, LiveRow]:
    """kind -> LiveRow for MPTCP-TUT's claims over its recorded families (``pooled_tut``)."""
    cells, pairs, shown = pooled_tut(fams)
    if not pairs:
        return {}
    cause = live_mptcp_cause(cells, pairs)
    checks = mptcp_tut_checks(cells, pairs, [f"mptcp_tut_mesh_e{k}" for k in MPTCP_TUT_HETERO], "", "")
    out = {row.kind: LiveRow(row.ours, row.ok, shown, cause) for row in checks}
    out["mptcp_tut:all"] = LiveRow("; ".join(r.ours for r in checks), all(r.ok for r in checks), shown, cause)
    return out


def mptcp_tut_experiments(sim: Cells, live: dict | None, cc: str = "lia") -> str:
    """MPTCP-TUT's claim per experiment of the full mesh under ``cc``, in simulation (``sim``, the
    study's cells) and live (``live``, the recorded ``mptcp_tut`` family; experiments with fewer
    than 3 runs per scheduler are "not recorded"): the five schedulers' mean goodput, the lowest,
    HSR, LWS and LTS at or above LL (``mptcp_tut_cell``), whether the two sides agree on these four
    answers; then the counts over the experiments, the claim's verdict read over all of them."""
    from envs.scenario import load_scenario
    scheds, better = MPTCP_TUT_SCHEDULERS, ("hsr", "lws", "lts")
    lcells, lcc = live_cells(live)[::2] if live else ({}, cc)
    head = "/".join(x.upper() if x != "minrtt" else "LL" for x in scheds)
    lines = [f"| experiment | bottlenecks | simulator {head} (Mbit/s) | lowest | at or above LL | live {head} (Mbit/s) "
             "| lowest | at or above LL | agree |", "|---|" * 1 + "---|" * 8]
    sides: dict[str, list[TutCell | None]] = {"sim": [], "live": []}
    spreads: dict[str, list[float]] = {"sim": [], "live": []}

    def same(a: TutCell, b: TutCell) -> bool:
        return (a.lowest == "rr") == (b.lowest == "rr") and a.above_ll == b.above_ll

    def answers(side: str, cells: Cells, s: str) -> str:
        """The cell's answers as the row's "lowest" and "at or above LL" columns; the lowest with the
        five schedulers' goodput spread ((max - min) / max)."""
        worst, ok = cell = mptcp_tut_cell(cells, s, cc)
        sides[side].append(cell)
        spreads[side].append(goodput_spread(m(cells, x, s, cc, "goodput_mbps") for x in scheds))
        held = ", ".join(x.upper() for x in better if ok[x]) or "none"
        return f"{worst.upper() if worst != 'minrtt' else 'LL'} (spread {spreads[side][-1]:.1%}) | {held}"

    for k in range(8):
        s = f"mptcp_tut_mesh_e{k}"
        links = (load_scenario(s).links or {}).values()
        where = f"{_span([x.bandwidth_mbps for x in links], '.0f', ' Mbit/s')}, {_links(s)}"
        sim_g = "/".join("{:.2f} ± {:.2f}".format(*mean_ci(sim[(x, s, cc)]["goodput_mbps"])) for x in scheds)
        sim_part = f"{sim_g} | {answers('sim', sim, s)}"
        if lcc == cc and all(len(lcells.get((x, s, cc), {}).get("goodput_mbps", ())) >= 3 for x in scheds):
            live_g = "/".join("{:.2f} ± {:.2f}".format(*mean_ci(lcells[(x, s, cc)]["goodput_mbps"])) for x in scheds)
            live_part = f"{live_g} | {answers('live', lcells, s)}"
            live_part += f" | {'yes' if same(sides['sim'][-1], sides['live'][-1]) else 'no'}"
        else:
            sides["live"].append(None)
            live_part = "not recorded | | | "
        lines.append(f"| e{k} | {where} | {sim_part} | {live_part} |")

    def counts(side: str, cells: Cells) -> str:
        got = [(k, c) for k, c in enumerate(sides[side]) if c is not None]
        exact = [f"e{k}" for k, _ in got if all(np.ptp(cells[(x, f"mptcp_tut_mesh_e{k}", cc)]["goodput_mbps"]) == 0
                                                for x in scheds)]
        hetero = [c for k, c in got if k in MPTCP_TUT_HETERO]
        return (f"RR lowest in {sum(c.lowest == 'rr' for _, c in got)}/{len(got)} experiments "
                f"({sum(c.lowest == 'rr' for c in hetero)}/{len(hetero)} of the heterogeneous e2, e3, e6, e7), "
                + ", ".join(f"{x.upper()} at or above LL in {sum(c.above_ll[x] for _, c in got)}/{len(got)}"
                            for x in better)
                + (f"; spread {_span([100 * v for v in spreads[side]], '.1f', '%')}" if spreads[side] else "")
                + (f"; every scheduler's runs identical (LL's CI 0: the test at or above LL is exact) in {', '.join(exact)}"
                   if exact else ""))
    both = [(a, b) for a, b in zip(sides["sim"], sides["live"]) if b is not None]
    agree = sum(same(a, b) for a, b in both)
    each = ", ".join([f"RR lowest {sum((a.lowest == 'rr') == (b.lowest == 'rr') for a, b in both)}/{len(both)}"]
                     + [f"{x.upper()} {sum(a.above_ll[x] == b.above_ll[x] for a, b in both)}/{len(both)}"
                        for x in better])
    return ("\n".join(lines) + f"\n\nSimulator: {counts('sim', sim)}. Live: {counts('live', lcells)}. Simulator and live agree on "
            f"RR lowest and HSR, LWS, LTS at or above LL in {agree}/{len(both)} experiments recorded live (on each answer: "
            f"{each})." if both else "\n".join(lines) + f"\n\nSimulator: {counts('sim', sim)}. Not recorded live.")


def live_kato_cause(cells: Cells, scens: list[str], cc: str) -> str:
    """Per recorded scenario: minRTT's per-run variances and each alpha's against minRTT's."""
    parts = []
    for s in scens:
        v0 = cells[("minrtt", s, cc)]["throughput_var_mbps2"]
        alphas = ", ".join(f"{a}: {mean_ci(cells[(f'kato_{a}', s, cc)]['throughput_var_mbps2'])[0]:.2f} +- "
                           f"{mean_ci(cells[(f'kato_{a}', s, cc)]['throughput_var_mbps2'])[1]:.2f}" for a in KATO_ALPHAS)
        parts.append(f"{s}: minRTT's runs {_span(v0)} (Mbit/s)^2 ({len(v0)} runs, mean {mean_ci(v0)[0]:.2f} +- "
                     f"{mean_ci(v0)[1]:.2f}); alpha {alphas}")
    return "per-run variances spread widely under the competing flows: " + "; ".join(parts)


@dataclasses.dataclass(frozen=True)
class LiveRow:
    """A claim checked on recorded live runs: the numbers, whether it holds, the family's record,
    what the runs show (written from them) and the same check on the family's newest earlier
    record (``live_text`` of it and why it was set aside; empty without one)."""

    text: str
    ok: bool
    fam: dict
    cause: str
    before: str = ""


def family_rows(name: str, fam: dict) -> dict[str, LiveRow]:
    """kind -> LiveRow for the claims one recorded family (``leeyoo``, ``kato``; MPTCP-TUT's
    families: ``tut_rows``) covers with at least 3 runs per cell."""
    out: dict[str, LiveRow] = {}

    def complete(labels: tuple[str, ...]) -> list[str]:
        return sorted(s for s, by in fam["cells"].items() if all(len(by.get(x, {}).get("runs", [])) >= 3 for x in labels))

    cells, _, cc = live_cells(fam)
    if name == "leeyoo":
        for scen in complete(("ecf", "minrtt")):
            row = leeyoo_check(cells, scen, cc)
            out[row.kind] = LiveRow(row.ours, row.ok, fam, live_leeyoo_cause(cells, scen, cc, fam))
    elif name == "kato":
        scens = tuple(complete(("minrtt",) + tuple(f"kato_{a}" for a in KATO_ALPHAS)))
        if scens:
            cause = live_kato_cause(cells, list(scens), cc)
            for row in kato_checks(cells, scens, cc, ""):
                out[row.kind] = LiveRow(row.ours, row.ok, fam, cause)
    return out


def live_rows(path: Path = LIVE_FILE) -> dict[str, LiveRow]:
    """kind -> LiveRow for every claim kind the recorded file covers (empty without the file),
    each with the same check on its family's newest earlier record where there is one."""
    if not path.is_file():
        return {}
    out: dict[str, LiveRow] = {}
    groups: dict[str, list[dict]] = {}  # MPTCP-TUT's families, one per coupled CC, are read together
    for name, fam in json.loads(path.read_text())["families"].items():
        groups.setdefault("mptcp_tut" if name.startswith("mptcp_tut") else name, []).append(fam)

    def rows_of(name: str, fams: list[dict]) -> dict[str, LiveRow]:
        return tut_rows(fams) if name == "mptcp_tut" else family_rows(name, fams[0])

    for name, fams in groups.items():
        rows = rows_of(name, fams)
        earlier = [fam["earlier"][-1] for fam in fams if fam.get("earlier")]
        if earlier:
            prev = rows_of(name, earlier)
            for kind, row in rows.items():
                if kind in prev:
                    p = prev[kind]
                    rows[kind] = dataclasses.replace(row, before=f"{live_text(p)} (set aside {p.fam['set_aside']})")
        out.update(rows)
    return out


def live_text(row: LiveRow) -> str:
    """The live column: the recorded family, the check's numbers and verdict, and the earlier record's."""
    fam = row.fam
    n = min(len(c["runs"]) for by in fam["cells"].values() for c in by.values())
    scens = ", ".join(sorted(fam["cells"]))
    now = f"XQUIC, {fam['cc']}, {scens}, >= {n} runs per cell: {row.text}: {'holds' if row.ok else 'does not hold'}"
    return f"{now}. Before: {row.before}" if row.before else now


def verdict(ok: bool, live: LiveRow | None) -> str:
    if live is None:
        return "reproduced" if ok else "not reproduced, not checked live"
    if ok:
        return "reproduced" + ("; holds live too" if live.ok else "; does not hold live")
    return "not reproduced in simulation; holds live (see cause)" if live.ok else \
        "not reproduced; does not hold live either"


def docs_table(rows: list[Row], live: dict[str, LiveRow] | None = None) -> str:
    """The claims table; ``live`` (``live_rows()``) fills the live column by claim kind. The cause
    column is written from the numbers of this run and of the recorded live runs."""
    live = live or {}
    lines = ["| claim | study | simulator | live | verdict | cause |", "|---|---|---|---|---|---|"]
    for row in rows:
        study = WHERE[next(k for k in WHERE if row.claim.startswith(k))]
        here = live.get(row.kind)
        cause = "" if row.ok else row.cause
        if here is not None and here.cause:
            cause = f"{cause}. Live: {here.cause}" if cause else f"Live: {here.cause}"
        lines.append(f"| {row.claim} | {study} | {row.ours} | {live_text(here) if here else 'not run'} | "
                     f"{verdict(row.ok, here)} | {cause} |")
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
            + kato(args.runs, args.out, "kato_churn") + leeyoo(args.runs, args.out))
    print("\n| claim | our numbers | reproduced |\n|---|---|---|")
    for row in rows:
        print(f"| {row.claim} | {row.ours} | {'yes' if row.ok else 'no'} |")
    timing = (f"MPTCP-TUT grid (5 schedulers x 4 coupled CCs x 8 experiments x 60 s, 1 run each, 2 workers): "
              f"{grid_wall:.1f} s wall one path per bottleneck, {mesh_wall:.1f} s on the full mesh (6 subflows)")
    print(f"\n{timing}")
    lia, _ = run("mptcp_tut_mesh", args.runs, args.out, ("study.ccs=[lia]",))
    record = json.loads(LIVE_FILE.read_text()) if LIVE_FILE.is_file() else {"families": {}}
    experiments = mptcp_tut_experiments(lia, record["families"].get("mptcp_tut"))
    print(f"\n{experiments}")
    if args.docs:
        args.docs.write_text(f"{DOCS_HEAD}\n{docs_table(rows, live_rows())}\n\n{timing}; `--runs {args.runs}` for the "
                             f"others.\n\n{DOCS_EXPERIMENTS.format(runs=args.runs)}\n{experiments}\n{live_tail()}",
                             encoding="utf-8")
        print(f"wrote {args.docs}")


DOCS_HEAD = """# The source studies' claims, reproduced or not

Written by `python benchmarks/reproduce_claims.py --docs docs/claims.md` (each claim's test and
numbers are in that script; the scenarios in docs/scenarios.md and configs/scenario/). Rows marked
"(full mesh)", "(arriving and leaving competition)" and "(auto-tuned receive window)" run the
networks that rebuild the studies' settings (docs/transport.md, "Network"): shared bottlenecks,
competing flows that come and go, a receive window that starts small and auto-tunes the way the
simulated stack does it. The cause column is written from the numbers of the same run (and of the
recorded live runs), never by hand.
"""
DOCS_EXPERIMENTS = """## MPTCP-TUT per experiment under LIA: simulator and live

The full mesh's eight experiments under the coupled CC LIA, one row each: the simulator (study
`mptcp_tut_mesh` with `study.ccs=[lia]`, {runs} runs per cell, the study's 60 s of 3 MB messages)
beside the recorded live runs (XQUIC with the extension's LIA, the 40 MB file capped at 20 s
described below, mean ± 95% CI over the runs). "lowest" is the scheduler with the lowest mean
goodput; "at or above LL" lists those of HSR, LWS, LTS whose mean goodput is at or above LL's
(minRTT's) within LL's 95% CI, the same test as the table above; "agree" says whether both sides
give the same answers (RR lowest or not; each of HSR, LWS, LTS at or above LL or not). The
study's RR claim is about the heterogeneous experiments e2, e3, e6, e7; the counts give both.
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
