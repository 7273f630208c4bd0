/* The workbench's heuristic schedulers in C, on the recorded per-path counters (transport units),
 * following docs/schedulers.md; the Python heuristics (envs/schedulers/ecf.py,
 * blest.py) are the reference, and tests/test_xquic.py feeds both the same states:
 *  - RR: cycle through the available paths, one packet each.
 *  - ECF (Lim et al., CoNEXT 2017): send on the fast path F when it has window; otherwise with
 *    k packets waiting, n = 1 + k / w_F, delta = max(sigma_F, sigma_S): if
 *    n tau_F < (1 + waiting beta)(tau_S + delta) then wait for F when (k / w_S) tau_S >= 2 tau_F + delta
 *    (waiting = 1), else send on S; otherwise waiting = 0 and send on S.
 *  - BLEST (Ferlin et al., IFIP Networking 2016): send on F when it has window; otherwise
 *    X = mss (w_F + (rtts - 1) / 2) rtts with rtts = tau_S / tau_F; wait when
 *    X lambda > rwnd - mss (f_S + 1), else send on S. lambda adapts once per srtt of F (on every
 *    call, before the rule): up by a step, to at most lambda_max, when the free window was at
 *    most 2 MSS at some call since the last adaptation, else down by a step, to at least its
 *    start value.
 *  - HSR, LWS, LTS (Kimura, Lima and Loureiro, IEEE Comm. Letters 21(11), 2017): among the
 *    available paths the largest cwnd / latest RTT (the srtt before a first sample); the largest
 *    window space cwnd - inflight; the lowest srtt / window space. LWS and LTS consider only paths
 *    with window space and fall back to the lowest srtt among the available paths. Ties: lower index.
 *  - The wait rule (envs/schedulers/wait_rule.py): send on F when it has window; otherwise send on S
 *    when tau_S / 2 <= k (tau_F / 2 + tau_F ahead / cwnd_F), ahead = max(inflight_F - cwnd_F, 0) +
 *    max(backlog, mss) (bytes; cwnd_F at least one mss), else wait.
 *  - KATO: every path's throughput estimate cwnd / srtt joins a running mean, sampled at most once
 *    per millisecond of elapsed time (the simulator samples once per step, so the mean weighs
 *    time, not packets); among the available paths High is the nearest to the mean from above (at
 *    the mean included), Low the nearest from below; with both, Low with probability alpha (a
 *    SplitMix64 stream seeded per transfer), else High; with one, that one.
 * Windows and flights are in packets of mss bytes, as in the papers. Deliberate differences from
 * the Python versions, for XQUIC (documented there too): for ECF and BLEST a second path without
 * an RTT sample yet (latest RTT 0: its srtt is the transport's initial guess) gets the packet: a
 * new MPTCP subflow has one from its handshake, a new QUIC path only once it carries data, and
 * without it the rules would never try the path. The wait rule has no such exception: it reads
 * the srtt XQUIC shows (its initial 250 ms before a sample), as the simulator's rule reads the
 * path's (docs/transfer.md, "dqn_modes"). ECF, BLEST and the wait rule wait for F only while F
 * has bytes in flight: with none, no acknowledgement would reopen its window and the connection
 * would stall (XQUIC calls the scheduler again only when something changes).
 */
#include "mps_xquic.h"

enum { O_CWND, O_SWND, O_SRTT, O_RTTVAR, O_MIN_RTT, O_LATEST_RTT, O_INFLIGHT, O_DELIVERY, O_LOSSES, O_RETRANS,
       O_RTOS, O_PACING, O_AVAILABLE, O_ACKED, O_SENT };
enum { C_BACKLOG, C_ACKED, C_ELAPSED, C_REORDER, C_RWND, C_REMAINING, C_ITEM_ACKED, C_ITEM_ELAPSED,
       C_ITEMS_ACKED, C_ITEM_RATE };

void
mps_rule_init(mps_rule_state *s, double ecf_beta, double blest_lambda, double blest_step,
              double blest_lambda_max, double kato_alpha, double wait_k, uint64_t seed)
{
    s->kato_sum = s->kato_count = 0.0;
    s->kato_stamp = UINT64_MAX;
    s->kato_alpha = kato_alpha;
    s->wait_k = wait_k;
    s->rng = seed;
    s->rr_next = 0;
    s->ecf_waiting = 0;
    s->blest_lambda = blest_lambda;
    s->blest_hol = 0;
    s->blest_last = 0;
    s->ecf_beta = ecf_beta;
    s->blest_lambda0 = blest_lambda;
    s->blest_step = blest_step;
    s->blest_lambda_max = blest_lambda_max;
}

/* F = lowest srtt among all paths; S = lowest srtt among the other available paths */
static void
roles(int n, const uint64_t obs[][MPS_N_OBS], int *fast, int *second)
{
    int i;
    *fast = *second = -1;
    for (i = 0; i < n; ++i)
        if (*fast < 0 || obs[i][O_SRTT] < obs[*fast][O_SRTT])
            *fast = i;
    for (i = 0; i < n; ++i)
        if (i != *fast && obs[i][O_AVAILABLE] && (*second < 0 || obs[i][O_SRTT] < obs[*second][O_SRTT]))
            *second = i;
}

static int
pick_rr(mps_rule_state *s, int n, const uint64_t obs[][MPS_N_OBS])
{
    int k;
    for (k = 0; k < n; ++k) {
        int i = (int)((s->rr_next + (uint32_t)k) % (uint32_t)n);
        if (obs[i][O_AVAILABLE]) {
            s->rr_next = (uint32_t)(i + 1);
            return i;
        }
    }
    return -1;
}

static int
pick_ecf(mps_rule_state *s, int f, int sp, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs, double mss)
{
    double tf = (double)obs[f][O_SRTT], ts = (double)obs[sp][O_SRTT];
    double wf = (double)obs[f][O_CWND] / mss, ws = (double)obs[sp][O_CWND] / mss;
    double k = (double)cobs[C_BACKLOG] / mss;
    double sf = (double)obs[f][O_RTTVAR], ss = (double)obs[sp][O_RTTVAR];
    double delta = sf > ss ? sf : ss;
    double n = 1.0 + k / (wf > 1.0 ? wf : 1.0);
    if (n * tf < (1.0 + s->ecf_waiting * s->ecf_beta) * (ts + delta)) {
        if ((k / (ws > 1.0 ? ws : 1.0)) * ts >= 2.0 * tf + delta) {
            s->ecf_waiting = 1;
            return -1;
        }
        return sp;
    }
    s->ecf_waiting = 0;
    return sp;
}

static int
pick_wait(const mps_rule_state *s, int f, int sp, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs, double mss)
{
    double tf = (double)obs[f][O_SRTT];
    double cwnd = (double)obs[f][O_CWND] > mss ? (double)obs[f][O_CWND] : mss;
    double over = (double)obs[f][O_INFLIGHT] - cwnd;
    double backlog = (double)cobs[C_BACKLOG] > mss ? (double)cobs[C_BACKLOG] : mss;
    double t_fast = 0.5 * tf + tf * (((over > 0.0 ? over : 0.0) + backlog) / cwnd);
    return 0.5 * (double)obs[sp][O_SRTT] <= s->wait_k * t_fast ? sp : -1;
}

/* BLEST's lambda, once per srtt of the fast path f */
static void
adapt_blest(mps_rule_state *s, int f, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs, double mss)
{
    uint64_t now = cobs[C_ELAPSED];
    if ((double)cobs[C_RWND] <= 2.0 * mss)
        s->blest_hol = 1;
    if (now - s->blest_last >= obs[f][O_SRTT]) {
        double up = s->blest_lambda + s->blest_step, down = s->blest_lambda - s->blest_step;
        if (s->blest_hol)
            s->blest_lambda = up < s->blest_lambda_max ? up : s->blest_lambda_max;
        else
            s->blest_lambda = down > s->blest_lambda0 ? down : s->blest_lambda0;
        s->blest_hol = 0;
        s->blest_last = now;
    }
}

static int
pick_blest(mps_rule_state *s, int f, int sp, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs, double mss)
{
    double tf = (double)obs[f][O_SRTT], ts = (double)obs[sp][O_SRTT];
    double rtts = tf > 0.0 ? ts / tf : 1.0;
    double wf = (double)obs[f][O_CWND] / mss, fs = (double)obs[sp][O_INFLIGHT] / mss;
    double rwnd = (double)cobs[C_RWND];
    double x = mss * (wf + (rtts - 1.0) / 2.0) * rtts;
    if (x * s->blest_lambda > rwnd - mss * (fs + 1.0))
        return -1;
    return sp;
}

/* inactive paths reach the rules with an infinite srtt (mps_xquic.c) */
static int
active(const uint64_t *o)
{
    return o[O_SRTT] != UINT64_MAX && o[O_SRTT] > 0;
}

static int
pick_hsr(int n, const uint64_t obs[][MPS_N_OBS])
{
    int i, best = -1;
    double best_rate = -1.0;
    for (i = 0; i < n; ++i) {
        double rtt, rate;
        if (!obs[i][O_AVAILABLE] || !active(obs[i]))
            continue;
        rtt = (double)(obs[i][O_LATEST_RTT] ? obs[i][O_LATEST_RTT] : obs[i][O_SRTT]);
        rate = (double)obs[i][O_CWND] / rtt;
        if (rate > best_rate)
            best_rate = rate, best = i;
    }
    return best;
}

/* LWS (per_time = 0) or LTS (1), falling back to the lowest srtt among the available paths */
static int
pick_window_space(int n, const uint64_t obs[][MPS_N_OBS], int per_time)
{
    int i, best = -1;
    double best_score = 0.0;
    for (i = 0; i < n; ++i) {
        double ws, score;
        if (!obs[i][O_AVAILABLE] || !active(obs[i]) || obs[i][O_CWND] <= obs[i][O_INFLIGHT])
            continue;
        ws = (double)(obs[i][O_CWND] - obs[i][O_INFLIGHT]);
        score = per_time ? (double)obs[i][O_SRTT] / ws : -ws;
        if (best < 0 || score < best_score)
            best_score = score, best = i;
    }
    if (best >= 0)
        return best;
    for (i = 0; i < n; ++i)
        if (obs[i][O_AVAILABLE] && active(obs[i]) && (best < 0 || obs[i][O_SRTT] < obs[best][O_SRTT]))
            best = i;
    return best;
}

static double
uniform01(mps_rule_state *s)
{
    uint64_t z = (s->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (double)((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
}

static int
pick_kato(mps_rule_state *s, int n, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs)
{
    int i, high = -1, low = -1;
    double mean, high_thr = 0.0, low_thr = 0.0;
    uint64_t ms = cobs[C_ELAPSED] / 1000;
    if (ms != s->kato_stamp) {
        s->kato_stamp = ms;
        for (i = 0; i < n; ++i)
            if (active(obs[i])) {
                s->kato_sum += (double)obs[i][O_CWND] / (double)obs[i][O_SRTT];
                s->kato_count += 1.0;
            }
    }
    mean = s->kato_count > 0.0 ? s->kato_sum / s->kato_count : 0.0;
    for (i = 0; i < n; ++i) {
        double thr;
        if (!obs[i][O_AVAILABLE] || !active(obs[i]))
            continue;
        thr = (double)obs[i][O_CWND] / (double)obs[i][O_SRTT];
        if (thr >= mean) {
            if (high < 0 || thr < high_thr)
                high = i, high_thr = thr;
        } else if (low < 0 || thr > low_thr) {
            low = i, low_thr = thr;
        }
    }
    if (high < 0 || low < 0)
        return high < 0 ? low : high;
    return uniform01(s) < s->kato_alpha ? low : high;
}

int
mps_rule_pick(mps_rule_state *s, int mode, int n, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs,
              uint64_t mss)
{
    int f, sp;
    if (n <= 0)
        return -1;
    if (mode == MPS_RR)
        return pick_rr(s, n, obs);
    if (mode == MPS_HSR)
        return pick_hsr(n, obs);
    if (mode == MPS_LWS || mode == MPS_LTS)
        return pick_window_space(n, obs, mode == MPS_LTS);
    if (mode == MPS_KATO)
        return pick_kato(s, n, obs, cobs);
    roles(n, obs, &f, &sp);
    if (mode == MPS_BLEST)
        adapt_blest(s, f, obs, cobs, (double)mss);
    if (obs[f][O_AVAILABLE])
        return f;
    if (sp < 0)
        return -1;
    if (obs[f][O_INFLIGHT] == 0)
        return sp;  /* nothing in flight on F: no ACK would call the scheduler again */
    if (mode == MPS_WAIT)  /* on the srtt XQUIC shows, sampled or not, as the simulator's rule reads it */
        return pick_wait(s, f, sp, obs, cobs, (double)mss);
    if (obs[sp][O_LATEST_RTT] == 0)
        return sp;  /* ECF, BLEST: a second path without an RTT sample gets the packet */
    if (mode == MPS_ECF)
        return pick_ecf(s, f, sp, obs, cobs, (double)mss);
    if (mode == MPS_BLEST)
        return pick_blest(s, f, sp, obs, cobs, (double)mss);
    return sp;  /* minRTT: the lowest-srtt available path */
}
