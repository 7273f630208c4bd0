"""The application on top of the connection: how much data it offers, and when it is done.

``step`` runs once per step and connection, after the receiver and the sender's feedback and
before sending (kernel.py ``_run``). It moves the connection's send limit ``CN_SND_LIMIT`` (the
bytes the application has handed to the transport) and says when the workload is complete
(docs/transport.md, "Workloads"):

- bulk: a backlogged sender; with ``messages`` of ``message_mb`` back to back (MPTCP-TUT) the
  whole series is offered at once, each message's delivery is recorded, and the episode ends
  when the last one is delivered; otherwise it runs for ``duration_s``;
- file: S bytes offered at once, complete when all are delivered in order;
- dash: 1 s chunks, one request at a time (LEEYOO's DASH client); a request reaches the server
  after the paths' smallest reverse delay (the client asks on its fastest path), then the chunk's
  bytes are offered; when the chunk's last byte is delivered in order, the client measures its
  throughput (bytes over request-to-completion time), adds the chunk to its playback buffer and
  asks for the next one as soon as the buffer has room for it. The bitrate is the highest rung of
  the ladder at most ``safety`` x the harmonic mean of the last ``throughput_chunks`` chunk
  throughputs (FESTIVE, Jiang et al. CoNEXT 2012; dash.js ThroughputRule's safety factor 0.9);
  the first chunk goes at the lowest rung. Playback starts with the first chunk and stalls
  (rebuffering) while the buffer is empty and chunks remain; complete after ``chunks`` chunks;
- web: ``objects`` objects of ``object_kb``, at most ``parallel`` requests outstanding (each a
  request/response as for dash), served in request order on the one connection; complete when
  every object is delivered.

Every workload also records, per time bin, the bytes delivered in order and the reorder buffer
(``rec``), from which ``envs.metrics`` computes windowed throughput and the buffer's distribution.
"""

import math

from numba import njit

from envs.sim.layout import *  # noqa: F403 (column names)

EPS = 1e-6


@njit(cache=True, _nrt=False, forceinline=True)
def step(t, c, w, it, rc, co, dt):
    """Advance connection ``c``'s workload to step ``t``; True when it is complete. Also writes
    the sender's view of the current item into ``co`` (``COBS_ITEM_*``)."""
    while t >= w[WL_BIN_END]:  # k = t // bin, without an integer division per step
        w[WL_BIN_K] += 1.0
        w[WL_BIN_END] += w[WL_BIN]
    k = int(w[WL_BIN_K])
    if k < rc.shape[0]:
        rc[k, REC_DELIVERED] = c[CN_RCV_NXT]
        rc[k, REC_REORDER] += c[CN_RCV_BYTES] - c[CN_RCV_NXT]
    kind = int(w[WL_TYPE])
    if kind == WL_DASH:
        complete = _dash(t, c, w, it)
    elif kind == WL_WEB:
        complete = _web(t, c, w, it)
    else:
        _deliver(t, c, w, it)
        complete = c[CN_RCV_NXT] >= w[WL_TOTAL] - EPS
    _sender_view(t, c, w, it, co, dt)
    return complete


@njit(inline="always", cache=True, _nrt=False)
def _sender_view(t, c, w, it, co, dt):
    """What the server knows of its responses: where each ends, when its request arrived, and
    the cumulative ACK. An item's clock starts at its request's arrival or, for back-to-back
    items, when the previous one was fully acknowledged."""
    k = int(w[WL_ACKED_ITEMS])
    released = int(w[WL_RELEASED])
    while k < released and c[CN_ACKED_EDGE] >= it[k, ITEM_END] - EPS:
        start = max(it[k, ITEM_ARRIVE], w[WL_ACK_STEP]) if k > 0 else it[k, ITEM_ARRIVE]
        size = it[k, ITEM_END] - (it[k - 1, ITEM_END] if k > 0 else 0.0)
        co[COBS_ITEM_RATE] = size / (max(t - start, 1.0) * dt)
        w[WL_ACK_STEP] = t
        k += 1
    w[WL_ACKED_ITEMS] = k
    co[COBS_ITEMS_ACKED] = k
    if k < released:
        begin = it[k - 1, ITEM_END] if k > 0 else 0.0
        start = max(it[k, ITEM_ARRIVE], w[WL_ACK_STEP]) if k > 0 else it[k, ITEM_ARRIVE]
        co[COBS_ITEM_ACKED] = max(c[CN_ACKED_EDGE] - begin, 0.0)
        co[COBS_ITEM_ELAPSED] = max(t - start, 0.0) * dt
    else:
        co[COBS_ITEM_ACKED] = 0.0
        co[COBS_ITEM_ELAPSED] = 0.0


@njit(inline="always", cache=True, _nrt=False)
def _deliver(t, c, w, it):
    """Mark the offered items whose last byte has been delivered in order."""
    done = int(w[WL_DONE_ITEMS])
    released = int(w[WL_RELEASED])
    while done < released and c[CN_RCV_NXT] >= it[done, ITEM_END] - EPS:
        it[done, ITEM_DONE] = t
        done += 1
    w[WL_DONE_ITEMS] = done


@njit(inline="always", cache=True, _nrt=False)
def _request(t, w, it, rate):
    k = int(w[WL_ISSUED])
    it[k, ITEM_REQ] = t
    it[k, ITEM_ARRIVE] = t + w[WL_REQ_DELAY]
    it[k, ITEM_RATE] = rate
    w[WL_ISSUED] = k + 1


@njit(inline="always", cache=True, _nrt=False)
def _serve(t, c, w, it, size_of_rate):
    """Requests that reached the server by step t: their bytes join the send buffer, in order."""
    rel = int(w[WL_RELEASED])
    while rel < int(w[WL_ISSUED]) and it[rel, ITEM_ARRIVE] <= t:
        size = it[rel, ITEM_RATE] * w[WL_CHUNK_STEPS] if size_of_rate else w[WL_ITEM_BYTES]
        c[CN_SND_LIMIT] += math.floor(size + 0.5)
        it[rel, ITEM_END] = c[CN_SND_LIMIT]
        rel += 1
    w[WL_RELEASED] = rel


@njit(cache=True, _nrt=False)
def _web(t, c, w, it):
    _deliver(t, c, w, it)
    n = int(w[WL_ITEMS])
    if int(w[WL_DONE_ITEMS]) >= n:
        return True
    while int(w[WL_ISSUED]) < n and w[WL_ISSUED] - w[WL_DONE_ITEMS] < w[WL_PARALLEL]:
        _request(t, w, it, 0.0)
    _serve(t, c, w, it, False)
    return False


@njit(cache=True, _nrt=False)
def _dash(t, c, w, it):
    n = int(w[WL_ITEMS])
    before = int(w[WL_DONE_ITEMS])
    if w[WL_PLAYING] > 0.0:
        if w[WL_BUFFER] >= 1.0 - EPS:
            w[WL_BUFFER] -= 1.0
        elif before < n:
            w[WL_REBUF] += 1.0
    _deliver(t, c, w, it)
    done = int(w[WL_DONE_ITEMS])
    if done > before:  # one chunk at a time: at most one completes per step
        k = done - 1
        start = it[k - 1, ITEM_END] if k > 0 else 0.0
        w[WL_HIST + k % int(w[WL_HIST_K])] = (it[k, ITEM_END] - start) / max(t - it[k, ITEM_REQ], 1.0)
        w[WL_BUFFER] += w[WL_CHUNK_STEPS]
        w[WL_PLAYING] = 1.0
    if done >= n:
        return True
    if int(w[WL_ISSUED]) == done and w[WL_BUFFER] + w[WL_CHUNK_STEPS] <= w[WL_BUF_MAX] + EPS:
        _request(t, w, it, _choose_rate(w, done))
    _serve(t, c, w, it, True)
    return False


@njit(inline="always", cache=True, _nrt=False)
def _choose_rate(w, done):
    """Highest rung <= safety x harmonic mean of the last chunks' throughputs (lowest at first)."""
    m = min(done, int(w[WL_HIST_K]))
    if m == 0:
        return w[WL_RATE]
    inv = 0.0
    for j in range(m):
        inv += 1.0 / max(w[WL_HIST + j], EPS)
    budget = w[WL_SAFETY] * m / inv
    rate = w[WL_RATE]
    for j in range(1, int(w[WL_N_RATES])):
        if w[WL_RATE + j] <= budget + EPS:
            rate = w[WL_RATE + j]
    return rate
