"""A scenario's network: links, and paths as sequences of links (docs/transport.md, "Network").

A scenario names its links (``links:``) and gives each path as the links it crosses in order;
subflows of one connection and competing traffic then meet on the links they share. The short
form, one link per path written inline, is the network whose link k is path k.

The fluid core queues a path's packets at one link of its route, its *bottleneck*: the link of
lowest nominal capacity (the first on a tie). The other links of the route (its *transit* links)
add their delays, jitter, random loss and failures, but no queue. ``resolve`` refuses networks
where that would hide a queue: a link that is one path's bottleneck (or carries competing
traffic) and another path's transit link.

This module knows links and routes only through the fields of ``envs.scenario``'s link models
(it does not import the schema, which validates a network with ``resolve``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_PATHS = 8  # XQUIC's limit, docs/transport.md


class NetworkError(ValueError):
    """A network that cannot be built; the message starts with the field it is about."""


@dataclass(frozen=True)
class Route:
    """One path of a network: the links it crosses and what they add up to (concrete values)."""

    links: tuple[int, ...]  # link indices, in order
    bottleneck: int  # the link whose queue the path's packets cross
    forward_ms: float  # one-way propagation delay, data direction (sum over the links)
    reverse_ms: float  # one-way propagation delay, ACK direction
    jitter_ms: float  # standard deviation of the per-packet delay (independent links: root of the summed variances)
    transit_loss: float  # random loss probability on the transit links together (the bottleneck's own is apart)

    @property
    def base_rtt_ms(self) -> float:
        return self.forward_ms + self.reverse_ms

    @property
    def transit(self) -> tuple[int, ...]:
        return tuple(k for k in self.links if k != self.bottleneck)


@dataclass(frozen=True)
class Network:
    """Links (the schema's link models, concrete) and the routes of the connection's paths."""

    names: tuple[str, ...]
    links: tuple[Any, ...]
    routes: tuple[Route, ...]

    def queue_bytes(self, k: int, mss: int) -> float:
        """Drop-tail buffer of link k: queue_bdp scales with the longest base RTT of the paths
        whose bottleneck it is (a link no path queues at: its own two-way delay)."""
        rtts = [r.base_rtt_ms for r in self.routes if r.bottleneck == k]
        link = self.links[k]
        rtt = max(rtts) if rtts else link.forward_ms() + link.reverse_ms()
        return link.link_queue_bytes(mss, rtt)

    def capacities_mbps(self) -> list[float]:
        """Each path's bottleneck capacity (nominal)."""
        return [self.links[r.bottleneck].nominal_mbps() for r in self.routes]

    def max_one_way_ms(self) -> float:
        """Longest one-way delay plus 4 jitter standard deviations over the routes and the
        competing traffic's links (ring sizing)."""
        routes = [max(r.forward_ms, r.reverse_ms) + 4 * r.jitter_ms for r in self.routes]
        return max(routes + [link.max_one_way_ms() for link in self.links])


def short_form(paths: list[Any]) -> Network:
    """The network of a scenario written without ``links``: link k is path k, inline."""
    routes = tuple(Route((k,), k, p.forward_ms(), p.reverse_ms(), float(p.jitter_ms), 0.0)
                   for k, p in enumerate(paths))
    return Network(tuple(f"path{k}" for k in range(len(paths))), tuple(paths), routes)


def resolve(links: dict[str, Any], paths: list[list[str]]) -> Network:
    """The network of ``links`` (name -> concrete link model) and ``paths`` (each a list of link
    names), or a ``NetworkError`` naming the field: an unknown link, a link crossed twice (a loop),
    more than MAX_PATHS paths, a queue the model would hide."""
    names = tuple(links)
    if not 1 <= len(paths) <= MAX_PATHS:
        raise NetworkError(f"paths: must list 1..{MAX_PATHS} paths, got {len(paths)}")
    routes = []
    for i, hops in enumerate(paths):
        idx: list[int] = []
        for j, name in enumerate(hops):
            if name not in links:
                raise NetworkError(f"paths[{i}].links[{j}]: unknown link {name!r}; valid: {', '.join(names)}")
            k = names.index(name)
            if k in idx:
                raise NetworkError(f"paths[{i}].links: link {name!r} appears twice (a loop): {hops}")
            idx.append(k)
        specs = [links[names[k]] for k in idx]
        bottleneck = idx[min(range(len(idx)), key=lambda j: specs[j].nominal_mbps())]
        transit = 1.0
        for k, spec in zip(idx, specs):
            if k != bottleneck:
                transit *= 1.0 - spec.loss_pct / 100.0
        routes.append(Route(tuple(idx), bottleneck, sum(s.forward_ms() for s in specs),
                            sum(s.reverse_ms() for s in specs),
                            math.sqrt(sum(s.jitter_ms ** 2 for s in specs)), 1.0 - transit))
    net = Network(names, tuple(links[n] for n in names), tuple(routes))
    queues = {r.bottleneck for r in routes} | {k for k, link in enumerate(net.links) if _carries_competition(link)}
    for i, r in enumerate(routes):
        for k in r.transit:
            if k in queues:
                raise NetworkError(
                    f"paths[{i}].links: link {names[k]!r} is a transit link of this path (its bottleneck is "
                    f"{names[r.bottleneck]!r}) but queues other traffic (a path's bottleneck or competing "
                    "traffic); queues in tandem are not modelled: give the path a route whose only shared "
                    "or loaded link is its lowest-capacity one")
    return net


def _carries_competition(link: Any) -> bool:
    comp = link.competing
    return comp.flows > 0 or comp.udp_mbps > 0 or comp.arrivals is not None


def transit_schedule(net: Network, route: Route) -> list[tuple[float, float]]:
    """``[(t_s, value), ...]`` for the core's per-subflow schedule: the transit links' loss
    probability (value >= 0) from t_s on, or, where one of them fails, ``-end_s``: the route is down
    until end_s (the end of the failures overlapping there). Packets that cross the bottleneck
    while it is down wait for it and arrive after it comes back, as behind a bottleneck whose
    capacity is 0 (the short form's outages); the sender learns of it only by its RTO, which
    reinjects the path's data on the others. Empty when the route has no transit link."""
    transit = [net.links[k] for k in route.transit]
    if not transit:
        return []
    out = [(0.0, route.transit_loss)] if route.transit_loss > 0 else []
    down = sorted(iv for link in transit for iv in link.outages)
    merged: list[list[float]] = []
    for s, e in down:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return out + [(s, -e) for s, e in merged]
