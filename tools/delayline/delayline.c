/*
 * delayline: a per-packet delay and jitter emulator on an NFQUEUE queue, for kernels without
 * netem (envs/live/delayline.py builds and runs it; see docs there).
 *
 * Every packet the kernel queues to --queue is held for delay + N(0, jitter) milliseconds
 * (clipped at zero) and then accepted. With --reorder 1 each packet keeps its own release time,
 * so jitter reorders packets as netem does; with --reorder 0 a packet never leaves before the
 * one ahead of it (order-preserving delay variation). The kernel keeps the packets; the program
 * only sees their metadata (NFQNL_COPY_META) and issues verdicts, so it costs two system calls
 * per packet whatever the packet size.
 *
 * Protocol with the parent: one line "ready <queue>" on stdout once the queue is bound (the
 * caller installs its iptables rule only then); on SIGUSR1 it prints one JSON line of its
 * statistics so far and goes on; on SIGTERM or SIGINT it releases the packets it still holds,
 * prints the same JSON line and exits 0. "realtime" in it says whether --rt-priority took effect. It dies with its parent
 * (PR_SET_PDEATHSIG), so a killed run leaves no delay line behind.
 *
 * --rt-priority P (1-99) runs it in the SCHED_FIFO class, so that other load on the machine
 * does not delay its wake-ups by a scheduler time slice (it sleeps between packets).
 *
 * Build: gcc -O2 -o delayline delayline.c -lnetfilter_queue -lnfnetlink
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

typedef struct {
    uint64_t t;    /* release time, ns (CLOCK_MONOTONIC) */
    uint64_t seq;  /* arrival order: ties keep FIFO order */
    uint32_t id;   /* kernel packet id */
} item_t;

static item_t *heap;
static size_t heap_n, heap_cap;

static int before(const item_t *a, const item_t *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(item_t it) {
    if (heap_n == heap_cap) {
        heap_cap = heap_cap ? 2 * heap_cap : 4096;
        heap = realloc(heap, heap_cap * sizeof(item_t));
        if (!heap) { perror("delayline: realloc"); exit(3); }
    }
    size_t i = heap_n++;
    heap[i] = it;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&heap[i], &heap[p])) break;
        item_t tmp = heap[p]; heap[p] = heap[i]; heap[i] = tmp;
        i = p;
    }
}

static item_t heap_pop(void) {
    item_t top = heap[0];
    heap[0] = heap[--heap_n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap_n && before(&heap[l], &heap[m])) m = l;
        if (r < heap_n && before(&heap[r], &heap[m])) m = r;
        if (m == i) break;
        item_t tmp = heap[m]; heap[m] = heap[i]; heap[i] = tmp;
        i = m;
    }
    return top;
}

/* splitmix64 + Box-Muller: reproducible per seed */
static uint64_t rng_state;
static uint64_t splitmix(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double uniform01(void) { return ((splitmix() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static int have_spare;
static double spare;
static double normal01(void) {
    if (have_spare) { have_spare = 0; return spare; }
    double u = uniform01(), v = uniform01();
    double r = sqrt(-2.0 * log(u));
    spare = r * sin(2 * M_PI * v);
    have_spare = 1;
    return r * cos(2 * M_PI * v);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* settings and statistics */
static uint64_t delay_ns, jitter_ns;
static int reorder = 1;
static uint64_t seq, last_release;
static uint64_t n_packets, n_clipped, n_verdict_err, n_enobufs, max_pending;
#define LATE_BUCKETS 100001 /* lateness histogram, 1 us buckets, last one = overflow */
static uint32_t *late_hist, *window_hist; /* since the start; since the last report */
static uint64_t late_max_ns, window_max_ns;
static volatile sig_atomic_t stop_flag, report_flag;
static int realtime;

static void on_signal(int sig) { (void)sig; stop_flag = 1; }
static void on_report(int sig) { (void)sig; report_flag = 1; }

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
    (void)qh; (void)msg; (void)data;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph) return 0;
    uint64_t now = now_ns();
    double extra = (double)delay_ns;
    if (jitter_ns) extra += (double)jitter_ns * normal01();
    if (extra < 0) { extra = 0; n_clipped++; }
    uint64_t t = now + (uint64_t)extra;
    if (!reorder && t < last_release) t = last_release;
    last_release = t;
    heap_push((item_t){t, seq++, ntohl(ph->packet_id)});
    n_packets++;
    if (heap_n > max_pending) max_pending = heap_n;
    return 0;
}

static void release(struct nfq_q_handle *qh, item_t it, uint64_t now) {
    if (nfq_set_verdict(qh, it.id, NF_ACCEPT, 0, NULL) < 0) n_verdict_err++;
    uint64_t late = now > it.t ? now - it.t : 0;
    if (late > late_max_ns) late_max_ns = late;
    if (late > window_max_ns) window_max_ns = late;
    uint64_t b = late / 1000;
    late_hist[b < LATE_BUCKETS - 1 ? b : LATE_BUCKETS - 1]++;
    window_hist[b < LATE_BUCKETS - 1 ? b : LATE_BUCKETS - 1]++;
}

static uint64_t hist_total(const uint32_t *hist) {
    uint64_t total = 0;
    for (size_t i = 0; i < LATE_BUCKETS; i++) total += hist[i];
    return total;
}

static double late_quantile_us(const uint32_t *hist, double q) {
    uint64_t total = hist_total(hist), acc = 0;
    if (!total) return 0.0;
    uint64_t want = (uint64_t)ceil(q * (double)total);
    if (want < 1) want = 1;
    for (size_t i = 0; i < LATE_BUCKETS; i++) {
        acc += hist[i];
        if (acc >= want) return (double)i + 0.5;
    }
    return (double)(LATE_BUCKETS - 1);
}

/* one JSON line: everything since the start, and the release lateness since the last report
   ("window_*"), whose window then starts again */
static void report(long queue, uint64_t flushed) {
    printf("{\"queue\": %ld, \"packets\": %" PRIu64 ", \"clipped\": %" PRIu64 ", \"max_pending\": %" PRIu64
           ", \"flushed_at_exit\": %" PRIu64 ", \"verdict_errors\": %" PRIu64 ", \"enobufs\": %" PRIu64
           ", \"late_us_p50\": %.1f, \"late_us_p99\": %.1f, \"late_us_max\": %.1f, \"window_packets\": %" PRIu64
           ", \"window_late_us_p99\": %.1f, \"window_late_us_max\": %.1f, \"realtime\": %d}\n",
           queue, n_packets, n_clipped, max_pending, flushed, n_verdict_err, n_enobufs,
           late_quantile_us(late_hist, 0.5), late_quantile_us(late_hist, 0.99), (double)late_max_ns / 1000.0,
           hist_total(window_hist), late_quantile_us(window_hist, 0.99), (double)window_max_ns / 1000.0, realtime);
    fflush(stdout);
    memset(window_hist, 0, LATE_BUCKETS * sizeof(uint32_t));
    window_max_ns = 0;
}

static void usage(void) {
    fprintf(stderr, "usage: delayline --queue N --delay-ms D [--jitter-ms J] [--reorder 0|1] "
                    "[--seed S] [--maxlen M] [--rt-priority P]\n");
    exit(2);
}

int main(int argc, char **argv) {
    long queue = -1, maxlen = 20000, rt_priority = 0;
    double delay_ms = -1, jitter_ms = 0;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) usage();
        errno = 0;
        if (!strcmp(a, "--queue")) queue = strtol(v, &end, 10);
        else if (!strcmp(a, "--delay-ms")) delay_ms = strtod(v, &end);
        else if (!strcmp(a, "--jitter-ms")) jitter_ms = strtod(v, &end);
        else if (!strcmp(a, "--reorder")) reorder = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--maxlen")) maxlen = strtol(v, &end, 10);
        else if (!strcmp(a, "--rt-priority")) rt_priority = strtol(v, &end, 10);
        else usage();
        if (errno || !end || *end) { fprintf(stderr, "delayline: bad value for %s: %s\n", a, v); return 2; }
        i++;
    }
    if (queue < 0 || queue > 65535 || !(delay_ms >= 0 && delay_ms <= 60000) || !(jitter_ms >= 0 && jitter_ms <= 60000)
        || (reorder != 0 && reorder != 1) || maxlen < 1 || rt_priority < 0 || rt_priority > 99) usage();
    delay_ns = (uint64_t)llround(delay_ms * 1e6);
    jitter_ns = (uint64_t)llround(jitter_ms * 1e6);
    rng_state = seed * 0x2545F4914F6CDD1DULL + (uint64_t)queue;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) return 1; /* parent already gone */
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake up on time, not up to 50 us late */
    if (rt_priority > 0) {
        /* a real-time class wakes on time on a busy machine (a few ms late otherwise); the
           program sleeps between packets, and the kernel's RT throttling bounds it anyway */
        struct sched_param sp = {.sched_priority = (int)rt_priority};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) perror("delayline: SCHED_FIFO (continuing without)");
        else realtime = 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    struct sigaction sr;
    memset(&sr, 0, sizeof sr);
    sr.sa_handler = on_report;
    sigaction(SIGUSR1, &sr, NULL);
    signal(SIGPIPE, SIG_IGN);

    late_hist = calloc(LATE_BUCKETS, sizeof(uint32_t));
    window_hist = calloc(LATE_BUCKETS, sizeof(uint32_t));
    if (!late_hist || !window_hist) { perror("delayline: calloc"); return 1; }
    struct nfq_handle *h = nfq_open();
    if (!h) { perror("delayline: nfq_open"); return 1; }
    struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, &on_packet, NULL);
    if (!qh) { fprintf(stderr, "delayline: cannot bind queue %ld (in use?)\n", queue); return 1; }
    if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("delayline: nfq_set_mode"); return 1; }
    if (nfq_set_queue_maxlen(qh, (uint32_t)maxlen) < 0) { perror("delayline: nfq_set_queue_maxlen"); return 1; }
    nfnl_rcvbufsiz(nfq_nfnlh(h), 16 << 20);
    int fd = nfq_fd(h);
    printf("ready %ld\n", queue);
    fflush(stdout);

    static char buf[65536] __attribute__((aligned));
    while (!stop_flag) {
        if (report_flag) {
            report_flag = 0;
            report(queue, 0);
        }
        uint64_t now = now_ns();
        while (heap_n && heap[0].t <= now) release(qh, heap_pop(), now);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        struct timespec ts, *tsp = NULL;
        if (heap_n) {
            uint64_t wait = heap[0].t - now;
            ts.tv_sec = (time_t)(wait / 1000000000ULL);
            ts.tv_nsec = (long)(wait % 1000000000ULL);
            tsp = &ts;
        }
        int r = ppoll(&pfd, 1, tsp, NULL);
        if (r < 0) {
            if (errno == EINTR) continue;
            perror("delayline: ppoll");
            break;
        }
        if (r == 0) continue;
        /* read what is there, but come back to the timer at least every 32 packets */
        for (int k = 0; k < 32; k++) {
            ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0) {
                if (errno == ENOBUFS) { n_enobufs++; continue; }
                break;
            }
            nfq_handle_packet(h, buf, (int)n);
            if (heap_n && heap[0].t <= now_ns()) break;
        }
    }
    uint64_t flushed = heap_n;
    while (heap_n) {
        item_t it = heap_pop();
        nfq_set_verdict(qh, it.id, NF_ACCEPT, 0, NULL);
    }
    report(queue, flushed);
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
}
