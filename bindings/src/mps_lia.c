/* LIA, the Linked Increases Algorithm of MPTCP (RFC 6356, section 3), as an XQUIC congestion
 * controller coupled across one connection's paths.
 *
 * XQUIC runs one controller instance per path (xqc_send_ctl_create gives each path's send control
 * its own state from conn_settings.cong_ctrl_callback) and hands each its path's send control,
 * which points at the connection (ctl_conn) and through it at every path (conn_paths_list). An
 * instance reads its siblings' windows and smoothed RTTs there, so the increase is coupled though
 * every path keeps its own window, as Linux MPTCP's mptcp_coupled.c does per subflow.
 *
 * Per acknowledged packet of ``acked`` bytes on path i in congestion avoidance, cwnd_i grows by
 *     min(alpha * acked * MSS / cwnd_total, acked * MSS / cwnd_i),
 *     alpha = cwnd_total * max_r(cwnd_r / rtt_r^2) / (sum_r cwnd_r / rtt_r)^2,
 * the sums over the connection's active paths with an RTT sample that run LIA (the simulator's
 * envs/cc/lia.py, which sums over the subflows with an RTT estimate). Slow start, the loss
 * response (halve once per recovery epoch, at least 2 MSS), the recovery epoch, the persistent
 * congestion reset, the initial window and the cwnd-limited check are those of XQUIC's NewReno
 * (xqc_new_reno.c), so LIA differs from the ``reno`` it replaces only in its coupled increase.
 * The window is kept in fractional bytes: the coupled increase is often below one byte per packet.
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

#define LIA_MSS ((double)XQC_MSS)                /* NewReno's unit: xqc_new_reno.c XQC_kMaxDatagramSize */
#define LIA_MIN_WINDOW (2.0 * LIA_MSS)           /* xqc_new_reno.c XQC_kMinimumWindow */
#define LIA_INIT_WINDOW (10.0 * LIA_MSS)         /* xqc_new_reno.c XQC_kInitialWindow with XQC_MSS */
#define LIA_MIN_INIT (4.0 * LIA_MSS)             /* xqc_new_reno.c XQC_RENO_MIN_INIT_WIN */
#define LIA_MAX_INIT (100.0 * LIA_MSS)           /* xqc_new_reno.c XQC_RENO_MAX_INIT_WIN */

typedef struct mps_lia {
    double cwnd;                  /* bytes, fractional */
    double ssthresh;              /* bytes */
    xqc_usec_t recovery_start;    /* start of the current recovery epoch (0: none) */
    xqc_send_ctl_t *ctl;          /* this path's send control */
} mps_lia;

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

static size_t
lia_size(void)
{
    return sizeof(mps_lia);
}

static void
lia_init(void *cong, xqc_send_ctl_t *ctl, xqc_cc_params_t params)
{
    mps_lia *l = (mps_lia *)cong;
    double init = (double)params.init_cwnd * LIA_MSS;
    l->cwnd = params.customize_on && init >= LIA_MIN_INIT && init <= LIA_MAX_INIT ? init : LIA_INIT_WINDOW;
    l->ssthresh = (double)0xffffffffu;
    l->recovery_start = 0;
    l->ctl = ctl;
}

static int
lia_sent_in_recovery(const mps_lia *l, xqc_usec_t sent_time)
{
    return sent_time <= l->recovery_start;
}

static void
lia_on_lost(void *cong, xqc_usec_t lost_sent_time)
{
    mps_lia *l = (mps_lia *)cong;
    if (lia_sent_in_recovery(l, lost_sent_time))
        return;  /* one reduction per recovery epoch */
    l->recovery_start = xqc_monotonic_timestamp();
    l->cwnd *= 0.5;
    if (l->cwnd < LIA_MIN_WINDOW)
        l->cwnd = LIA_MIN_WINDOW;
    l->ssthresh = l->cwnd;
}

static void lia_on_ack(void *cong, xqc_packet_out_t *po, xqc_usec_t now);

/* The windows and smoothed RTTs (us; 0 without an RTT sample) of the connection's active paths
 * that run LIA; *self gets this path's index among them. Returns how many. */
static int
lia_siblings(const mps_lia *l, double *cwnd, double *srtt, int *self)
{
    xqc_list_head_t *pos, *next;
    int n = 0;
    *self = -1;
    xqc_list_for_each_safe(pos, next, &l->ctl->ctl_conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        xqc_send_ctl_t *c = path->path_send_ctl;
        if (n == MPS_MAX_PATHS)
            break;
        if (c == l->ctl)
            *self = n;
        else if (path->path_state != XQC_PATH_STATE_ACTIVE || !c->ctl_cong
                 || c->ctl_cong_callback->xqc_cong_ctl_on_ack != lia_on_ack)
            continue;
        cwnd[n] = ((const mps_lia *)c->ctl_cong)->cwnd;
        srtt[n] = c->ctl_latest_rtt > 0 ? (double)c->ctl_srtt : 0.0;
        ++n;
    }
    return n;
}

static void
lia_on_ack(void *cong, xqc_packet_out_t *po, xqc_usec_t now)
{
    mps_lia *l = (mps_lia *)cong;
    double cwnd[MPS_MAX_PATHS], srtt[MPS_MAX_PATHS];
    int n, self;
    if (lia_sent_in_recovery(l, po->po_sent_time))
        return;  /* no increase in recovery */
    if (po->po_sent_time > l->recovery_start)
        l->recovery_start = 0;
    if (l->ctl && !xqc_send_ctl_is_cwnd_limited(l->ctl))
        return;
    if (l->cwnd < l->ssthresh) {
        l->cwnd += po->po_used_size;  /* slow start */
        return;
    }
    n = l->ctl ? lia_siblings(l, cwnd, srtt, &self) : 0;
    if (n == 0 || self < 0)
        l->cwnd += LIA_MSS * po->po_used_size / l->cwnd;
    else
        l->cwnd += mps_lia_increase(n, cwnd, srtt, self, (double)po->po_used_size, LIA_MSS);
}

static uint64_t
lia_get_cwnd(void *cong)
{
    return (uint64_t)((mps_lia *)cong)->cwnd;
}

static void
lia_reset_cwnd(void *cong)
{
    mps_lia *l = (mps_lia *)cong;
    l->cwnd = LIA_MIN_WINDOW;
    l->recovery_start = 0;
}

static int
lia_in_slow_start(void *cong)
{
    const mps_lia *l = (const mps_lia *)cong;
    return l->cwnd < l->ssthresh;
}

static int
lia_in_recovery(void *cong)
{
    return ((const mps_lia *)cong)->recovery_start > 0;
}

static void
lia_restart_from_idle(void *cong, uint64_t arg)
{
}

const xqc_cong_ctrl_callback_t mps_lia_cb = {
    .xqc_cong_ctl_size = lia_size,
    .xqc_cong_ctl_init = lia_init,
    .xqc_cong_ctl_on_lost = lia_on_lost,
    .xqc_cong_ctl_on_ack = lia_on_ack,
    .xqc_cong_ctl_get_cwnd = lia_get_cwnd,
    .xqc_cong_ctl_reset_cwnd = lia_reset_cwnd,
    .xqc_cong_ctl_in_slow_start = lia_in_slow_start,
    .xqc_cong_ctl_restart_from_idle = lia_restart_from_idle,
    .xqc_cong_ctl_in_recovery = lia_in_recovery,
};
