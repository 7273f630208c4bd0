/* One multipath XQUIC transfer: client and server engines in one event loop (see mps_xquic.h).
 *
 * Built against an XQUIC source tree (internal headers: per-path state lives in
 * src/transport/xqc_send_ctl.h and xqc_multipath.h) and its PIC static library.
 */
#define _GNU_SOURCE
#include "mps_xquic.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <xquic/xquic.h>
#include <xquic/xquic_typedef.h>
#include "src/common/xqc_list.h"
#include "src/transport/xqc_cid.h"
#include "src/transport/xqc_conn.h"
#include "src/transport/xqc_multipath.h"
#include "src/transport/xqc_packet_out.h"
#include "src/transport/xqc_send_queue.h"
#include "src/transport/xqc_send_ctl.h"
#include "src/transport/xqc_stream.h"
#include "src/transport/scheduler/xqc_scheduler_common.h"

#define ALPN "mpsched"
#define CHUNK (1u << 20)
#define MSS 1200u  /* XQUIC's default max UDP payload for packet-count conversions */
#define OOO_MARK "stream frame buffered count exceed"
#define IDLE_MARK "close_msg:idle timeout"
#define CONN_REPORT_MARK "|has_0rtt:"  /* xqc_conn_destroy's statistics line */

enum { O_CWND, O_SWND, O_SRTT, O_RTTVAR, O_MIN_RTT, O_LATEST_RTT, O_INFLIGHT, O_DELIVERY, O_LOSSES, O_RETRANS,
       O_RTOS, O_PACING, O_AVAILABLE, O_ACKED, O_SENT };
enum { C_BACKLOG, C_ACKED, C_ELAPSED, C_REORDER, C_RWND, C_REMAINING, C_ITEM_ACKED, C_ITEM_ELAPSED,
       C_ITEMS_ACKED, C_ITEM_RATE };

static unsigned char zeros[CHUNK];

typedef struct ring {
    mps_record *buf;
    uint32_t cap;
    uint64_t head, tail;  /* records written, records read */
    uint64_t dropped;     /* overwritten before being read, since the last read */
} ring;

typedef struct side {
    struct mps_transfer *t;
    int server;
    double wake;  /* absolute monotonic seconds; 0: none */
} side;

struct mps_transfer {
    mps_config cfg;
    char *cert, *key;
    side sides[2];
    xqc_engine_t *cli, *srv;
    xqc_cid_t cid;
    xqc_connection_t *cconn;
    xqc_stream_t *cstream;
    uint64_t queued;  /* bytes handed to the client stream (XQUIC frames them at once: xqc_stream_send) */
    uint64_t committed;  /* stream offset up to which the scheduler has put the data on a path */
    uint64_t path_ids[MPS_MAX_PATHS];
    int path_ok[MPS_MAX_PATHS];
    uint64_t rate[MPS_MAX_PATHS];  /* each path's latest valid delivery-rate sample (delivery_rate) */
    int npaths;
    xqc_connection_t *sconn;
    xqc_cid_t scid;
    int have_scid;
    uint64_t received;
    double t_create, t0, t_done;
    int started, finished, cli_closed, srv_closed;
    atomic_int stop;
    atomic_int mode;
    atomic_int policy_mode;     /* an interval policy's mode in force (one of cfg.policy_modes) */
    double next_policy;         /* an interval policy decides next at this time */
    int policy_decided;         /* an interval policy has answered once (it had its paths) */
    mps_rule_state rules;
    void *dl;
    mps_policy_fn policy;
    uint64_t decisions, policy_errors, policy_calls;
    double policy_ns;
    pthread_mutex_t lock;
    ring rings[2];
    double next_interval;
    double next_path_try;
    double next_resume_try;     /* resume_stuck_send: not before this time */
    int window_blocked;         /* the last scheduler call found no path with window room */
    xqc_usec_t next_challenge[2][MPS_MAX_PATHS];  /* revalidate_paths, per side and path: XQUIC's clock */
    unsigned challenges[2][MPS_MAX_PATHS];        /* PATH_CHALLENGEs re-sent there so far */
    int states_recorded;        /* record_path_states ran */
    uint32_t srv_dropped[MPS_MAX_PATHS];  /* datagrams the server dropped per path (drop_new_path_datagrams) */
    mps_result res;
};

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
add_error(mps_transfer *t, const char *msg, size_t len)
{
    size_t used = strlen(t->res.errors), room = sizeof(t->res.errors) - used - 1;
    if (room < 2)
        return;
    if (used)
        t->res.errors[used++] = '\n', --room;
    if (len > room)
        len = room;
    memcpy(t->res.errors + used, msg, len);
    t->res.errors[used + len] = 0;
}

/* the policy loaded decides per interval, and is the mode set */
static int
interval_policy(mps_transfer *t)
{
    return t->cfg.n_policy_modes && t->policy && atomic_load(&t->mode) == MPS_POLICY;
}

/* the scheduling mode in force: the one set, or under an interval policy the mode it chose last */
static int
mode_in_force(mps_transfer *t)
{
    int mode = atomic_load(&t->mode);
    return mode == MPS_POLICY && t->cfg.n_policy_modes ? atomic_load(&t->policy_mode) : mode;
}

/* ------------------------------------------------------------------ per-path state */

static int
path_index(mps_transfer *t, uint64_t path_id)
{
    int i;
    for (i = 0; i < t->cfg.n_paths; ++i)
        if (t->path_ok[i] && t->path_ids[i] == path_id)
            return i;
    return -1;
}

static uint64_t
conn_rwnd(xqc_connection_t *conn)
{
    xqc_conn_flow_ctl_t *fc = &conn->conn_flow_ctl;
    return fc->fc_max_data_can_send > fc->fc_data_sent ? fc->fc_max_data_can_send - fc->fc_data_sent : 0;
}

/* the stream data packet_out po carries (its STREAM frames, xqc_po_stream_frame_t); *end becomes at
   least the end offset of the last of them */
static uint64_t
po_stream_bytes(const xqc_packet_out_t *po, uint64_t *end)
{
    uint64_t n = 0;
    unsigned i;
    for (i = 0; i < po->po_stream_frames_idx && i < XQC_MAX_STREAM_FRAME_IN_PO; ++i) {
        const xqc_po_stream_frame_t *f = &po->po_stream_frames[i];
        if (!f->ps_is_used || f->ps_is_reset)
            continue;
        n += f->ps_length;
        if (f->ps_offset + f->ps_length > *end)
            *end = f->ps_offset + f->ps_length;
    }
    return n;
}

/* The bytes the connection has yet to send, as the simulator counts them (envs/sim/kernel.py,
   _schedule: the bytes awaiting retransmission plus the new data not yet sent, up to the
   flow-control limit), so that a policy reads here what it read in training. XQUIC frames the
   file into packets as soon as flow control allows (xqc_stream_send) and asks the scheduler once
   per packet to send (xqc_conn_schedule_packets), so:
   - awaiting retransmission: the stream data of the copies of lost packets XQUIC queued
     (xqc_send_queue_copy_to_lost into sndq_lost_packets), not yet put on a path;
   - new data: what no scheduler call has put on a path yet (the packet being asked about
     included), framed or not, the unframed part up to the connection's flow-control credit.
   Not the bytes on the wire (ctl_bytes_send): they count every retransmission, the packets'
   headers and the ACK-only packets as progress, and read 0 long before the end of a lossy transfer
   (BBRv1's startup on hetero_file resends a third of what it sends). */
static uint64_t
conn_backlog(mps_transfer *t, xqc_connection_t *conn)
{
    xqc_list_head_t *pos;
    uint64_t lost = 0, end = 0, size = t->cfg.size_bytes, framed = t->queued, credit = conn_rwnd(conn);
    xqc_list_for_each(pos, &conn->conn_send_queue->sndq_lost_packets)
        lost += po_stream_bytes(xqc_list_entry(pos, xqc_packet_out_t, po_list), &end);
    return lost + (framed > t->committed ? framed - t->committed : 0)
           + (size - framed < credit ? size - framed : credit);
}

/* The latest delivery-rate sample (bytes/s) of the path's last ACK, or ``last`` when that ACK gave
 * none: the arithmetic of xqc_generate_sample (xqc_sample.c; draft-cheng-iccrg-delivery-rate-
 * estimation): the bytes delivered since the newest acknowledged packet left, over the longer of
 * its send and ACK intervals, no sample when that interval is below min_rtt or the ACK
 * acknowledged nothing on the path. XQUIC runs it for BBR only, so it is done here on the sampler
 * XQUIC fills for every CC (xqc_update_sample): the same input under every CC, as Linux's
 * tcpi_delivery_rate and the simulator's delivery_rate (docs/architecture.md, "From the
 * simulator to a real transport"). */
static uint64_t
rate_sample(const xqc_send_ctl_t *c, uint64_t last)
{
    const xqc_sample_t *s = &c->sampler;
    xqc_usec_t interval = s->ack_elapse > s->send_elapse ? s->ack_elapse : s->send_elapse;
    if (s->prior_time == 0 || interval == 0 || interval < c->ctl_minrtt)
        return last;
    return (uint64_t)(1e6 * (double)(c->ctl_delivered - s->prior_delivered) / (double)interval);
}

/* path k's OBS_* row of record r in transport units, and its CC's bandwidth estimate */
static void
path_row(mps_transfer *t, xqc_path_ctx_t *path, int k, int can_send, uint64_t rwnd, mps_record *r)
{
    xqc_send_ctl_t *c = path->path_send_ctl;
    const xqc_cong_ctrl_callback_t *cc = c->ctl_cong_callback;
    uint64_t cwnd = cc->xqc_cong_ctl_get_cwnd(c->ctl_cong), *row = r->obs[k];
    memset(row, 0, sizeof(uint64_t) * MPS_N_OBS);
    row[O_CWND] = cwnd;
    row[O_SWND] = cwnd < rwnd ? cwnd : rwnd;
    row[O_SRTT] = c->ctl_srtt;
    row[O_RTTVAR] = c->ctl_rttvar;
    row[O_MIN_RTT] = c->ctl_minrtt == XQC_MAX_UINT32_VALUE ? c->ctl_srtt : c->ctl_minrtt;
    row[O_LATEST_RTT] = c->ctl_latest_rtt;
    /* committed to the path and not acknowledged: in flight plus scheduled, not yet sent */
    row[O_INFLIGHT] = (uint64_t)c->ctl_bytes_in_flight + path->path_schedule_bytes;
    t->rate[k] = rate_sample(c, t->rate[k]);
    row[O_DELIVERY] = t->rate[k];
    r->cc_bw[k] = cc->xqc_cong_ctl_get_bandwidth_estimate ? cc->xqc_cong_ctl_get_bandwidth_estimate(c->ctl_cong) : 0;
    /* declared lost (xqc_send_ctl_detect_lost adds each detection's lost_n), and the copies of
     * lost packets sent (xqc_send_ctl_on_packet_sent, XQC_POF_LOST): a copy whose original is
     * acknowledged before it leaves is dropped, so under reordering the second is the smaller,
     * as the simulator counts them (envs/sim/layout.py OBS_LOSSES, OBS_RETRANS) */
    row[O_LOSSES] = c->ctl_lost_pkts_number;
    row[O_RETRANS] = c->ctl_lost_count;
    row[O_RTOS] = c->ctl_tlp_count;
    row[O_PACING] = t->cfg.pacing && cc->xqc_cong_ctl_get_pacing_rate ? cc->xqc_cong_ctl_get_pacing_rate(c->ctl_cong) : 0;
    row[O_AVAILABLE] = can_send ? 1 : 0;
    row[O_ACKED] = c->ctl_delivered;
    row[O_SENT] = c->ctl_bytes_send;
}

/* every configured path (by index) and the connection; avail from the scheduler's check when
   packet_out is given, else from the window; returns how many leading paths are active */
static int
snapshot(mps_transfer *t, xqc_connection_t *conn, xqc_packet_out_t *po, int check_cwnd, int reinject,
         mps_record *r, xqc_path_ctx_t **paths)
{
    xqc_list_head_t *pos, *next;
    int i, lead = 0;
    uint64_t rwnd = conn_rwnd(conn), acked = 0;
    double now = now_s();
    memset(r->obs, 0, sizeof(r->obs));
    memset(r->active, 0, sizeof(r->active));
    memset(r->cc_bw, 0, sizeof(r->cc_bw));
    xqc_list_for_each_safe(pos, next, &conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        int k = path_index(t, path->path_id), can;
        if (k < 0)
            continue;
        if (path->path_state != XQC_PATH_STATE_ACTIVE || path->app_path_status == XQC_APP_PATH_STATUS_FROZEN
            || (reinject && po && po->po_path_id == path->path_id))
        {
            continue;
        }
        if (po)
            can = xqc_scheduler_check_path_can_send(path, po, check_cwnd);
        else {
            xqc_send_ctl_t *c = path->path_send_ctl;
            can = c->ctl_cong_callback->xqc_cong_ctl_get_cwnd(c->ctl_cong)
                  >= (uint64_t)c->ctl_bytes_in_flight + path->path_schedule_bytes + MSS;
        }
        path_row(t, path, k, can, rwnd, r);
        acked += r->obs[k][O_ACKED];
        r->active[k] = 1;
        if (paths)
            paths[k] = path;
    }
    while (lead < t->cfg.n_paths && r->active[lead])
        ++lead;
    for (i = 0; i < MPS_N_COBS; ++i)
        r->cobs[i] = 0;
    r->cobs[C_BACKLOG] = conn_backlog(t, conn);
    r->cobs[C_ACKED] = acked < t->cfg.size_bytes ? acked : t->cfg.size_bytes;
    r->cobs[C_ELAPSED] = t->started ? (uint64_t)((now - t->t0) * 1e6) : 0;
    r->cobs[C_RWND] = rwnd;
    r->cobs[C_REMAINING] = t->cfg.size_bytes - r->cobs[C_ACKED];
    /* the file is the transfer's one item, requested when the connection started */
    r->cobs[C_ITEM_ACKED] = r->cobs[C_ACKED];
    r->cobs[C_ITEM_ELAPSED] = r->cobs[C_ELAPSED];
    r->cobs[C_ITEMS_ACKED] = r->cobs[C_REMAINING] == 0;
    r->cobs[C_ITEM_RATE] = r->cobs[C_ITEMS_ACKED] && r->cobs[C_ELAPSED]
                               ? (uint64_t)(t->cfg.size_bytes * 1e6 / r->cobs[C_ELAPSED]) : 0;
    r->t = t->started ? now - t->t0 : 0.0;
    r->mode = mode_in_force(t);
    r->decisions = t->decisions;
    return lead;
}

static void
ring_push(mps_transfer *t, int which, const mps_record *r)
{
    ring *g = &t->rings[which];
    if (!g->cap)
        return;
    pthread_mutex_lock(&t->lock);
    g->buf[g->head % g->cap] = *r;
    ++g->head;
    if (g->head - g->tail > g->cap) {
        g->tail = g->head - g->cap;
        ++g->dropped;
    }
    pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------------ the scheduler inside XQUIC */

typedef struct sched_state {
    unsigned char builtin[256];  /* XQUIC's built-in schedulers keep their state here */
} sched_state;

static const xqc_scheduler_callback_t *
builtin(int mode)
{
    return mode == MPS_BACKUP ? &xqc_backup_scheduler_cb : mode == MPS_RAP ? &xqc_rap_scheduler_cb
                                                                           : &xqc_minrtt_scheduler_cb;
}

static size_t
sched_size(void)
{
    return sizeof(sched_state);
}

static void
sched_init(void *s, xqc_log_t *log, xqc_scheduler_params_t *params)
{
    int m;
    memset(s, 0, sizeof(sched_state));
    for (m = MPS_MINRTT; m <= MPS_RAP; ++m) {
        const xqc_scheduler_callback_t *b = builtin(m);
        if (b->xqc_scheduler_size() <= sizeof(((sched_state *)0)->builtin) && b->xqc_scheduler_init)
            b->xqc_scheduler_init(((sched_state *)s)->builtin, log, params);
    }
}

/* the policy's decide() on a snapshot's first lead paths, timed; its raw answer (MPS_POLICY_ERROR
   without paths) */
static int32_t
run_policy(mps_transfer *t, const mps_record *r, int lead)
{
    uint64_t pr[MPS_MAX_PATHS * MPS_N_OBS];
    int32_t n = lead, out = MPS_POLICY_ERROR;
    int i;
    struct timespec a, b;
    if (lead <= 0)
        return out;
    for (i = 0; i < lead; ++i)
        memcpy(pr + (size_t)i * MPS_N_OBS, r->obs[i], sizeof(r->obs[i]));
    clock_gettime(CLOCK_MONOTONIC, &a);
    t->policy(pr, r->cobs, &n, lead, 1, NULL, &out);
    clock_gettime(CLOCK_MONOTONIC, &b);
    t->policy_ns += (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    ++t->policy_calls;
    return out;
}

/* a per-packet policy's path: an index below lead, -1 to wait, -3 for an answer out of range */
static int
policy_pick(mps_transfer *t, const mps_record *r, int lead)
{
    int32_t out = run_policy(t, r, lead);
    if (out < -1 || out >= lead) {
        ++t->policy_errors;
        return -3;
    }
    return out;
}

/* An interval policy's decision (export/, decision mode interval; the simulator's
   envs/decision.py): decide() on the connection's state returns the index of the mode to run until
   the next decision. It is asked when the event loop or a get_path call finds the interval over.
   Until it has its paths (the header's MIN_PATHS) mode 0 runs and it is asked again at every
   get_path call (so that it decides before a new path's first packet is scheduled) and every
   millisecond of the loop; its intervals keep a grid from its first answer, one decision per
   interval of it. */
static void
interval_decide(mps_transfer *t, xqc_connection_t *conn, double now)
{
    mps_record r;
    int lead = snapshot(t, conn, NULL, 1, 0, &r, NULL);
    int32_t out = run_policy(t, &r, lead);
    if (out == MPS_POLICY_ERROR && lead < t->cfg.n_paths) {
        t->next_policy = now + 0.001;  /* too few paths yet: ask again soon */
        return;
    }
    t->policy_decided = 1;
    if (out < 0 || out >= t->cfg.n_policy_modes)
        ++t->policy_errors;  /* the mode in force stays */
    else {
        atomic_store(&t->policy_mode, t->cfg.policy_modes[out]);
        ++t->res.policy_intervals[out];
        r.mode = t->cfg.policy_modes[out];
        r.chosen = out;  /* in the interval ring: the policy's decision on this state (mode index) */
        r.decisions = t->decisions;
        ring_push(t, 0, &r);
    }
    /* the next grid point still ahead: a late decision is followed by the next on time, and one
       later than a whole interval skips the points it missed instead of deciding twice at once */
    do
        t->next_policy += t->cfg.policy_interval_ms / 1000.0;
    while (t->next_policy <= now);
}

/* po's new data counts as sent once a path is chosen for it (the backlog's, conn_backlog) */
static void
commit(mps_transfer *t, const xqc_packet_out_t *po, const xqc_path_ctx_t *chosen)
{
    uint64_t end = t->committed;
    if (chosen && po) {
        po_stream_bytes(po, &end);
        t->committed = end;
    }
}

static xqc_path_ctx_t *
sched_get_path(void *s, xqc_connection_t *conn, xqc_packet_out_t *po, int check_cwnd, int reinject,
               xqc_bool_t *cc_blocked)
{
    mps_transfer *t = (mps_transfer *)conn->user_data;
    int mode, lead, pick, k, any = 0;
    xqc_path_ctx_t *paths[MPS_MAX_PATHS] = {0}, *chosen;
    mps_record r;
    if (interval_policy(t) && t->started) {
        double now = now_s();
        if (!t->policy_decided || now >= t->next_policy)
            interval_decide(t, conn, now);
    }
    mode = mode_in_force(t);
    if (mode <= MPS_RAP)
        goto builtin_pick;
    lead = snapshot(t, conn, po, check_cwnd, reinject, &r, paths);
    for (k = 0; k < t->cfg.n_paths; ++k)
        any |= r.active[k] && r.obs[k][O_AVAILABLE];
    if (mode == MPS_POLICY) {
        if (lead < 2 || !t->policy)
            goto builtin_pick;  /* a policy needs its paths: minRTT until they exist */
        pick = policy_pick(t, &r, lead);
        if (pick == -3)
            goto builtin_pick;
        if (pick >= 0 && !r.obs[pick][O_AVAILABLE])
            pick = -1;  /* the path it wants has no window: wait for it */
    } else {
        /* rules see the active paths; inactive ones look unavailable with an infinite RTT */
        uint64_t obs[MPS_MAX_PATHS][MPS_N_OBS];
        memcpy(obs, r.obs, sizeof(obs));
        for (k = 0; k < t->cfg.n_paths; ++k)
            if (!r.active[k])
                obs[k][O_SRTT] = UINT64_MAX, obs[k][O_AVAILABLE] = 0;
        pick = mps_rule_pick(&t->rules, mode, t->cfg.n_paths, (const uint64_t(*)[MPS_N_OBS])obs, r.cobs, MSS);
        if (pick >= 0 && !r.active[pick])
            pick = -1;
    }
    ++t->decisions;
    if (cc_blocked)
        *cc_blocked = !any;
    chosen = pick >= 0 ? paths[pick] : NULL;
    t->window_blocked = !chosen && !any;
    if (t->cfg.decision_every && t->decisions % t->cfg.decision_every == 0) {
        r.chosen = pick;
        r.decisions = t->decisions;
        ring_push(t, 1, &r);
    }
    commit(t, po, chosen);
    return chosen;

builtin_pick:
    chosen = builtin(mode)->xqc_scheduler_get_path(((sched_state *)s)->builtin, conn, po, check_cwnd, reinject,
                                                    cc_blocked);
    t->window_blocked = !chosen && cc_blocked && *cc_blocked;
    ++t->decisions;
    if (t->cfg.decision_every && t->decisions % t->cfg.decision_every == 0) {
        snapshot(t, conn, po, check_cwnd, reinject, &r, NULL);
        r.chosen = chosen ? path_index(t, chosen->path_id) : -1;
        ring_push(t, 1, &r);
    }
    commit(t, po, chosen);
    return chosen;
}

static const xqc_scheduler_callback_t mps_scheduler_cb = {
    .xqc_scheduler_size = sched_size,
    .xqc_scheduler_init = sched_init,
    .xqc_scheduler_get_path = sched_get_path,
};

/* ------------------------------------------------------------------ engine callbacks */

static void
set_timer(xqc_usec_t wake_after, void *user)
{
    side *sd = (side *)user;
    sd->wake = now_s() + (double)wake_after * 1e-6;
}

static void
log_write(xqc_log_level_t lvl, const void *buf, size_t size, void *user)
{
    side *sd = (side *)user;
    mps_transfer *t = sd->t;
    if (memmem(buf, size, OOO_MARK, strlen(OOO_MARK)))
        t->res.ooo_abort = 1;
    if (lvl == XQC_LOG_REPORT) {  /* statistics at close; an idle timeout means the transfer stalled */
        if (!t->finished && memmem(buf, size, IDLE_MARK, strlen(IDLE_MARK)))
            t->res.stalled = 1;
        if (memmem(buf, size, CONN_REPORT_MARK, strlen(CONN_REPORT_MARK))) {  /* the connection's, not a stream's */
            char *dst = t->res.close_report[sd->server];
            size_t n = size < sizeof t->res.close_report[0] - 1 ? size : sizeof t->res.close_report[0] - 1;
            memcpy(dst, buf, n);
            dst[n] = 0;
        }
        return;
    }
    if (lvl <= XQC_LOG_ERROR || (sd->server && t->res.ooo_abort))
        add_error(t, (const char *)buf, size > 300 ? 300 : size);
}

static ssize_t
send_on(int fd, const unsigned char *buf, size_t size, const struct sockaddr *peer, socklen_t len)
{
    ssize_t n;
    do {
        n = sendto(fd, buf, size, 0, peer, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EWOULDBLOCK))
        return (ssize_t)size;  /* a full local queue drops the packet, as a router would */
    return n < 0 ? XQC_SOCKET_ERROR : n;
}

static ssize_t
cli_write_ex(uint64_t path_id, const unsigned char *buf, size_t size, const struct sockaddr *peer,
             socklen_t len, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    int k = path_index(t, path_id);
    return send_on(t->cfg.client_fds[k < 0 ? 0 : k], buf, size, peer, len);
}

static ssize_t
cli_write(const unsigned char *buf, size_t size, const struct sockaddr *peer, socklen_t len, void *user)
{
    return cli_write_ex(XQC_INITIAL_PATH_ID, buf, size, peer, len, user);
}

/* the server's connection user data is its transfer (packet_process's user_data, then
   xqc_conn_set_transport_user_data) */
static ssize_t
srv_write(const unsigned char *buf, size_t size, const struct sockaddr *peer, socklen_t len, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    return t ? send_on(t->cfg.server_fd, buf, size, peer, len) : (ssize_t)size;
}

static ssize_t
srv_write_ex(uint64_t path_id, const unsigned char *buf, size_t size, const struct sockaddr *peer,
             socklen_t len, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    int k = t ? path_index(t, path_id) : -1;
    if (k > 0 && t->srv_dropped[k] < t->cfg.drop_new_path_datagrams) {  /* a test's loss (tests/test_xquic.py) */
        ++t->srv_dropped[k];
        return (ssize_t)size;
    }
    return srv_write(buf, size, peer, len, user);
}

static void
save_string(const char *data, size_t len, void *user)
{
}

static void
save_token(const unsigned char *token, uint32_t len, void *user)
{
}

static int
cert_ok(const unsigned char *certs[], const size_t cert_len[], size_t certs_len, void *user)
{
    return 0;
}

/* 1 if a packet carrying one of path_id's MP_NEW_CONNECTION_ID frames is still queued, scheduled
 * on a path, unacknowledged or lost (neither it nor its original acknowledged). */
static int
cid_frames_outstanding(xqc_connection_t *c, uint64_t path_id)
{
    xqc_send_queue_t *q = c->conn_send_queue;
    xqc_list_head_t *lists[5 + MPS_MAX_PATHS * XQC_SEND_TYPE_N];
    xqc_list_head_t *pos;
    int n = 0, i;
    lists[n++] = &q->sndq_send_packets;
    lists[n++] = &q->sndq_send_packets_high_pri;
    lists[n++] = &q->sndq_unacked_packets[XQC_PNS_APP_DATA];
    lists[n++] = &q->sndq_lost_packets;
    lists[n++] = &q->sndq_pto_probe_packets;
    xqc_list_for_each(pos, &c->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        for (i = 0; i < XQC_SEND_TYPE_N && n < (int)(sizeof lists / sizeof lists[0]); ++i)
            lists[n++] = &path->path_schedule_buf[i];
    }
    for (i = 0; i < n; ++i)
        xqc_list_for_each(pos, lists[i]) {
            xqc_packet_out_t *po = xqc_list_entry(pos, xqc_packet_out_t, po_list);
            if ((po->po_frame_types & XQC_FRAME_BIT_MP_NEW_CONNECTION_ID) && po->po_new_cid_path == path_id
                && !po->po_acked && !(po->po_origin && po->po_origin->po_acked))
                return 1;
        }
    return 0;
}

/* XQUIC counts a connection ID it issued as acknowledged only when the packet carrying it is
 * acknowledged while still in flight (xqc_send_ctl_on_packet_acked). When that packet was declared
 * lost and its ACK came late (reordering on jittery paths: ispras_s1/s2), or its copy was dropped
 * because the original got acknowledged, the ID stays unacknowledged for good, and
 * xqc_conn_create_path keeps failing with -XQC_EMP_NO_AVAIL_PATH_ID (it needs an acknowledged
 * unused SCID for the next path ID, xqc_conn_get_available_path_id). Once no packet with the next
 * path ID's NEW_CONNECTION_ID frames is outstanding any more, the peer has them: count them. */
static uint64_t
count_delivered_cids(xqc_connection_t *c)
{
    uint64_t n = 0;
    xqc_cid_set_inner_t *set = xqc_get_next_unused_path_cid_set(&c->scid_set);
    xqc_list_head_t *pos;
    if (!set || set->unused_cnt == 0 || set->acked_unused > 0 || cid_frames_outstanding(c, set->path_id))
        return 0;
    xqc_list_for_each(pos, &set->cid_list) {
        xqc_cid_inner_t *cid = xqc_list_entry(pos, xqc_cid_inner_t, list);
        if (cid->state == XQC_CID_UNUSED && cid->acked == XQC_CID_UNACKED) {
            xqc_cid_set_on_cid_acked(&c->scid_set, set->path_id, cid->cid.cid_seq_num);
            ++n;
        }
    }
    return n;
}

static void
create_paths(const xqc_cid_t *scid, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    int k;
    for (k = 1; k < t->cfg.n_paths; ++k) {
        uint64_t id;
        if (t->path_ok[k])
            continue;
        int rc = xqc_conn_create_path(t->cli, &t->cid, &id, 0);
        if (rc == -XQC_EMP_NO_AVAIL_PATH_ID && t->cconn) {
            uint64_t n = count_delivered_cids(t->cconn);
            t->res.cids_counted += n;
            if (n)
                rc = xqc_conn_create_path(t->cli, &t->cid, &id, 0);
        }
        if (rc != XQC_OK) {
            t->res.path_error = rc;
            return;  /* -XQC_EMP_NO_AVAIL_PATH_ID until its connection IDs are acknowledged: retried */
        }
        t->path_ids[k] = id;
        t->path_ok[k] = 1;
        ++t->res.paths_created;
        t->res.path_created_s[k] = t->started ? now_s() - t->t0 : 0.0;
    }
}

static int
srv_accept(xqc_engine_t *engine, xqc_connection_t *conn, const xqc_cid_t *cid, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    if (t->sconn)
        return -1;
    xqc_conn_set_transport_user_data(conn, t);
    return 0;
}

/* ------------------------------------------------------------------ application (one stream) */

static void
pump(mps_transfer *t)
{
    while (t->cstream && t->queued < t->cfg.size_bytes) {
        uint64_t left = t->cfg.size_bytes - t->queued;
        size_t n = left < CHUNK ? (size_t)left : CHUNK;
        ssize_t r = xqc_stream_send(t->cstream, zeros, n, left <= CHUNK);
        if (r < 0) {
            if (r != -XQC_EAGAIN) {
                char msg[96];
                snprintf(msg, sizeof msg, "xqc_stream_send: error %zd", r);
                add_error(t, msg, strlen(msg));
            }
            return;
        }
        t->queued += (uint64_t)r;
        if ((size_t)r < n)
            return;
    }
}

static int
cli_conn_create(xqc_connection_t *conn, const xqc_cid_t *cid, void *user, void *proto)
{
    ((mps_transfer *)user)->cconn = conn;
    return 0;
}

static int
cli_conn_close(xqc_connection_t *conn, const xqc_cid_t *cid, void *user, void *proto)
{
    mps_transfer *t = (mps_transfer *)user;
    t->res.client_errno = xqc_conn_get_errno(conn);
    t->cli_closed = 1;
    t->cconn = NULL;
    t->cstream = NULL;
    return 0;
}

/* the sender's final counters: bytes sent and acknowledged per path, packets sent and lost */
static void
client_stats(mps_transfer *t)
{
    xqc_list_head_t *pos, *next;
    xqc_conn_stats_t st = xqc_conn_get_stats(t->cli, &t->cid);
    t->res.lost_pkts = st.lost_count;
    t->res.sent_pkts = st.send_count;
    xqc_list_for_each_safe(pos, next, &t->cconn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        int k = path_index(t, path->path_id);
        if (k >= 0) {
            t->res.path_sent[k] = path->path_send_ctl->ctl_app_bytes_send;
            t->res.path_acked[k] = path->path_send_ctl->ctl_delivered;
        }
    }
}

static void
cli_handshake(xqc_connection_t *conn, void *user, void *proto)
{
    mps_transfer *t = (mps_transfer *)user;
    t->t0 = now_s();
    t->res.handshake_s = t->t0 - t->t_create;
    t->started = 1;
    t->next_interval = t->next_policy = t->t0;
    t->cstream = xqc_stream_create(t->cli, &t->cid, NULL, t);
    if (!t->cstream)
        add_error(t, "xqc_stream_create failed", 24);
    pump(t);
}

static xqc_int_t
cli_stream_write(xqc_stream_t *stream, void *user)
{
    pump((mps_transfer *)user);
    return 0;
}

static xqc_int_t
cli_stream_read(xqc_stream_t *stream, void *user)
{
    unsigned char buf[4096];
    uint8_t fin = 0;
    while (xqc_stream_recv(stream, buf, sizeof buf, &fin) > 0)
        ;
    return 0;
}

static xqc_int_t
cli_stream_close(xqc_stream_t *stream, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    if (t && t->cstream == stream)
        t->cstream = NULL;
    return 0;
}

static int
srv_conn_create(xqc_connection_t *conn, const xqc_cid_t *cid, void *user, void *proto)
{
    mps_transfer *t = (mps_transfer *)user;
    t->sconn = conn;
    t->scid = *cid;
    t->have_scid = 1;
    return 0;
}

/* the receiver's payload bytes per path (first copies of stream data) */
static void
server_stats(mps_transfer *t, xqc_stream_t *stream)
{
    int k;
    for (k = 0; k < t->cfg.n_paths; ++k)
        if (t->path_ok[k] && t->path_ids[k] < XQC_MAX_PATHS_COUNT)
            t->res.path_recv[k] = stream->paths_info[t->path_ids[k]].path_recv_effective_bytes;
}

static int
srv_conn_close(xqc_connection_t *conn, const xqc_cid_t *cid, void *user, void *proto)
{
    mps_transfer *t = (mps_transfer *)user;
    t->res.server_errno = xqc_conn_get_errno(conn);
    if (t->res.server_errno == XQC_ELIMIT)
        t->res.ooo_abort = 1;
    t->srv_closed = 1;
    t->sconn = NULL;
    t->have_scid = 0;
    return 0;
}

static xqc_int_t
srv_stream_create(xqc_stream_t *stream, void *user)
{
    xqc_stream_set_user_data(stream, xqc_get_conn_user_data_by_stream(stream));
    return 0;
}

static xqc_int_t
srv_stream_read(xqc_stream_t *stream, void *user)
{
    mps_transfer *t = (mps_transfer *)user;
    static unsigned char buf[1 << 16];
    uint8_t fin = 0;
    ssize_t n;
    while ((n = xqc_stream_recv(stream, buf, sizeof buf, &fin)) > 0)
        t->received += (uint64_t)n;
    if (!t->finished && t->received >= t->cfg.size_bytes) {
        t->finished = 1;
        t->t_done = now_s();
    }
    server_stats(t, stream);
    return 0;
}

static xqc_int_t
noop_stream(xqc_stream_t *stream, void *user)
{
    return 0;
}

/* ------------------------------------------------------------------ lifecycle */

extern const xqc_cong_ctrl_callback_t mps_lia_cb, mps_olia_cb, mps_balia_cb;  /* mps_coupled.c */

static const xqc_cong_ctrl_callback_t *
cc_cb(int cc)
{
    switch (cc) {
    case MPS_CC_RENO: return &xqc_reno_cb;
    case MPS_CC_CUBIC: return &xqc_cubic_cb;
    case MPS_CC_BBR: return &xqc_bbr_cb;
    case MPS_CC_LIA: return &mps_lia_cb;
    case MPS_CC_OLIA: return &mps_olia_cb;
    case MPS_CC_BALIA: return &mps_balia_cb;
    default: return &xqc_bbr2_cb;
    }
}

static void
settings(mps_transfer *t, xqc_conn_settings_t *s, int client)
{
    memset(s, 0, sizeof(*s));
    s->pacing_on = t->cfg.pacing;
    s->cong_ctrl_callback = *cc_cb(t->cfg.cc);
    s->cc_params.customize_on = 1;
    s->cc_params.init_cwnd = 32;
    s->proto_version = XQC_VERSION_V1;
    s->enable_multipath = 1;
    s->multipath_version = XQC_MULTIPATH_10;
    s->init_max_path_id = MPS_MAX_PATHS;
    s->spurious_loss_detect_on = 0;
    s->scheduler_callback = client ? mps_scheduler_cb : xqc_minrtt_scheduler_cb;
    s->reinj_ctl_callback = xqc_default_reinj_ctl_cb;
    s->mp_enable_reinjection = 0;
    s->marking_reinjection = 1;
}

mps_transfer *
mps_create(const mps_config *cfg, char *err, size_t errlen)
{
    mps_transfer *t;
    xqc_config_t ec;
    xqc_engine_ssl_config_t ssl;
    xqc_engine_callback_t cbs;
    xqc_transport_callbacks_t tcb;
    xqc_app_proto_callbacks_t ap;
    xqc_conn_settings_t cs;
    xqc_conn_ssl_config_t cssl;
    const xqc_cid_t *cid;
    int w;

    if (cfg->n_paths < 1 || cfg->n_paths > MPS_MAX_PATHS || cfg->cc < 0 || cfg->cc >= MPS_CC_COUNT
        || cfg->mode < 0 || cfg->mode >= MPS_MODE_COUNT)
    {
        snprintf(err, errlen, "bad configuration (paths 1-%d, cc, mode)", MPS_MAX_PATHS);
        return NULL;
    }
    if (cfg->n_policy_modes < 0 || cfg->n_policy_modes > MPS_MAX_POLICY_MODES
        || (cfg->n_policy_modes && !(cfg->policy_interval_ms > 0.0)))
    {
        snprintf(err, errlen, "bad interval policy (1-%d modes, an interval > 0 ms)", MPS_MAX_POLICY_MODES);
        return NULL;
    }
    for (w = 0; w < cfg->n_policy_modes; ++w)
        if (cfg->policy_modes[w] < 0 || cfg->policy_modes[w] >= MPS_POLICY) {
            snprintf(err, errlen, "interval policy mode %d: %d is no scheduler", w, cfg->policy_modes[w]);
            return NULL;
        }
    t = calloc(1, sizeof(*t));
    t->cfg = *cfg;
    if (t->cfg.pacing < 0)
        t->cfg.pacing = cfg->cc == MPS_CC_BBR || cfg->cc == MPS_CC_BBR2;
    t->cert = strdup(cfg->cert_file);
    t->key = strdup(cfg->key_file);
    t->cfg.cert_file = t->cert;
    t->cfg.key_file = t->key;
    t->cfg.policy_lib = NULL;
    t->res.completion_s = NAN;
    for (w = 0; w < MPS_MAX_PATHS; ++w) {
        t->res.path_created_s[w] = t->res.path_validated_s[w] = NAN;
        t->res.path_state[0][w] = t->res.path_state[1][w] = -1;
    }
    t->res.path_created_s[0] = t->res.path_validated_s[0] = 0.0;  /* the initial path, validated by the handshake */
    atomic_init(&t->stop, 0);
    atomic_init(&t->mode, cfg->mode);
    atomic_init(&t->policy_mode, cfg->n_policy_modes ? cfg->policy_modes[0] : MPS_MINRTT);
    mps_rule_init(&t->rules, cfg->ecf_beta, cfg->blest_lambda, cfg->blest_lambda_step, cfg->blest_lambda_max,
                  cfg->kato_alpha, cfg->wait_k, cfg->seed);
    pthread_mutex_init(&t->lock, NULL);
    for (w = 0; w < 2; ++w) {
        t->rings[w].cap = cfg->ring_capacity;
        t->rings[w].buf = cfg->ring_capacity ? calloc(cfg->ring_capacity, sizeof(mps_record)) : NULL;
    }
    if (cfg->policy_lib) {
        t->dl = dlopen(cfg->policy_lib, RTLD_NOW | RTLD_LOCAL);
        t->policy = t->dl ? (mps_policy_fn)dlsym(t->dl, "run_decide") : NULL;
        if (!t->policy) {
            snprintf(err, errlen, "policy library %s: %s", cfg->policy_lib, dlerror());
            mps_destroy(t);
            return NULL;
        }
    }
    t->path_ok[0] = 1;
    t->path_ids[0] = XQC_INITIAL_PATH_ID;
    t->sides[0] = (side){t, 0, 0};
    t->sides[1] = (side){t, 1, 0};

    memset(&cbs, 0, sizeof cbs);
    cbs.set_event_timer = set_timer;
    cbs.log_callbacks.xqc_log_write_err = log_write;
    cbs.log_callbacks.xqc_log_write_stat = log_write;

    /* server */
    memset(&ssl, 0, sizeof ssl);
    ssl.private_key_file = t->key;
    ssl.cert_file = t->cert;
    ssl.ciphers = XQC_TLS_CIPHERS;
    ssl.groups = XQC_TLS_GROUPS;
    memset(&tcb, 0, sizeof tcb);
    tcb.server_accept = srv_accept;
    tcb.write_socket = srv_write;
    tcb.write_socket_ex = srv_write_ex;
    xqc_engine_get_default_config(&ec, XQC_ENGINE_SERVER);
    ec.cfg_log_level = XQC_LOG_WARN;
    t->srv = xqc_engine_create(XQC_ENGINE_SERVER, &ec, &ssl, &cbs, &tcb, &t->sides[1]);
    if (!t->srv) {
        snprintf(err, errlen, "xqc_engine_create (server) failed (certificate %s, key %s)", t->cert, t->key);
        mps_destroy(t);
        return NULL;
    }
    settings(t, &cs, 0);
    xqc_server_set_conn_settings(t->srv, &cs);
    memset(&ap, 0, sizeof ap);
    ap.conn_cbs.conn_create_notify = srv_conn_create;
    ap.conn_cbs.conn_close_notify = srv_conn_close;
    ap.stream_cbs.stream_create_notify = srv_stream_create;
    ap.stream_cbs.stream_read_notify = srv_stream_read;
    ap.stream_cbs.stream_write_notify = noop_stream;
    ap.stream_cbs.stream_close_notify = noop_stream;
    xqc_engine_register_alpn(t->srv, ALPN, strlen(ALPN), &ap, NULL);

    /* client */
    memset(&ssl, 0, sizeof ssl);
    ssl.ciphers = XQC_TLS_CIPHERS;
    ssl.groups = XQC_TLS_GROUPS;
    memset(&tcb, 0, sizeof tcb);
    tcb.write_socket = cli_write;
    tcb.write_socket_ex = cli_write_ex;
    tcb.cert_verify_cb = cert_ok;
    tcb.save_token = save_token;          /* no resumption: every run is a fresh connection */
    tcb.save_session_cb = save_string;
    tcb.save_tp_cb = save_string;
    tcb.ready_to_create_path_notify = create_paths;
    xqc_engine_get_default_config(&ec, XQC_ENGINE_CLIENT);
    ec.cfg_log_level = XQC_LOG_WARN;
    t->cli = xqc_engine_create(XQC_ENGINE_CLIENT, &ec, &ssl, &cbs, &tcb, &t->sides[0]);
    if (!t->cli) {
        snprintf(err, errlen, "xqc_engine_create (client) failed");
        mps_destroy(t);
        return NULL;
    }
    memset(&ap, 0, sizeof ap);
    ap.conn_cbs.conn_create_notify = cli_conn_create;
    ap.conn_cbs.conn_close_notify = cli_conn_close;
    ap.conn_cbs.conn_handshake_finished = cli_handshake;
    ap.stream_cbs.stream_read_notify = cli_stream_read;
    ap.stream_cbs.stream_write_notify = cli_stream_write;
    ap.stream_cbs.stream_close_notify = cli_stream_close;
    xqc_engine_register_alpn(t->cli, ALPN, strlen(ALPN), &ap, NULL);

    settings(t, &cs, 1);
    memset(&cssl, 0, sizeof cssl);
    cssl.cert_verify_flag = 0;
    t->t_create = now_s();
    cid = xqc_connect(t->cli, &cs, NULL, 0, "mpsched", 0, &cssl, (const struct sockaddr *)&cfg->server_addr,
                      sizeof(cfg->server_addr), ALPN, t);
    if (!cid) {
        snprintf(err, errlen, "xqc_connect failed");
        mps_destroy(t);
        return NULL;
    }
    t->cid = *cid;
    return t;
}

static void
drain(mps_transfer *t, int fd, int server, const struct sockaddr_in *local)
{
    unsigned char buf[2048];
    struct sockaddr_in peer;
    int n_read = 0;
    for (;;) {
        socklen_t plen = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&peer, &plen);
        if (n <= 0)
            break;
        xqc_engine_packet_process(server ? t->srv : t->cli, buf, (size_t)n, (const struct sockaddr *)local,
                                  sizeof(*local), (const struct sockaddr *)&peer, plen,
                                  xqc_monotonic_timestamp(), t);
        if (++n_read >= 256)
            break;
    }
    if (n_read) {
        ++t->res.recv_reads[server];
        t->res.recv_datagrams[server] += (uint64_t)n_read;
        xqc_engine_finish_recv(server ? t->srv : t->cli);
    }
}

/* XQUIC now and then leaves a path with ack-eliciting packets in flight and no loss detection
 * timer (seen live: ispras_s3, bbr2 with ECF under load; README, "XQUIC"). The way its timer code
 * can do that, as far as we found: after timeout_cb, xqc_timer_expire (xqc_timer.h) unsets a
 * timer whose expire_time is still <= now, and a callback that re-arms for a PTO or loss time
 * already past sets expire_time to xqc_monotonic_timestamp(), which equals that now when the
 * callback ran within gettimeofday's microsecond. If the scheduler sends nothing more on the
 * path, its lost tail is never declared lost nor probed and the transfer hangs until the idle
 * timeout. RFC 9002 (section 6.2.2.1, appendix A.8) keeps the timer armed while ack-eliciting
 * packets are in flight: re-run XQUIC's own SetLossDetectionTimer (xqc_send_ctl_rearm_ld_timer)
 * on such a path and let the connection act on it. */
static void
rearm_loss_timers(mps_transfer *t, xqc_connection_t *conn)
{
    xqc_list_head_t *pos, *next;
    int rearmed = 0;
    if (!conn)
        return;
    xqc_list_for_each_safe(pos, next, &conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        xqc_send_ctl_t *c = path->path_send_ctl;
        if (path->path_state != XQC_PATH_STATE_ACTIVE
            || c->ctl_bytes_ack_eliciting_inflight[XQC_PNS_APP_DATA] == 0
            || xqc_timer_is_set(&c->path_timer_manager, XQC_TIMER_LOSS_DETECTION))
        {
            continue;
        }
        xqc_send_ctl_rearm_ld_timer(c);
        if (xqc_timer_is_set(&c->path_timer_manager, XQC_TIMER_LOSS_DETECTION)) {
            ++t->res.loss_timers_rearmed;
            rearmed = 1;
        }
    }
    if (rearmed)
        xqc_conn_continue_send_by_conn(conn);  /* its wake-up time now includes the timer */
}

/* XQUIC can also leave the sending connection with packets waiting, window room on a path and
 * nothing in flight or scheduled anywhere, and no wake-up before its idle timeout. Seen live on the
 * grid's path with 5 ms of jitter, Reno at its 2-packet window (XQC_kMinimumWindow, xqc_new_reno.c),
 * 3 of 4 10 s transfers at 0.5% loss, from 3.9 to 7.6 s on: xqc_conn_schedule_packets_to_paths
 * (xqc_conn.c) schedules the copies of packets declared lost (sndq_lost_packets) against the window
 * before new data; when those packets were declared lost spuriously (the jitter reordered them)
 * and their originals have been acknowledged by the ACK that empties the flight, the copies fill
 * the window, the new data is left unscheduled ("blocked by cwnd"), and xqc_path_send_packets
 * then drops the copies (xqc_check_acked_or_dropped_pkt: "canceled_bytes") without scheduling
 * again; with nothing in flight no ACK comes and no loss detection timer is armed (RFC 9002), so
 * the connection waits for its 120 s idle timeout while its stream is blocked on flow control
 * (16 MiB framed) and the application cannot write. An application's event loop tells XQUIC to
 * send with xqc_conn_continue_send (xquic.h); this one does so when it finds that state after a
 * scheduler call that found no path with window room (not after a scheduler's own choice to wait,
 * which stays the `stalled` outcome), at most once a millisecond, and counts the times it sent
 * something (sends_resumed). */
static void
resume_stuck_send(mps_transfer *t, xqc_connection_t *conn, double now)
{
    xqc_list_head_t *pos, *next;
    int room = 0;
    if (!conn || !t->started || t->finished || !t->window_blocked || now < t->next_resume_try
        || xqc_list_empty(&conn->conn_send_queue->sndq_send_packets))
        return;
    xqc_list_for_each_safe(pos, next, &conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        xqc_send_ctl_t *c = path->path_send_ctl;
        if (path->path_state != XQC_PATH_STATE_ACTIVE)
            continue;
        if (c->ctl_bytes_in_flight > 0 || path->path_schedule_bytes > 0)
            return;  /* an ACK or a loss detection timer will wake it */
        if (path->app_path_status != XQC_APP_PATH_STATUS_FROZEN
            && c->ctl_cong_callback->xqc_cong_ctl_get_cwnd(c->ctl_cong) >= MSS)
            room = 1;
    }
    if (!room)
        return;
    t->next_resume_try = now + 0.001;
    xqc_conn_continue_send_by_conn(conn);
    xqc_list_for_each_safe(pos, next, &conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        if (path->path_send_ctl->ctl_bytes_in_flight > 0) {
            ++t->res.sends_resumed;
            break;
        }
    }
}

/* XQUIC validates a new path once (xqc_path_init, xqc_multipath.c): the end that creates it queues
 * one PATH_CHALLENGE (xqc_write_path_challenge_frame_to_packet) and the path stays
 * XQC_PATH_STATE_VALIDATING until a PATH_RESPONSE with that challenge's data comes back
 * (xqc_process_path_response_frame -> xqc_path_validate). A lost PATH_CHALLENGE is resent with the
 * packet's other frames (XQC_NEED_REPAIR), but a PATH_RESPONSE is never resent (XQC_NEED_REPAIR
 * leaves it out, as RFC 9000, section 13.3, says), and XQUIC has no path validation timer and
 * never sends another PATH_CHALLENGE: when the response is lost and the challenge's packet
 * acknowledged, the path stays validating for the whole connection, and neither its scheduler nor
 * ours (snapshot) ever sends on it. RFC 9000, section 8.2.1: "The peer is expected to send more
 * PATH_CHALLENGE frames as necessary to evoke additional PATH_RESPONSE frames" (section 13.3),
 * with new data each time, and no more often than an Initial packet (whose retransmission is
 * RFC 9002's PTO, doubled on each repeat). This does that for XQUIC, on both ends: once a path has
 * been validating for a PTO of its own (xqc_send_ctl_calc_pto: its RTT if the challenge's packet
 * was acknowledged, else XQUIC's initial 250 ms), fresh challenge data
 * (xqc_generate_path_challenge_data) in a new PATH_CHALLENGE on that path, then after 2, 4, ...
 * PTOs while it still validates. */
static void
revalidate_paths(mps_transfer *t, int server, xqc_connection_t *conn)
{
    xqc_list_head_t *pos, *next;
    xqc_usec_t now;
    int sent = 0;
    if (!conn || !t->cfg.revalidate_paths || t->finished || conn->conn_state >= XQC_CONN_STATE_CLOSING)
        return;
    now = xqc_monotonic_timestamp();
    xqc_list_for_each_safe(pos, next, &conn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        int k = path_index(t, path->path_id);
        xqc_usec_t pto;
        unsigned n;
        if (k <= 0 || path->path_state != XQC_PATH_STATE_VALIDATING)
            continue;
        pto = xqc_send_ctl_calc_pto(path->path_send_ctl);
        n = t->challenges[server][k];
        if (t->next_challenge[server][k] == 0)
            t->next_challenge[server][k] = path->path_create_time + pto;
        if (now < t->next_challenge[server][k])
            continue;
        if (xqc_generate_path_challenge_data(conn, path) != XQC_OK
            || xqc_write_path_challenge_frame_to_packet(conn, path,
                                                        path->app_path_status == XQC_APP_PATH_STATUS_STANDBY)
                   != XQC_OK)
        {
            t->next_challenge[server][k] = now + pto;
            continue;
        }
        t->challenges[server][k] = n + 1;
        t->next_challenge[server][k] = now + (pto << (n + 1 < 6 ? n + 1 : 6));
        ++t->res.challenges_resent;
        sent = 1;
    }
    if (sent)
        xqc_conn_continue_send_by_conn(conn);
}

/* when each client path was first found active (path_validated_s) */
static void
track_validation(mps_transfer *t)
{
    xqc_list_head_t *pos, *next;
    if (!t->cconn || !t->started)
        return;
    xqc_list_for_each_safe(pos, next, &t->cconn->conn_paths_list) {
        xqc_path_ctx_t *path = xqc_list_entry(pos, xqc_path_ctx_t, path_list);
        int k = path_index(t, path->path_id);
        if (k > 0 && path->path_state == XQC_PATH_STATE_ACTIVE && isnan(t->res.path_validated_s[k]))
            t->res.path_validated_s[k] = now_s() - t->t0;
    }
}

/* each end's path states (path_state), once: when the transfer ends, before the connections close */
static void
record_path_states(mps_transfer *t)
{
    int k, s;
    if (t->states_recorded)
        return;
    t->states_recorded = 1;
    for (s = 0; s < 2; ++s) {
        xqc_connection_t *conn = s ? t->sconn : t->cconn;
        for (k = 0; k < t->cfg.n_paths && conn; ++k) {
            xqc_path_ctx_t *path = t->path_ok[k] ? xqc_conn_find_path_by_path_id(conn, t->path_ids[k]) : NULL;
            t->res.path_state[s][k] = path ? (int)path->path_state : -1;
        }
    }
}

int
mps_run(mps_transfer *t)
{
    struct pollfd fds[MPS_MAX_PATHS + 1];
    int n = t->cfg.n_paths, i;
    double deadline = t->t_create + t->cfg.time_limit_s + 10.0, linger = 0.0;
    for (i = 0; i < n; ++i)
        fds[i] = (struct pollfd){t->cfg.client_fds[i], POLLIN, 0};
    fds[n] = (struct pollfd){t->cfg.server_fd, POLLIN, 0};
    xqc_engine_main_logic(t->cli);
    while (!atomic_load(&t->stop)) {
        double now = now_s(), wake = now + 0.05;
        int timeout_ms, s;
        if (t->started && now - t->t0 > t->cfg.time_limit_s) {
            t->res.timed_out = 1;
            break;
        }
        if (now > deadline) {
            t->res.timed_out = 1;
            break;
        }
        if (t->finished || t->cli_closed || t->srv_closed) {
            if (linger == 0.0 && t->cconn)
                client_stats(t);
            if (linger == 0.0)
                record_path_states(t);
            if (linger == 0.0) {
                linger = now + 0.2;  /* let the last ACKs and the close go out */
                if (t->cconn && !t->cli_closed)
                    xqc_conn_close(t->cli, &t->cid);
            } else if (now > linger || (t->cli_closed && (t->srv_closed || t->finished))) {
                break;
            }
        }
        for (s = 0; s < 2; ++s)
            if (t->sides[s].wake > 0.0 && t->sides[s].wake < wake)
                wake = t->sides[s].wake;
        if (t->cfg.interval_ms > 0 && t->started && t->next_interval < wake)
            wake = t->next_interval;
        if (interval_policy(t) && t->started && t->next_policy < wake)
            wake = t->next_policy;
        timeout_ms = wake > now ? (int)((wake - now) * 1000.0) : 0;
        if (poll(fds, (nfds_t)(n + 1), timeout_ms) < 0 && errno != EINTR) {
            add_error(t, "poll failed", 11);
            break;
        }
        for (i = 0; i < n; ++i)
            if (fds[i].revents & POLLIN)
                drain(t, fds[i].fd, 0, &t->cfg.client_addrs[i]);
        if (fds[n].revents & POLLIN)
            drain(t, fds[n].fd, 1, &t->cfg.server_addr);
        now = now_s();
        for (s = 0; s < 2; ++s)
            if (t->sides[s].wake > 0.0 && t->sides[s].wake <= now) {
                t->sides[s].wake = 0.0;
                xqc_engine_main_logic(s ? t->srv : t->cli);
            }
        rearm_loss_timers(t, t->cconn);
        rearm_loss_timers(t, t->sconn);
        resume_stuck_send(t, t->cconn, now);
        revalidate_paths(t, 0, t->cconn);
        revalidate_paths(t, 1, t->sconn);
        track_validation(t);
        /* a path XQUIC could not create yet (no spare connection ID when it said it was ready) */
        if (t->started && t->cconn && !t->finished && t->res.paths_created + 1 < (uint64_t)n
            && now >= t->next_path_try)
        {
            t->next_path_try = now + 0.01;
            create_paths(&t->cid, t);
        }
        if (interval_policy(t) && t->started && now >= t->next_policy && t->cconn && !t->finished)
            interval_decide(t, t->cconn, now);
        if (t->cfg.interval_ms > 0 && t->started && now >= t->next_interval && t->cconn && !t->finished) {
            mps_record r;
            snapshot(t, t->cconn, NULL, 1, 0, &r, NULL);
            r.chosen = -2;
            ring_push(t, 0, &r);
            t->next_interval += t->cfg.interval_ms / 1000.0;
            if (t->next_interval < now)
                t->next_interval = now;
        }
    }
    record_path_states(t);  /* a transfer that timed out or was stopped */
    if (t->finished)
        t->res.completion_s = t->t_done - t->t0;
    return t->finished ? 0 : -1;
}

void
mps_stop(mps_transfer *t)
{
    atomic_store(&t->stop, 1);
}

void
mps_set_mode(mps_transfer *t, int mode)
{
    if (mode >= 0 && mode < MPS_MODE_COUNT && (mode != MPS_POLICY || t->policy))
        atomic_store(&t->mode, mode);
}

int
mps_started(mps_transfer *t)
{
    return t->started;
}

double
mps_elapsed(mps_transfer *t)
{
    return t->started ? now_s() - t->t0 : 0.0;
}

int
mps_read(mps_transfer *t, int which, mps_record *out, int max, uint64_t *dropped)
{
    ring *g = &t->rings[which & 1];
    int n = 0;
    pthread_mutex_lock(&t->lock);
    if (dropped)
        *dropped = g->dropped;
    g->dropped = 0;
    while (g->tail < g->head && n < max)
        out[n++] = g->buf[g->tail++ % g->cap];
    pthread_mutex_unlock(&t->lock);
    return n;
}

void
mps_get_result(mps_transfer *t, mps_result *out)
{
    *out = t->res;
    out->finished = t->finished;
    out->delivered = t->received;
    out->decisions = t->decisions;
    out->policy_errors = t->policy_errors;
    out->policy_ns = t->policy_calls ? t->policy_ns / (double)t->policy_calls : NAN;
}

void
mps_destroy(mps_transfer *t)
{
    int w;
    if (!t)
        return;
    if (t->cli)
        xqc_engine_destroy(t->cli);
    if (t->srv)
        xqc_engine_destroy(t->srv);
    if (t->dl)
        dlclose(t->dl);
    for (w = 0; w < 2; ++w)
        free(t->rings[w].buf);
    pthread_mutex_destroy(&t->lock);
    free(t->cert);
    free(t->key);
    free(t);
}
