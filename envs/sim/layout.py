"""Column layout of the simulator's struct-of-arrays state.

The batched core keeps every quantity in a few dense float64 arrays so that one compiled call
advances B connections. This module names their columns. Two groups are *sender-observable*
(`OBS_*` per path, `COBS_*` per connection): they hold exactly what a real sender knows
(docs/transport.md, "What a scheduler may look at"), and they are the only arrays a scheduler
or a feature set receives. Everything else (bottleneck queues, true capacity, loss
probability, the receiver's buffer) is ground truth the scheduler never sees.

Units: bytes, seconds, bytes/second; times inside the kernel are integer steps stored as float.
"""

# --- sender-observable, per flow (path): array ``obs[B, F, N_OBS]`` ----------------------------
OBS_CWND = 0  # congestion window (bytes)
OBS_SWND = 1  # send window min(cwnd, rwnd) (bytes)
OBS_SRTT = 2  # smoothed RTT (s), RFC 6298
OBS_RTTVAR = 3  # RTT variation (s), RFC 6298
OBS_MIN_RTT = 4  # minimum RTT seen (s)
OBS_LATEST_RTT = 5  # latest RTT sample (s)
# bytes committed to the path and not yet acknowledged or declared lost: sent, plus (a stack with
# path_buffer, XQUIC) scheduled on the path and not yet sent (FL_SCHED), as XQUIC's scheduler
# counts them (bytes_in_flight + path_schedule_bytes) and bindings/ reports them
OBS_INFLIGHT = 6
OBS_DELIVERY_RATE = 7  # latest delivery-rate sample (bytes/s), as BBR estimates it
OBS_LOSSES = 8  # packets declared lost (cumulative)
OBS_RETRANS = 9  # packets retransmitted (cumulative), copies of spurious declarations included (XQUIC ctl_lost_count, Linux total_retrans)
OBS_RTOS = 10  # RTO/PTO events (cumulative)
OBS_PACING_RATE = 11  # pacing rate (bytes/s), 0 when the CC does not pace
# 1 when the path is active and has window space for one MSS beyond OBS_INFLIGHT, and (a stack
# without path_buffer, Linux) pacing credit: the paths the scheduler may give a packet
OBS_AVAILABLE = 12
OBS_ACKED = 13  # bytes acknowledged on this path (cumulative)
OBS_SENT = 14  # bytes sent on this path (cumulative, including retransmissions)
N_OBS = 15
OBS_NAMES = (
    "cwnd", "swnd", "srtt", "rttvar", "min_rtt", "latest_rtt", "inflight", "delivery_rate",
    "losses", "retrans", "rtos", "pacing_rate", "available", "acked", "sent",
)

# --- sender-observable, per connection: ``cobs[B, N_COBS]`` --------------------------------------
COBS_BACKLOG = 0  # bytes waiting to be sent (new data the window allows + pending retransmissions)
COBS_ACKED = 1  # bytes delivered in order, as acknowledged to the sender
COBS_ELAPSED = 2  # seconds since the connection started
COBS_REORDER = 3  # receiver's reorder-buffer occupancy as it advertises it (bytes)
COBS_RWND = 4  # free receive window as advertised, less what was sent since (bytes)
COBS_REMAINING = 5  # bytes offered by the application not yet acknowledged (inf for bulk)
# the current item (message, chunk, object: the first one offered and not yet fully acknowledged);
# the server knows where each response ends and when its request arrived (envs/sim/workload.py)
COBS_ITEM_ACKED = 6  # bytes of the current item acknowledged
COBS_ITEM_ELAPSED = 7  # seconds since the current item's request reached the server (0: none)
COBS_ITEMS_ACKED = 8  # items fully acknowledged
COBS_ITEM_RATE = 9  # the last fully acknowledged item: bytes / (last ACK - request arrival), bytes/s
N_COBS = 10
COBS_NAMES = ("backlog", "acked", "elapsed", "reorder", "rwnd", "remaining",
              "item_acked", "item_elapsed", "items_acked", "item_rate")

# --- sender bookkeeping per flow, not exposed to schedulers: ``fl[B, F, N_FL]`` -----------------
FL_PACE_CREDIT = 0  # bytes the pacer allows now
FL_LAST_PROGRESS = 1  # step of the last ACK that acknowledged new data (RTO timer start)
FL_RTO_BACKOFF = 2  # exponential RTO back-off multiplier
FL_NEXT_ROUND = 3  # delivered count that ends the current packet-timed round (BBR)
FL_LOST_UNNOTIFIED = 4  # lost bytes still counted in flight, not yet detected
FL_ACTIVE = 5  # 1 when the flow sends (competing flows follow their schedule)
FL_PATH = 6  # index of the link whose queue the flow crosses (its route's bottleneck; the path's own in the short form)
FL_IS_SUB = 7  # 1 for the connection's own subflows, 0 for competing flows
FL_RTT_SUM = 8  # sum of RTT samples (metric)
FL_RTT_CNT = 9  # number of RTT samples (metric)
FL_SPUR_PENDING = 10  # bytes of copies to send after spurious (reordering) loss declarations
FL_CC = 11  # congestion-control id (envs.plugins registry)
FL_SENT_PKTS = 12  # packets sent (metric: loss rate)
FL_LOST_PKTS = 13  # packets lost in the network (ground truth, metric)
FL_GOOD = 14  # unique connection bytes that arrived over this flow (per-path goodput)
FL_SCHED_IDX = 15  # index of the next change in the flow's activity schedule
FL_LAST_ARRIVE = 16  # arrival step of the flow's latest departed segment (FIFO order)
FL_DEP_RATE = 17  # bytes per step the flow's packets leave the bottleneck at (EWMA; their spacing)
# the stack's loss recovery (envs/sim/recovery.py)
FL_REO_STEPS = 18  # RACK reordering-window steps beyond the first (widened by DSACKs)
FL_REO_PERSIST = 19  # recoveries left before the window returns to one step
FL_DSACK_AT = 20  # step the DSACK of the latest spurious resend arrives (0: none pending)
FL_UNDO_OK = 21  # 1 while the pending reduction was caused by spurious declarations only
FL_PRIOR_CWND = 22  # cwnd before that reduction (bytes)
FL_PRIOR_SSTHRESH = 23  # ssthresh before it, as tcp_current_ssthresh gives it (bytes)
FL_RECOVERY_AT = 24  # step the latest recovery from a real loss started
# the flow's route (envs/network.py), set by the simulator: a subflow's whole path, a competing flow's link
FL_DFWD = 25  # forward propagation delay (steps, may be fractional)
FL_DREV = 26  # reverse propagation delay (whole steps)
FL_JITTER = 27  # per-packet delay standard deviation (steps)
FL_XLOSS = 28  # random loss probability of the transit links together, from the flow's schedule
FL_XLOSS_NEXT = 29  # packets until the next transit loss (as BN_LOSS_NEXT)
FL_BUDGET = 30  # competing flow: bytes it has left to send (inf: long-lived; arriving flows send their size)
FL_DOWN_UNTIL = 31  # subflow: step a failed transit link of its route comes back (its packets wait until then)
FL_FIRST_SENT = 32  # send step of the latest segment acknowledged (0 / the idle step while nothing is in flight)
FL_OPEN_AT = 33  # subflow: step the path is set up and may carry data (the stack's path setup, envs/sim/stacks.py)
# the path's schedule buffer (a stack with path_buffer, XQUIC's path_schedule_buf): packets the
# scheduler gave the path, their sequence fixed, that its pacer (or window) has not let out yet;
# a FIFO ring of SQ_K ranges (seq, bytes, hole filled, or SQ_NEW, or SQ_COPY), each SQ_W columns from FL_SQ
FL_SCHED = 34  # bytes scheduled on the path and not yet sent (part of OBS_INFLIGHT)
FL_BUFFERED = 35  # 1 when the connection's stack holds scheduled packets on the path (STK_PATH_BUFFER)
FL_SQ_HEAD = 36  # ring index of the oldest range
FL_SQ_N = 37  # ranges in the ring
# subflow of a stack whose ACKs name one SACK block (STK_ONE_SACK): the step the retransmission of
# its latest real loss reaches the receiver, until which that loss's hole holds its cumulative ACK
FL_HOLE_UNTIL = 38
# the ACK compression / jitter ratio the one-SACK-block table was last read at, and its log (the
# compression delay is mostly the stack's constant one: the log once, not per step)
FL_COMP_C = 39
FL_COMP_LOG = 40
# a path set up after the connection under a stack whose setup sample comes late (StackProfile
# unsampled_rtt): that sample's value (s) and the step it lands (0: none pending)
FL_SETUP_RTT = 41
FL_SAMPLE_AT = 42
# where the flow's spacing over its round trip's jitter fell on the reordering tables' spacing grid
# at its latest departures, plus 1 (0: not paced, or no reordering): the delivery-rate samples'
# scatter is read there (kernel._sample_scatter)
FL_RATE_AT = 43
# 1 once a copy of the pending DSACK's spurious declarations has been queued: only a copy that
# reaches the receiver beside its original makes a DSACK (RFC 2883), which widens RACK's window
FL_COPY_SENT = 44
# the fraction of a step the flow's declarations carry over (kernel._detect_steps), in [0, 1)
FL_DETECT_PHASE = 45
FL_SQ = 46  # first column of the ring
SQ_K = 64  # ranges a ring holds (a power of two): each retransmitted hole takes its own
SQ_SEQ, SQ_BYTES, SQ_FILL = 0, 1, 2  # a range's columns
SQ_NEW = -1.0  # SQ_FILL of new data
SQ_COPY = -2.0  # SQ_FILL of copies that carry nothing new (a redundant scheduler's, _enqueue_copy); SQ_SEQ unused
SQ_W = 3
N_FL = FL_SQ + SQ_K * SQ_W

# --- link ground truth: ``bn[B, K, N_BN]`` (K links; in the short form link p is path p) ----------
BN_CAP = 0  # current capacity (bytes/step)
BN_QCAP = 1  # drop-tail buffer (bytes)
BN_DFWD = 2  # the link's own forward propagation delay (steps; flows use their route's FL_DFWD)
BN_DREV = 3  # the link's own reverse propagation delay (steps; flows use FL_DREV)
BN_JITTER = 4  # the link's own per-packet delay standard deviation (steps; flows use FL_JITTER)
BN_LOSS = 5  # random loss probability per packet entering the link's queue
BN_UDP = 6  # constant-rate UDP cross traffic (bytes/step)
BN_ENQ = 7  # cumulative bytes accepted into the queue (FIFO position)
BN_DEQ = 8  # cumulative bytes that left the queue
BN_TRACE_IDX = 9  # index of the next capacity change in the trace
BN_DELIVERED = 10  # bytes that crossed the bottleneck (all flows; invariant checks)
BN_DROPPED = 11  # bytes dropped at the tail
BN_UDP_CREDIT = 12  # UDP bytes accrued but not yet sent as a whole packet
BN_LOSS_NEXT = 13  # packets until the next random loss, that one included (0: draw; see kernel._random_loss)
N_BN = 14

# --- connection: ``cn[B, N_CN]`` ---------------------------------------------------------------
CN_T = 0  # current step
CN_DONE = 1  # 1 when the episode ended
CN_RCV_NXT = 2  # receiver: next in-order byte (everything below was delivered)
CN_RCV_BYTES = 3  # receiver: unique bytes arrived
CN_RCVBUF = 4  # receive buffer (bytes)
CN_SND_NXT = 5  # next new byte to send
CN_SND_LIMIT = 6  # bytes the application has offered so far (envs/sim/workload.py; inf for bulk)
CN_END_STEP = 7  # step at which a bulk/capped episode ends
CN_ACKED_EDGE = 8  # highest in-order point acknowledged to the sender
CN_DONE_STEP = 9  # step the transfer completed (receiver has every byte)
CN_REORDER_MAX = 10  # maximum reorder-buffer occupancy (bytes)
CN_HOLES_HI = 11  # one past the highest hole slot in use
CN_PENDING = 12  # bytes of detected losses waiting for retransmission
CN_N_SUB = 13  # number of subflows (paths)
CN_N_FLOWS = 14  # subflows + competing flows
CN_REORDERS = 15  # 1 when jitter may reorder packets (spurious loss model), 0 order-preserving
CN_SCHED = 16  # scheduler id (envs.plugins registry)
CN_PAUSE = 17  # why the kernel stopped for this connection (see PAUSE_*)
CN_MODE_UNTIL = 18  # step at which the current interval decision expires (-1: never)
CN_ADVISE = 19  # blocked mode: the agent's answer for the rest of this step (-1 none, 0 wait, 1 send)
CN_REORDER_SUM = 20  # time integral of reorder-buffer occupancy (byte-steps)
CN_OOO_LIMIT = 21  # out-of-order buffer limit (bytes), inf for none
CN_OOO_EXCEEDED = 22  # 1 once the reorder buffer exceeded the limit
CN_END_ON_OOO = 23  # 1 to end the episode when the limit is exceeded
CN_BLOCKED = 24  # 1 when the connection runs the blocked decision mode
# hole-table bookkeeping of the kernel (exact: it only spares scans of the table)
CN_LIVE_HEAD = 25  # first hole of the list of holes in use, in sequence order (-1: none)
CN_LIVE_TAIL = 26  # its last hole
CN_NEXT_DETECT = 27  # lower bound of the holes' HOLE_DETECT_AT >= 0 (inf: none scheduled)
CN_N_PEND = 28  # holes waiting for retransmission (length of the HOLE_PLIST list)
CN_N_DET = 29  # holes with a loss detection scheduled (length of the HOLE_DLIST list)
CN_FREE_HINT = 30  # every slot below it is in use (the lowest free slot is >= it)
CN_N_LINKS = 31  # links of the network (rows of bn in use; = CN_N_SUB in the short form)
# receive-window auto-tuning, the stack's rule (kernel._autotune_window; off while CN_RCVBUF_MAX <= CN_RCVBUF)
CN_RCVBUF_MAX = 32  # largest receive buffer auto-tuning may reach (bytes)
CN_TUNE_T = 33  # step the current auto-tuning epoch (XQUIC: the last window update; DRS: measurement) started
CN_TUNE_SEQ = 34  # in-order point when it started
CN_TUNE_SPACE = 35  # DRS: the most the application read in one measurement so far (rcvq_space.space)
CN_PATHS_READY = 36  # step the last subflow opens (FL_OPEN_AT); before it the sender runs minRTT over the open ones
CN_MSS = 37  # payload bytes of a full packet, the connection's stack's (envs/sim/stacks.py packet_bytes)
N_CN = 38

PAUSE_NONE = 0
PAUSE_DECISION = 1  # blocked mode: fast path has no window, another path has
PAUSE_INTERVAL = 2  # interval/packet mode: the current action expired
PAUSE_DONE = 3  # episode ended
PAUSE_LIMIT = 4  # step budget of this call used up
PAUSE_UNREADY = 5  # refused: never reset (no paths, no record bin), so no step could advance it

# --- segments in flight, per flow: ``seg[B, F, Q, N_SEG]`` ------------------------------------------
SEG_SEQ = 0  # lowest connection sequence carried (inf for spurious resends)
SEG_BYTES = 1  # bytes that will arrive
SEG_POS = 2  # FIFO position of its last byte in the bottleneck queue
SEG_SENT = 3  # send step
SEG_DELIV = 4  # flow's acked bytes when it was sent (BBR delivery-rate sample)
SEG_ARRIVE = 5  # arrival step at the receiver (set on departure from the queue)
SEG_HOLE = 6  # hole of the bytes lost from this segment (-1 none)
SEG_FILL = 7  # hole this segment's retransmitted bytes fill (-1 none)
SEG_FILL_BYTES = 8  # retransmitted bytes that fill it
SEG_LOST = 9  # bytes lost from this segment (ground truth; detected on arrival of the rest)
SEG_SPUR = 10  # packets the receiver will see reordered beyond the loss-detection threshold
SEG_NEW = 11  # new (first-transmission) connection bytes that will arrive
SEG_FIRST_SENT = 12  # the flow's FL_FIRST_SENT when it was sent (delivery-rate sample's send interval)
SEG_SPUR_LEAD = 13  # steps by which their declaration comes before their ACK (the rule's mean, envs/sim/reordering.py)
SEG_COPY = 14  # of SEG_BYTES, copies of spurious declarations: never declared lost (docs/transport.md, "Reordering")
SEG_COPY_LOST = 15  # such copies lost on the way (also in SEG_LOST, which the ACK path reads first): they leave the flight at the segment's ACK, undeclared
SEG_INDIRECT = 16  # of SEG_COPY, those the stack acknowledges indirectly: not counted as delivered (drawn at departure)
N_SEG = 17
# Q, the FIFO length, is a power of two (the kernel wraps counters with ``& (Q - 1)``); so is L.
# head (oldest not yet arrived), dep (oldest not yet departed the queue), tail (next free), and
# scan: every segment from head up to it carries no new data (the receiver's in-order point skips
# them; a segment's new bytes only grow while it is the tail in its send step, and only shrink later)
SI_HEAD, SI_DEP, SI_TAIL, SI_SCAN = 0, 1, 2, 3
N_SI = 4

# --- ACK / loss feedback rings, per flow: ``ring[B, F, L, N_RING]`` ---------------------------------
RING_ACKED = 0  # bytes acknowledged at this step
RING_SENT = 1  # send step of the latest segment acknowledged
RING_DELIV = 2  # its SEG_DELIV
RING_RCV_NXT = 3  # receiver's in-order point carried by the ACK
RING_LOST = 4  # bytes declared lost at this step
RING_LOST_SENT = 5  # send step of the latest lost segment (congestion-recovery rule)
RING_SPUR = 6  # packets spuriously declared lost (reordering)
RING_PKT_RTT = 7  # least RTT (steps) of the packets acknowledged at this step, each with its own jitter (0: none)
RING_FIRST_SENT = 8  # SEG_FIRST_SENT of the latest segment acknowledged
RING_SPUR_LEAD = 9  # RING_SPUR times their SEG_SPUR_LEAD, summed (steps)
RING_FREED = 10  # bytes leaving the flight undeclared and uncounted at this step (SEG_COPY_LOST, SEG_INDIRECT)
RING_RTT_SAMPLE = 11  # the RTT sample (steps) the stack takes at this step when it is not the segment's (STK_RTT_LARGEST; 0: none)
N_RING = 12

# --- holes (lost data the receiver waits for): ``hole[B, H, N_HOLE]`` --------------------------------
HOLE_SEQ = 0  # sequence of the first lost byte
HOLE_REM = 1  # bytes not yet arrived (0: slot free)
HOLE_UNDET = 2  # lost bytes not yet detected by the sender
HOLE_PENDING = 3  # detected, waiting for retransmission
HOLE_DETECT_AT = 4  # step at which the sender detects the loss (-1 none scheduled)
HOLE_FLOW = 5  # flow that lost it last
# kernel bookkeeping, so that no operation scans every slot up to CN_HOLES_HI: the holes in use
# form a doubly linked list in sequence order (its head is the lowest hole); the holes waiting for
# retransmission and those with a detection scheduled form two unordered lists, stored down a
# column (entry i of the list in row i) with each slot's position in its own row
HOLE_PREV = 6  # previous hole in the list of holes in use (-1: none)
HOLE_NEXT = 7  # next hole in that list (-1: none)
HOLE_LINKED = 8  # 1 while the slot is in that list
HOLE_PPOS = 9  # position in the pending list (-1: not in it)
HOLE_DPOS = 10  # position in the detection list (-1: not in it)
HOLE_PLIST = 11  # row i: slot of the pending list's i-th entry
HOLE_DLIST = 12  # row i: slot of the detection list's i-th entry
N_HOLE = 13

# --- scheduler parameters and state: ``sched[B, N_SCHED]`` ---------------------------------------
SCHED_PARAMS = 0  # first 16 columns: parameters of the heuristic
SCHED_STATE = 16  # next 16 columns: its state (RR pointer, ECF waiting flag, ...)
N_SCHED = 32

# --- per-flow congestion-control state: ``cc[B, F, N_CC]`` and parameters ``ccp[B, F, N_CCP]`` -----
N_CC = 50
N_CCP = 24

# --- the application's workload (envs/sim/workload.py): ``wl[B, N_WL]`` -----------------------------
# parameters (set by the simulator at reset), then state; bytes, steps; ground truth of the app
WL_TYPE = 0  # WL_BULK, WL_FILE, WL_DASH or WL_WEB
WL_TOTAL = 1  # bytes offered in all when known in advance (file, messages, web), else inf
WL_ITEMS = 2  # units completed one by one: messages, chunks, objects (1 for a file, 0 for bulk)
WL_ITEM_BYTES = 3  # bytes of one message or web object
WL_REQ_DELAY = 4  # steps a request takes to reach the server (the paths' smallest reverse delay)
WL_PARALLEL = 5  # web: requests outstanding at once
WL_CHUNK_STEPS = 6  # dash: playback steps of one chunk
WL_BUF_MAX = 7  # dash: client buffer (steps of playback)
WL_HIST_K = 8  # dash: chunks in the throughput estimate
WL_SAFETY = 9  # dash: bitrate <= safety x estimate
WL_N_RATES = 10  # dash: rungs of the ladder
WL_DONE_ITEMS = 11  # items completed (delivered in order to the application)
WL_ISSUED = 12  # items requested
WL_RELEASED = 13  # items whose request reached the server (their bytes are offered)
WL_BUFFER = 14  # dash: playback buffer (steps)
WL_PLAYING = 15  # dash: 1 once playback started
WL_REBUF = 16  # dash: steps the playback stalled (buffer empty, chunks to come)
WL_BIN = 17  # steps per record bin (rec)
WL_RATE = 18  # WL_N_RATES_MAX rungs (bytes/step), increasing
WL_N_RATES_MAX = 16
WL_HIST = WL_RATE + WL_N_RATES_MAX  # ring of the last WL_HIST_K chunk throughputs (bytes/step)
WL_ACKED_ITEMS = WL_HIST + 16  # items whose last byte the sender has seen acknowledged
WL_ACK_STEP = WL_ACKED_ITEMS + 1  # step the last item was fully acknowledged
WL_BIN_K = WL_ACK_STEP + 1  # record bin of the current step (t // WL_BIN)
WL_BIN_END = WL_BIN_K + 1  # first step of the next bin
N_WL = WL_BIN_END + 1

WL_BULK, WL_FILE, WL_DASH, WL_WEB = 0, 1, 2, 3  # the order of envs.scenario.WORKLOAD_TYPES

# --- one row per item (message, chunk, object): ``item[B, I, N_ITEM]`` (steps, bytes) ----------------
ITEM_REQ = 0  # step the client requested it (0 for messages: offered at start)
ITEM_ARRIVE = 1  # step the request reached the server
ITEM_END = 2  # connection offset one past its last byte
ITEM_DONE = 3  # step its last byte was delivered in order (-1 not yet)
ITEM_RATE = 4  # dash: bitrate chosen (bytes/step)
N_ITEM = 5

# --- per time bin (SimConfig.record_bin_ms): ``rec[B, R, N_REC]`` ----------------------------------
REC_DELIVERED = 0  # bytes delivered in order by the end of the bin (cumulative)
REC_REORDER = 1  # reorder-buffer occupancy summed over the bin's steps (byte-steps)
N_REC = 2

# --- the stack profile as the core reads it: ``Constants.stack[B, F, N_STK]``, one row per flow
# (envs/sim/stacks.py; train.randomise draws a row per episode) -----------------------------------
STK_TIME_THRESHOLD = 0  # RFC 9002 time threshold - 1: lost once older than (1 + it) max(srtt, latest RTT)
STK_REO_WND = 1  # RACK reordering window: this fraction of min_rtt per reo_wnd step
STK_REO_ADAPT = 2  # 1: DSACKs widen the window (RACK reo_wnd_steps)
STK_REO_PERSIST = 3  # recoveries a widened window persists for
STK_UNDO = 4  # 1: reductions caused only by spurious declarations are undone
STK_RTO_MULT = 5  # retransmission timer: mult * (srtt + max(4 rttvar, floor) + ack delay) ...
STK_RTO_VAR_FLOOR = 6
STK_RTO_ACK_DELAY = 7
STK_RTO_MIN = 8  # ... and at least this (s)
STK_PKT_THRESHOLD = 9  # later packets whose arrival declares a packet lost (RFC 9002: 3; RACK: 1)
STK_RULE = 10  # the loss-detection rule: index into ``Constants.spur_prob`` (envs/sim/reordering.py RULES)
STK_TRAINS = 11  # 1: a flow whose CC does not pace sends each round trip's packets as one train
STK_WINDOW_DRS = 12  # receive-window auto-tuning: 1 Linux's dynamic right-sizing, 0 XQUIC's doubling
STK_PATH_BUFFER = 13  # 1: a paced path without pacing credit is not blocked; what it is given waits on it (FL_SCHED)
STK_CC_MSS = 14  # the unit its CCs count windows in, in its packets (XQUIC's XQC_MSS: 1436 / 1200; Linux 1)
STK_PACKET = 15  # the flow's packet, payload bytes (the stack's packet_bytes, or SimConfig.mss; a subflow's is CN_MSS)
STK_RTT_LARGEST = 16  # 1: RTT samples only from an ACK's newly acknowledged largest packet (RFC 9002 sec. 5.1)
STK_ONE_SACK = 17  # 1: a subflow's ACKs name one SACK block and compress while a hole persists (kernel MPTCP)
STK_COMP_SACK_DELAY = 18  # that receiver's ACK compression delay (s), at most ...
STK_COMP_SACK_RTT = 19  # ... this fraction of the round trip
STK_PACER_DELAY = 20  # a paced flow's pacer releases packets at least this far apart (s; 0: each packet's own time)
N_STK = 21
