/* The coupled MPTCP congestion controls LIA (RFC 6356, section 3), OLIA (Khalili, Gast, Popovic,
 * Le Boudec, CoNEXT 2012) and BALIA (Peng, Walid, Hwang, Low, IEEE/ACM ToN 2016) as XQUIC
 * congestion controllers coupled across one connection's paths.
 *
 * XQUIC runs one controller instance per path (xqc_send_ctl_create gives each path's send control
 * its own state from conn_settings.cong_ctrl_callback) and hands each its path's send control,
 * which points at the connection (ctl_conn) and through it at every path (conn_paths_list). An
 * instance reads its siblings' windows and smoothed RTTs there, so the increase is coupled though
 * every path keeps its own window, as Linux MPTCP's mptcp_coupled.c, mptcp_olia.c and
 * mptcp_balia.c do per subflow. The sums run over the connection's active paths with an RTT sample
 * that run the same algorithm (the simulator's envs/cc/coupled.py sums over the subflows with an
 * RTT estimate).
 *
 * Per acknowledged packet of ``acked`` bytes on path i in congestion avoidance (windows w in
 * bytes, rtt the smoothed RTTs; the same rules as envs/cc/lia.py, olia.py and balia.py):
 *   LIA:   w_i += min(alpha * acked * MSS / sum_r w_r, acked * MSS / w_i),
 *          alpha = sum_r w_r * max_r(w_r / rtt_r^2) / (sum_r w_r / rtt_r)^2;
 *   OLIA:  w_i += acked * MSS * ((w_i / rtt_i^2) / (sum_r w_r / rtt_r)^2 + epsilon_i / w_i),
 *          epsilon_i from the paths' loss intervals l_r (the larger of the bytes acked between the
 *          last two losses and since the last loss; envs/cc/olia.py), at least 2 MSS;
 *   BALIA: w_i += acked * MSS * x_i / (rtt_i (sum_r x_r)^2) * (1 + a_i) / 2 * (4 + a_i) / 5,
 *          x_r = w_r / rtt_r, a_i = max_r x_r / x_i; on a loss w_i -= w_i / 2 * min(a_i, 1.5).
 * Slow start, the loss response of LIA and OLIA (halve once per recovery epoch, at least 2 MSS), the
 * recovery epoch, the persistent congestion reset, the initial window and the cwnd-limited check
 * are those of XQUIC's NewReno (xqc_new_reno.c), so each differs from the ``reno`` it replaces only
 * in its coupled rules. The window is kept in fractional bytes: a coupled increase is often below
 * one byte per packet.
 */
#include "mps_xquic.h"

#include <xquic/xquic.h>
#include <xquic/xquic_typedef.h>
#include "src/common/xqc_list.h"
#include "src/common/xqc_time.h"
#include "src/transport/xqc_conn.h"
#include "src/transport/xqc_multipath.h"
#include "src/transport/xqc_packet.h"
#include "src/transport/xqc_packet_out.h"
#include "src/transport/xqc_send_ctl.h"

#define CPL_MSS ((double)XQC_MSS)                /* NewReno's unit: xqc_new_reno.c XQC_kMaxDatagramSize */
#define CPL_MIN_WINDOW (2.0 * CPL_MSS)           /* xqc_new_reno.c XQC_kMinimumWindow */
#define CPL_INIT_WINDOW (10.0 * CPL_MSS)         /* xqc_new_reno.c XQC_kInitialWindow with XQC_MSS */
#define CPL_MIN_INIT (4.0 * CPL_MSS)             /* xqc_new_reno.c XQC_RENO_MIN_INIT_WIN */
#define CPL_MAX_INIT (100.0 * CPL_MSS)           /* xqc_new_reno.c XQC_RENO_MAX_INIT_WIN */

typedef enum { CPL_LIA, CPL_OLIA, CPL_BALIA } cpl_kind;

typedef struct mps_coupled {
    double cwnd;                  /* bytes, fractional */
    double ssthresh;              /* bytes */
    xqc_usec_t recovery_start;    /* start of the current recovery epoch (0: none) */
    double l_prev, l_cur;         /* OLIA: bytes acked between the last two losses, since the last */
    xqc_send_ctl_t *ctl;          /* this path's send control */
    cpl_kind kind;
} mps_coupled;

/* ------------------------------------------------------------------ the rules, on plain arrays */

double
mps_lia_increase(int n, const double *cwnd, const double *srtt_us, int i, double acked, double mss)
{
    double best = 0.0, total = 0.0, rates = 0.0, alpha, coupled, own;
    int r;
    if (i < 0 || i >= n || cwnd[i] <= 0.0)
        return 0.0;
    own = acked * mss / cwnd[i];  /* Reno's increase: never more than TCP on this path */
    for (r = 0; r < n; ++r) {
        if (srtt_us[r] <= 0.0)
            continue;  /* no RTT estimate yet: not in the sums */
        if (cwnd[r] / (srtt_us[r] * srtt_us[r]) > best)
            best = cwnd[r] / (srtt_us[r] * srtt_us[r]);
        total += cwnd[r];
        rates += cwnd[r] / srtt_us[r];
    }
    if (srtt_us[i] <= 0.0 || rates <= 0.0)
        return own;  /* the path itself has no estimate: it couples with nobody yet */
    alpha = total * best / (rates * rates);
    coupled = alpha * acked * mss / total;
    return coupled < own ? coupled : own;
}

/* sum_r w_r / rtt_r over the paths with an RTT estimate */
static double
rate_sum(int n, const double *cwnd, const double *srtt_us)
{
    double rates = 0.0;
    int r;
    for (r = 0; r < n; ++r)
        if (srtt_us[r] > 0.0)
            rates += cwnd[r] / srtt_us[r];
    return rates;
}

/* OLIA's epsilon_i (envs/cc/olia.py epsilon): +1 / (n |B \ M|) on the best paths B (largest
 * l_r / rtt_r^2) that do not have the largest window (M), -1 / (n |M|) on M when B \ M is not
 * empty, else 0; n the paths with an RTT estimate. */
static double
olia_epsilon(int n, const double *cwnd, const double *srtt_us, const double *loss_bytes, int i)
{
    double max_w = 0.0, best = 0.0, q;
    int r, counted = 0, in_m = 0, best_not_m = 0;
    for (r = 0; r < n; ++r) {
        if (srtt_us[r] <= 0.0)
            continue;
        ++counted;
        q = loss_bytes[r] / (srtt_us[r] * srtt_us[r]);
        if (cwnd[r] > max_w)
            max_w = cwnd[r];
        if (q > best)
            best = q;
    }
    for (r = 0; r < n; ++r) {
        if (srtt_us[r] <= 0.0)
            continue;
        if (cwnd[r] == max_w)
            ++in_m;
        else if (loss_bytes[r] / (srtt_us[r] * srtt_us[r]) == best)
            ++best_not_m;
    }
    if (best_not_m == 0)
        return 0.0;
    if (cwnd[i] == max_w)
        return -1.0 / (counted * in_m);
    if (loss_bytes[i] / (srtt_us[i] * srtt_us[i]) == best)
        return 1.0 / (counted * best_not_m);
    return 0.0;
}

double
mps_olia_increase(int n, const double *cwnd, const double *srtt_us, const double *loss_bytes, int i, double acked,
                  double mss)
{
    double rates, w;
    if (i < 0 || i >= n || cwnd[i] <= 0.0)
        return 0.0;
    w = cwnd[i];
    rates = rate_sum(n, cwnd, srtt_us);
    if (srtt_us[i] <= 0.0 || rates <= 0.0)
        return acked * mss / w;  /* no estimate yet: Reno's increase */
    return acked * mss * ((w / (srtt_us[i] * srtt_us[i])) / (rates * rates)
                          + olia_epsilon(n, cwnd, srtt_us, loss_bytes, i) / w);
}

double
mps_balia_alpha(int n, const double *cwnd, const double *srtt_us, int i)
{
    double best = 0.0, own;
    int r;
    for (r = 0; r < n; ++r)
        if (srtt_us[r] > 0.0 && cwnd[r] / srtt_us[r] > best)
            best = cwnd[r] / srtt_us[r];
    own = srtt_us[i] > 0.0 ? cwnd[i] / srtt_us[i] : best;
    return own > 0.0 ? best / own : 1.0;
}

double
mps_balia_increase(int n, const double *cwnd, const double *srtt_us, int i, double acked, double mss)
{
    double rates, a, x;
    if (i < 0 || i >= n || cwnd[i] <= 0.0)
        return 0.0;
    rates = rate_sum(n, cwnd, srtt_us);
    if (srtt_us[i] <= 0.0 || rates <= 0.0)
        return acked * mss / cwnd[i];  /* no estimate yet: Reno's increase */
    a = mps_balia_alpha(n, cwnd, srtt_us, i);
    x = cwnd[i] / srtt_us[i];
    return acked * mss * x / (srtt_us[i] * rates * rates) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
}

/* ------------------------------------------------------------------ XQUIC's controller callbacks */

static size_t
coupled_size(void)
{
    return sizeof(mps_coupled);
}

static void
coupled_init(mps_coupled *c, xqc_send_ctl_t *ctl, xqc_cc_params_t params, cpl_kind kind)
{
    double init = (double)params.init_cwnd * CPL_MSS;
    c->cwnd = params.customize_on && init >= CPL_MIN_INIT && init <= CPL_MAX_INIT ? init : CPL_INIT_WINDOW;
    c->ssthresh = (double)0xffffffffu;
    c->recovery_start = 0;
    c->l_prev = c->l_cur = 0.0;
    c->ctl = ctl;
    c->kind = kind;
}

static void
lia_init(void *cong, xqc_send_ctl_t *ctl, xqc_cc_params_t params)
{
    coupled_init((mps_coupled *)cong, ctl, params, CPL_LIA);
}

static void
olia_init(void *cong, xqc_send_ctl_t *ctl, xqc_cc_params_t params)
{
    coupled_init((mps_coupled *)cong, ctl, params, CPL_OLIA);
}

static void
balia_init(void *cong, xqc_send_ctl_t *ctl, xqc_cc_params_t params)
{
    coupled_init((mps_coupled *)cong, ctl, params, CPL_BALIA);
}

static void coupled_on_ack(void *cong, xqc_packet_out_t *po, xqc_usec_t now);

/* The windows, smoothed RTTs (us; 0 without an RTT sample) and OLIA loss intervals (bytes) of the
 * connection's active paths that run the same algorithm; *self gets this path's index among them.
 * Returns how many. */
static int
coupled_siblings(const mps_coupled *c, double *cwnd, double *srtt, double *loss_bytes, int *self)
{
    xqc_list_head_t *pos, *next;
    int n = 0;
    *self = -1;
    xqc_list_for_each_safe(pos, next, &c->ctl->ctl_conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        xqc_send_ctl_t *s = path->path_send_ctl;
        const mps_coupled *o;
        if (n == MPS_MAX_PATHS)
            break;
        if (s == c->ctl)
            *self = n;
        else if (path->path_state != XQC_PATH_STATE_ACTIVE || !s->ctl_cong
                 || s->ctl_cong_callback->xqc_cong_ctl_on_ack != coupled_on_ack
                 || ((const mps_coupled *)s->ctl_cong)->kind != c->kind)
            continue;
        o = (const mps_coupled *)s->ctl_cong;
        cwnd[n] = o->cwnd;
        srtt[n] = s->ctl_latest_rtt > 0 ? (double)s->ctl_srtt : 0.0;
        loss_bytes[n] = o->l_prev > o->l_cur ? o->l_prev : o->l_cur;
        ++n;
    }
    return n;
}

static int
coupled_sent_in_recovery(const mps_coupled *c, xqc_usec_t sent_time)
{
    return sent_time <= c->recovery_start;
}

/* OLIA: a loss episode closes the current loss interval (envs/cc/olia.py _new_loss_interval) */
static void
coupled_new_loss_interval(mps_coupled *c)
{
    if (c->l_cur > 0.0) {
        c->l_prev = c->l_cur;
        c->l_cur = 0.0;
    }
}

static void
coupled_on_lost(void *cong, xqc_usec_t lost_sent_time)
{
    mps_coupled *c = (mps_coupled *)cong;
    double cwnd[MPS_MAX_PATHS], srtt[MPS_MAX_PATHS], loss_bytes[MPS_MAX_PATHS];
    int n, self;
    if (coupled_sent_in_recovery(c, lost_sent_time))
        return;  /* one reduction per recovery epoch */
    c->recovery_start = xqc_monotonic_timestamp();
    coupled_new_loss_interval(c);
    n = c->kind == CPL_BALIA && c->ctl ? coupled_siblings(c, cwnd, srtt, loss_bytes, &self) : 0;
    if (n > 0 && self >= 0) {
        double a = mps_balia_alpha(n, cwnd, srtt, self);
        c->cwnd -= c->cwnd / 2.0 * (a < 1.5 ? a : 1.5);  /* BALIA's decrease */
    } else {
        c->cwnd *= 0.5;  /* NewReno's (and BALIA's with one path) */
    }
    if (c->cwnd < CPL_MIN_WINDOW)
        c->cwnd = CPL_MIN_WINDOW;
    c->ssthresh = c->cwnd;
}

static void
coupled_on_ack(void *cong, xqc_packet_out_t *po, xqc_usec_t now)
{
    mps_coupled *c = (mps_coupled *)cong;
    double cwnd[MPS_MAX_PATHS], srtt[MPS_MAX_PATHS], loss_bytes[MPS_MAX_PATHS], acked = po->po_used_size;
    int n, self;
    c->l_cur += acked;
    if (coupled_sent_in_recovery(c, po->po_sent_time))
        return;  /* no increase in recovery */
    if (po->po_sent_time > c->recovery_start)
        c->recovery_start = 0;
    if (c->ctl && !xqc_send_ctl_is_cwnd_limited(c->ctl))
        return;
    if (c->cwnd < c->ssthresh) {
        c->cwnd += acked;  /* slow start */
        return;
    }
    n = c->ctl ? coupled_siblings(c, cwnd, srtt, loss_bytes, &self) : 0;
    if (n == 0 || self < 0) {
        c->cwnd += CPL_MSS * acked / c->cwnd;
        return;
    }
    switch (c->kind) {
    case CPL_LIA:
        c->cwnd += mps_lia_increase(n, cwnd, srtt, self, acked, CPL_MSS);
        break;
    case CPL_OLIA:
        c->cwnd += mps_olia_increase(n, cwnd, srtt, loss_bytes, self, acked, CPL_MSS);
        if (c->cwnd < CPL_MIN_WINDOW)
            c->cwnd = CPL_MIN_WINDOW;
        break;
    case CPL_BALIA:
        c->cwnd += mps_balia_increase(n, cwnd, srtt, self, acked, CPL_MSS);
        break;
    }
}

static uint64_t
coupled_get_cwnd(void *cong)
{
    return (uint64_t)((mps_coupled *)cong)->cwnd;
}

static void
coupled_reset_cwnd(void *cong)
{
    mps_coupled *c = (mps_coupled *)cong;
    c->cwnd = CPL_MIN_WINDOW;
    c->recovery_start = 0;
    coupled_new_loss_interval(c);
}

static int
coupled_in_slow_start(void *cong)
{
    const mps_coupled *c = (const mps_coupled *)cong;
    return c->cwnd < c->ssthresh;
}

static int
coupled_in_recovery(void *cong)
{
    return ((const mps_coupled *)cong)->recovery_start > 0;
}

static void
coupled_restart_from_idle(void *cong, uint64_t arg)
{
}

#define MPS_COUPLED_CB(init_fn)                                     \
    {                                                               \
        .xqc_cong_ctl_size = coupled_size,                          \
        .xqc_cong_ctl_init = init_fn,                               \
        .xqc_cong_ctl_on_lost = coupled_on_lost,                    \
        .xqc_cong_ctl_on_ack = coupled_on_ack,                      \
        .xqc_cong_ctl_get_cwnd = coupled_get_cwnd,                  \
        .xqc_cong_ctl_reset_cwnd = coupled_reset_cwnd,              \
        .xqc_cong_ctl_in_slow_start = coupled_in_slow_start,        \
        .xqc_cong_ctl_restart_from_idle = coupled_restart_from_idle, \
        .xqc_cong_ctl_in_recovery = coupled_in_recovery,            \
    }

const xqc_cong_ctrl_callback_t mps_lia_cb = MPS_COUPLED_CB(lia_init);
const xqc_cong_ctrl_callback_t mps_olia_cb = MPS_COUPLED_CB(olia_init);
const xqc_cong_ctrl_callback_t mps_balia_cb = MPS_COUPLED_CB(balia_init);
