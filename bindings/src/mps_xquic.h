/* One multipath XQUIC file transfer (client = sender, server = receiver) driven by one event loop,
 * with the workbench's schedulers inside XQUIC and a telemetry ring buffer.
 *
 * The caller creates the UDP sockets (one per path on the client, one on the server), each in its
 * own network namespace, and hands over their descriptors: the loop itself never changes
 * namespaces. Per-path state is recorded in the transport units of the exported policy header
 * (envs/transport.py): bytes, microseconds, bytes/s, counts; columns in envs.sim.layout order.
 */
#ifndef MPS_XQUIC_H
#define MPS_XQUIC_H

#include <netinet/in.h>
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPS_MAX_PATHS 8
#define MPS_MAX_POLICY_MODES 8  /* an interval policy's modes (export/, decision mode interval) */
#define MPS_N_OBS 15   /* envs.sim.layout.OBS_NAMES */
#define MPS_N_COBS 10  /* envs.sim.layout.COBS_NAMES */

/* The column order the recorder writes (checked against envs.sim.layout by the Python side). */
#define MPS_OBS_NAMES "cwnd,swnd,srtt,rttvar,min_rtt,latest_rtt,inflight,delivery_rate,losses,retrans,rtos,pacing_rate,available,acked,sent"
#define MPS_COBS_NAMES "backlog,acked,elapsed,reorder,rwnd,remaining,item_acked,item_elapsed,items_acked,item_rate"
/* what the backlog column counts (mps_xquic.c conn_backlog): the simulator's definition */
#define MPS_BACKLOG "retransmissions+unsent"

/* XQUIC's NewReno, CUBIC, BBRv1, BBRv2, and the coupled LIA (RFC 6356), OLIA and BALIA across the
   paths (mps_coupled.c) */
enum mps_cc { MPS_CC_RENO, MPS_CC_CUBIC, MPS_CC_BBR, MPS_CC_BBR2, MPS_CC_LIA, MPS_CC_OLIA, MPS_CC_BALIA,
              MPS_CC_COUNT };

/* Scheduling modes: XQUIC's own (minrtt, backup, rap), the workbench's C versions (rr, ecf,
   blest, hsr, lws, lts, kato) and an exported policy. */
enum mps_mode { MPS_MINRTT, MPS_BACKUP, MPS_RAP, MPS_RR, MPS_ECF, MPS_BLEST, MPS_HSR, MPS_LWS, MPS_LTS, MPS_KATO,
                MPS_WAIT, MPS_POLICY, MPS_MODE_COUNT };

#define MPS_POLICY_ERROR (-2)  /* run_decide's answer for too few paths (the header's MPSCHED_ERROR) */

/* run_decide of export.runtime.build_library: raw counters [n][np][N_OBS], [n][N_COBS] */
typedef void (*mps_policy_fn)(const uint64_t *pr, const uint64_t *cr, const int32_t *nsub, int np, int n,
                              uint64_t *rng_state, int32_t *out);

typedef struct mps_config {
    int n_paths;
    int client_fds[MPS_MAX_PATHS];
    struct sockaddr_in client_addrs[MPS_MAX_PATHS];
    int server_fd;
    struct sockaddr_in server_addr;
    uint64_t size_bytes;
    double time_limit_s;
    int cc;
    int mode;
    int pacing;                  /* -1: on for bbr/bbr2 only */
    const char *policy_lib;      /* shared object with run_decide (MPS_POLICY), or NULL */
    int n_policy_modes;          /* 0: the policy decides per packet; else an interval policy, whose
                                    decide() returns the index of the mode to run (policy_modes) */
    int policy_modes[MPS_MAX_POLICY_MODES];  /* those modes (mps_mode, none of them MPS_POLICY) */
    double policy_interval_ms;   /* an interval policy decides this often (> 0) */
    const char *cert_file, *key_file;
    double ecf_beta;             /* ECF hysteresis (0.25) */
    double blest_lambda;         /* BLEST lambda at the start (1.0) */
    double blest_lambda_step;    /* BLEST lambda step (0.1) */
    double blest_lambda_max;     /* BLEST lambda's upper bound (1.3) */
    double kato_alpha;           /* KATO: probability of the path below the mean (0.5) */
    double wait_k;               /* the wait rule's k (1.0) */
    uint64_t seed;               /* the rules' random stream (KATO) */
    uint32_t decision_every;     /* record every k-th decision (0: none) */
    double interval_ms;          /* interval records (0: none) */
    uint32_t ring_capacity;      /* records per ring */
    int revalidate_paths;        /* re-send PATH_CHALLENGE on a path left validating (revalidate_paths; 1) */
    uint32_t drop_new_path_datagrams;  /* tests: the server drops its first this many datagrams on each
                                          path but the first (its PATH_CHALLENGE, then its PATH_RESPONSE) */
} mps_config;

typedef struct mps_record {
    double t;                    /* seconds since time zero (handshake done) */
    int32_t mode;                /* scheduling mode in force */
    int32_t chosen;              /* path index chosen (-1: wait); interval records: -2, or an interval
                                    policy's decision on this state: the mode index (>= 0) */
    uint64_t decisions;          /* decisions so far */
    uint64_t obs[MPS_MAX_PATHS][MPS_N_OBS];
    uint64_t cobs[MPS_N_COBS];
    uint8_t active[MPS_MAX_PATHS];
    uint64_t cc_bw[MPS_MAX_PATHS];  /* the CC's own bandwidth estimate (bytes/s; BBR's windowed maximum,
                                       xqc_cong_ctl_get_bandwidth_estimate; 0 for a CC without one): a
                                       diagnostic, not a scheduler input */
} mps_record;

typedef struct mps_result {
    int finished;                /* all bytes delivered in order to the server application */
    int ooo_abort;               /* XQUIC aborted: too many out-of-order frames buffered */
    int timed_out;
    int stalled;                 /* XQUIC closed the idle connection (nothing was sent) */
    double completion_s;         /* NaN unless finished */
    double handshake_s;
    uint64_t delivered;          /* bytes the server application read */
    uint64_t path_sent[MPS_MAX_PATHS];      /* client: bytes sent per path (XQUIC path stats) */
    uint64_t path_recv[MPS_MAX_PATHS];      /* server: effective bytes received per path */
    uint64_t path_acked[MPS_MAX_PATHS];     /* client: bytes delivered (acknowledged) per path */
    uint64_t lost_pkts, sent_pkts;
    uint64_t decisions, policy_errors, paths_created;
    uint64_t policy_intervals[MPS_MAX_POLICY_MODES];  /* an interval policy's decisions per mode index */
    double policy_ns;            /* mean time per policy call, in get_path or an interval decision (ns) */
    int client_errno, server_errno;
    int path_error;              /* last error of xqc_conn_create_path (0: none) */
    uint64_t cids_counted;       /* delivered connection IDs XQUIC had not counted (count_delivered_cids) */
    uint64_t loss_timers_rearmed;  /* paths whose loss detection timer XQUIC had dropped (rearm_loss_timers) */
    uint64_t sends_resumed;      /* times the client was stuck with data, window and nothing in flight (resume_stuck_send) */
    uint64_t recv_reads[2];      /* client, server: socket reads that found datagrams (drain), each
                                    followed by one xqc_engine_finish_recv, which sends the ACKs due */
    uint64_t recv_datagrams[2];  /* client, server: datagrams those reads passed to XQUIC */
    uint64_t challenges_resent;  /* PATH_CHALLENGEs re-sent on paths left validating, both ends (revalidate_paths) */
    int path_state[2][MPS_MAX_PATHS];       /* client, server: XQUIC's path state (xqc_path_state_t) at the
                                               end of the transfer, or at close; -1: no such path */
    double path_created_s[MPS_MAX_PATHS];   /* client: when the path was created, since time zero (NaN: never) */
    double path_validated_s[MPS_MAX_PATHS]; /* client: when the loop first found it active (NaN: never) */
    char errors[2048];           /* XQUIC's error log lines and the loop's own errors */
    char close_report[2][512];   /* client, server: the start of XQUIC's statistics line at connection
                                    close (xqc_conn_destroy: err, close_msg, close_recv/close_send) */
} mps_result;

typedef struct mps_transfer mps_transfer;

mps_transfer *mps_create(const mps_config *cfg, char *err, size_t errlen);
int mps_run(mps_transfer *t);          /* the event loop; returns when done, stopped or timed out */
void mps_stop(mps_transfer *t);        /* from any thread */
void mps_set_mode(mps_transfer *t, int mode);   /* from any thread; takes effect at the next packet */
int mps_started(mps_transfer *t);      /* time zero passed */
double mps_elapsed(mps_transfer *t);
/* records since the last read: which = 0 intervals, 1 decisions; returns how many were copied;
   *dropped gets how many were overwritten before being read */
int mps_read(mps_transfer *t, int which, mps_record *out, int max, uint64_t *dropped);
void mps_get_result(mps_transfer *t, mps_result *out);
void mps_destroy(mps_transfer *t);

/* The pure scheduler rules (no XQUIC), for tests: obs as recorded, avail per path; returns the
   path index or -1 (wait). state: mps_rule_state, initialised by mps_rule_init. */
typedef struct mps_rule_state {
    uint32_t rr_next;
    int ecf_waiting;
    double blest_lambda;         /* current lambda */
    int blest_hol;               /* the receive window limited sending since the last adaptation */
    uint64_t blest_last;         /* elapsed time (us) of the last adaptation */
    double ecf_beta, blest_lambda0, blest_step, blest_lambda_max;
    double kato_sum, kato_count;  /* KATO: sum and number of throughput estimates (bytes/us) */
    uint64_t kato_stamp;         /* KATO: elapsed time (us) of the last sample */
    double kato_alpha;
    double wait_k;               /* the wait rule: send on S while its arrival is within k times F's */
    uint64_t rng;                /* SplitMix64 state */
} mps_rule_state;
void mps_rule_init(mps_rule_state *s, double ecf_beta, double blest_lambda, double blest_step,
                   double blest_lambda_max, double kato_alpha, double wait_k, uint64_t seed);
int mps_rule_pick(mps_rule_state *s, int mode, int n, const uint64_t obs[][MPS_N_OBS], const uint64_t *cobs,
                  uint64_t mss);

/* The coupled CCs' rules (mps_coupled.c): path i's window increase (bytes) for `acked` bytes
   acknowledged in congestion avoidance, from the n coupled paths' windows (bytes) and smoothed RTTs
   (us; 0: no RTT sample yet, left out of the sums); OLIA also from each path's loss interval
   (bytes: the larger of the bytes acked between its last two losses and since its last loss).
   LIA: RFC 6356, section 3; OLIA: Khalili et al., CoNEXT 2012; BALIA: Peng et al., ToN 2016, whose
   alpha_i = max_r x_r / x_i (x = cwnd / srtt) also sets its decrease, cwnd_i / 2 * min(alpha_i, 1.5). */
double mps_lia_increase(int n, const double *cwnd, const double *srtt_us, int i, double acked, double mss);
double mps_olia_increase(int n, const double *cwnd, const double *srtt_us, const double *loss_bytes, int i,
                         double acked, double mss);
double mps_balia_increase(int n, const double *cwnd, const double *srtt_us, int i, double acked, double mss);
double mps_balia_alpha(int n, const double *cwnd, const double *srtt_us, int i);

#ifdef __cplusplus
}
#endif
#endif
