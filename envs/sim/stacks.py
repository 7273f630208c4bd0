"""Stack profiles: the simulator behaves like XQUIC or like Linux (``stack=xquic|linux``).

The same CC on the same path gives different numbers in different transport stacks, because the
stacks tell reordering from loss differently, time out differently and ship their own CC
constants (docs/transport.md, "Stacks differ"). A profile is one record per stack with every
such number, each taken from the stack's source at the version this repository builds or runs
(XQUIC commit d67938db705c, the one ``bindings/`` links; Linux 6.x, the kernel of the live MPTCP
runs), or from the RFC the stack implements. Nothing here is fitted to measurements.

The core reads a profile through ``kernel.Constants.stack`` (``stack_vector``); the CC constants are
parameter defaults of the CC plug-ins (``cc_defaults``), applied under the user's own
``+cc.<name>.params...`` overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from envs.errors import ConfigError, unknown_name
from envs.sim.layout import (N_STK, STK_CC_MSS, STK_PACKET, STK_PATH_BUFFER, STK_PKT_THRESHOLD, STK_REO_ADAPT,
                             STK_REO_PERSIST, STK_REO_WND, STK_RTO_ACK_DELAY, STK_RTO_MIN, STK_RTO_MULT,
                             STK_RTO_VAR_FLOOR, STK_RTT_LARGEST, STK_RULE, STK_TIME_THRESHOLD, STK_TRAINS, STK_UNDO,
                             STK_WINDOW_DRS, STK_ONE_SACK, STK_COMP_SACK_DELAY, STK_COMP_SACK_RTT, STK_PACER_DELAY)
from envs.sim.reordering import RULES

DEFAULT_STACK = "xquic"
# how a receive window given a maximum auto-tunes (kernel._autotune_window): XQUIC's doubling of
# the window read half within 2 RTTs, or Linux's dynamic right-sizing (DRS) once per RTT
WINDOW_RULES = ("xquic", "drs")
# when a connection's further paths may first carry data (path_open_steps): XQUIC's connection-ID
# exchange and path validation, or Linux MPTCP's MP_JOIN handshake
PATH_SETUPS = ("xquic", "mp_join")
# XQUIC's packet and window unit (src/transport/xqc_packet.h, xqc_packet_out.h): a packet holds
# XQC_PACKET_OUT_SIZE (XQC_QUIC_MIN_MSS) 1200 bytes before its AEAD tag, of which the short header
# takes 13 (a first byte, XQC_DEFAULT_CID_LEN 8, a 4-byte packet number, XQC_PKTNO_BITS 3) and the
# STREAM frame's header 8, leaving 1179 of the application's bytes; its CCs count a packet as the
# 1200 bytes it takes (po_used_size) but grow and floor their windows in XQC_MSS
# (XQC_QUIC_MAX_MSS 1420 + XQC_ACK_SPACE 16 = 1436 bytes), 1436 / 1200 of a packet
XQC_PACKET_OUT_SIZE = 1200
XQC_PAYLOAD = XQC_PACKET_OUT_SIZE - 13 - 8
XQC_MSS = 1420 + 16
XQC_MSS_PACKETS = XQC_MSS / XQC_PACKET_OUT_SIZE
XQC_MAX_RECV_WINDOW = 16 * 1024 * 1024  # src/transport/xqc_conn.h: the largest flow-control window
# Linux's: a 1500-byte MTU less the IPv4 (20) and TCP (20) headers and the timestamp option (12)
LINUX_PAYLOAD = 1500 - 20 - 20 - 12
# what a full packet adds on the link beside its payload, as the emulation's qdisc counts a frame:
# the Ethernet (14), IPv4 (20) and transport headers; XQUIC's UDP (8), its AEAD tag (16, RFC 9001
# sec. 5.3) and the QUIC headers inside its packet; Linux's TCP header with the timestamp option
ETHERNET_IPV4 = 14 + 20
XQC_AEAD_TAG = 16
XQC_HEADER_BYTES = ETHERNET_IPV4 + 8 + XQC_AEAD_TAG + (XQC_PACKET_OUT_SIZE - XQC_PAYLOAD)
LINUX_HEADER_BYTES = ETHERNET_IPV4 + 20 + 12


@dataclass(frozen=True)
class StackProfile:
    """One transport stack's loss detection, timers and CC constants."""

    name: str
    description: str
    # loss detection under reordering (envs/sim/reordering.py): the rule, and the time window
    # beyond a packet's expected round trip (recovery.reorder_window): with a time threshold,
    # (1 + time_threshold) max(srtt, latest RTT) less that round trip; with RACK, min_rtt * reo_wnd
    # * steps; at most srtt
    rule: str
    packet_threshold: int  # later packets whose arrival declares a packet lost
    time_threshold: float  # RFC 9002 time threshold - 1: lost once older than (1 + it) max(srtt, latest RTT)
    reo_wnd: float  # RACK reordering window per step, fraction of min_rtt
    reo_wnd_adapt: bool  # DSACKs widen the window one step per round trip (RACK reo_wnd_steps)
    reo_wnd_persist: int  # recoveries without DSACK before the window returns to one step
    undo: bool  # a reduction caused only by spurious declarations is undone (DSACK / timestamps)
    # a flow whose CC does not pace releases what each ACK frees at once: its round trip's packets
    # cross the bottleneck as one back-to-back train (envs/sim/reordering.py, train_table)
    unpaced_trains: bool
    # RTT samples (srtt, rttvar, latest RTT) come only from an ACK whose largest packet is newly
    # acknowledged (RFC 9002 sec. 5.1), so under reordering from early packets (envs/sim/ack_loop.py
    # rtt_sample_table); False: every ACK's segment gives one
    rtt_from_largest: bool
    # while a real loss's hole holds a subflow's cumulative ACK, its receiver's ACKs name one SACK
    # block and are compressed, one per comp_sack_delay s (at most comp_sack_rtt of the round
    # trip): a late packet may never be named before the hole is repaired, and RACK declares it
    # (envs/sim/ack_loop.py one_block_seen; docs/transport.md, "One SACK block per ACK")
    one_sack_block: bool
    comp_sack_delay: float  # s
    comp_sack_rtt: float
    # a paced flow's pacer, out of budget, waits at least pacer_delay s before it sends again, so
    # a resend queued at a random moment leaves up to max(pacer_delay, one packet's time) later:
    # what decides whether its original's ACK, coming a short lead after a spurious declaration,
    # cancels it first (kernel._queue_copies; docs/transport.md, "Copies a late ACK cancels")
    pacer_delay: float  # s
    # retransmission timer: mult * (srtt + max(4 rttvar, rto_var_floor) + rto_ack_delay), >= rto_min
    rto_mult: float
    rto_var_floor: float  # s
    rto_ack_delay: float  # s
    rto_min: float  # s
    # receive-window auto-tuning (scenario receive_buffer_max_bytes), one of WINDOW_RULES
    window_rule: str
    # the receive window (bytes) of a connection whose scenario sets no receive_buffer_bytes; None:
    # RFC 6182's 2 x max RTT x sum of the paths' rates (Scenario.receive_buffer)
    receive_window: float | None
    # how the paths after the first are set up before they carry data, one of PATH_SETUPS, and
    # the peer's ACK delay in such a path's first RTT sample (s), added to its round trip
    path_setup: str
    path_sample_delay: float
    # what such a path shows before its first RTT sample: srtt (s; rttvar half of it, no latest
    # sample) until the setup's sample lands path_sample_delay after the path opens, or a data
    # packet's comes first (kernel._setup_sample); None: the setup gives the sample as the path opens
    unsampled_rtt: float | None
    # the scheduler's window check counts the bytes already scheduled on a path, not its pacer: a
    # paced path with window room is not blocked, and what it is given waits on the path until
    # its pacer lets it out, before anything given it later (kernel: FL_SCHED); False: a path
    # without pacing credit is blocked (the packet goes to another path or waits)
    path_buffer: bool
    # payload bytes of a full packet: what the core moves per packet on its links and counts as
    # the application's (kernel: cn[CN_MSS]; SimConfig.mss overrides it)
    packet_bytes: int
    # bytes a full packet adds on the link beside its payload: a link of rate R carries
    # R x packet_bytes / (packet_bytes + header_bytes) of the application's data
    header_bytes: int
    # the unit its CCs grow and floor their windows in, in its packets: what the CC plug-ins get
    # as ``mss`` (kernel: STK_CC_MSS), so every packet-counted CC constant is the stack's own
    # figure; XQUIC's XQC_MSS, 1436 bytes of window for a packet's 1200; Linux's segment
    cc_mss_packets: float
    ccs: tuple[str, ...]  # the built-in CCs the stack has
    cc_defaults: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # its CC constants

    def payload_share(self, packet: float) -> float:
        """The share of a link's bytes that is payload for full packets of ``packet`` payload bytes
        under this stack's headers (``header_bytes``)."""
        return packet / (packet + self.header_bytes)

    def offers(self, cc: str) -> bool:
        """Whether the stack runs CC ``cc``: one it has, or a plug-in no stack names (a CC of the
        user's own, which runs under either stack's transport)."""
        return cc in self.ccs or cc not in BUILTIN_CCS


XQUIC = StackProfile(
    name="xquic",
    description="XQUIC d67938db705c as bindings/ configures it (RFC 9002 loss detection)",
    rule="rfc9002",  # xqc_send_ctl.c xqc_send_ctl_detect_lost: packet and time thresholds
    packet_threshold=3,  # xqc_send_ctl.h XQC_kPacketThreshold (conn_settings.loss_detection_pkt_thresh)
    # xqc_send_ctl.h XQC_kTimeThresholdShift 3: loss_delay = max(srtt, latest_rtt) * (1 + 2^-3)
    time_threshold=1.0 / 8.0,
    reo_wnd=0.0,
    # xqc_send_ctl_on_spurious_loss_detected would raise both thresholds, but only with
    # conn_settings.spurious_loss_detect_on, which is 0 by default (xqc_conn.c) and in bindings/
    reo_wnd_adapt=False,
    reo_wnd_persist=0,
    undo=False,  # no congestion-window undo in xqc_send_ctl.c / the CCs
    # bindings/src/mps_xquic.c sets conn_settings.pacing_on only for bbr and bbr2; without pacing
    # xqc_send_ctl_can_send (xqc_send_ctl.c) lets out whatever the window allows when an ACK
    # frees it (the peer acknowledges every 2 packets), so reno and cubic send ACK-clocked trains;
    # the pacer (xqc_pacing.c) spreads bbr and bbr2 over the round trip
    unpaced_trains=True,
    # xqc_send_ctl.c xqc_send_ctl_on_ack_received: ctl_latest_rtt and xqc_send_ctl_update_rtt only
    # when update_largest_ack (a packet above ctl_largest_acked is acknowledged), timed from
    # ctl_largest_acked_sent_time; xqc_sample.c gives BBR the same ctl_latest_rtt
    rtt_from_largest=True,
    # an ACK frame names every range the receiver holds, up to XQC_MAX_ACK_RANGE_CNT, 64 (xqc_recv_record.h),
    # and an out-of-order packet is acknowledged at once (xqc_conn.c): no range goes unnamed
    one_sack_block=False,
    comp_sack_delay=0.0,
    comp_sack_rtt=0.0,
    # xqc_pacing.c xqc_pacing_time_until_send: a pacer short of budget sets its timer for
    # max(the deficit at the pacing rate, XQC_PACING_DELAY_US = XQC_CLOCK_GRANULARITY_US 1 ms)
    pacer_delay=0.001,
    # RFC 9002 sec. 6.2.1 PTO = srtt + max(4 rttvar, kGranularity) + max_ack_delay
    # (xqc_send_ctl.h XQC_kGranularity 1 ms; xqc_transport_params.h XQC_DEFAULT_MAX_ACK_DELAY 25 ms).
    # A PTO only probes; the window collapses on persistent congestion, losses spanning
    # XQC_kPersistentCongestionThreshold (3) PTOs (RFC 9002 sec. 7.6), which is the core's RTO.
    rto_mult=3.0,
    rto_var_floor=0.001,
    rto_ack_delay=0.025,
    rto_min=0.0,
    # xqc_stream.c xqc_stream_do_recv_flow_ctl: with less than half the window left, the window
    # doubles (up to XQC_MAX_RECV_WINDOW, 16 MiB, xqc_conn.h) if the last update was less than
    # 2 min srtt ago (xqc_conn_get_min_srtt), then the limit moves to read + window; bindings/
    # leaves the initial windows at that maximum, so there the window is fixed at 16 MiB
    window_rule="xquic",
    # bindings/ (mps_xquic.c settings()) sets no flow control, so xqc_conn.c
    # xqc_conn_init_trans_settings gives the stream XQC_MAX_RECV_WINDOW (16 MiB, xqc_conn.h) as
    # max_stream_data_bidi_local (enable_stream_rate_limit off) and the connection
    # XQC_DEFAULT_MAX_STREAMS (1024) times that as max_data: the stream's window binds
    receive_window=float(XQC_MAX_RECV_WINDOW),
    # xqc_conn.c xqc_conn_try_add_new_conn_id (after handshake confirmation, for the next unused
    # path ID only), xqc_conn_get_available_path_id (an acknowledged connection ID), bindings/
    # create_paths on ready_to_create_path_notify, xqc_multipath.c xqc_path_init (PATH_CHALLENGE)
    # and xqc_path_validate on PATH_RESPONSE: two round trips of path 0, then one of the path's own
    path_setup="xquic",
    # the peer acknowledges the lone PATH_CHALLENGE packet after max_ack_delay (xqc_recv_record.c
    # xqc_maybe_should_ack: fewer than ack_frequency 2 ack-eliciting packets arm the ACK timer;
    # XQC_DEFAULT_MAX_ACK_DELAY 25 ms), and RFC 9002's first sample keeps it (live: 225 ms on a
    # 200 ms path), unless the path's first data, sent a round trip later, arrives before the
    # timer (a round trip under 25 ms: live 20.1 ms on a 20 ms path)
    path_sample_delay=0.025,
    # until then the path shows its send_ctl's initial values (xqc_send_ctl.c xqc_send_ctl_create:
    # ctl_srtt = initial_rtt, XQC_kInitialRtt_us 250000 in xqc_send_ctl.h; ctl_rttvar = srtt / 2;
    # ctl_latest_rtt = 0), which bindings/ hands the schedulers (a path without an RTT sample)
    unsampled_rtt=0.25,
    # scheduler/xqc_scheduler_common.c xqc_scheduler_check_path_can_send: only the window,
    # xqc_send_packet_cwnd_allows(send_ctl, packet_out, path->path_schedule_bytes, 0), i.e.
    # bytes_in_flight + path_schedule_bytes + packet <= cwnd (xqc_send_ctl.c xqc_send_ctl_can_send);
    # xqc_conn.c xqc_conn_schedule_packets_to_paths puts each packet, framed (stream offset fixed)
    # before it is scheduled, on its path's path_schedule_buf (xqc_multipath.c
    # xqc_path_send_buffer_append adds it to path_schedule_bytes), and xqc_path_send_packets sends
    # that buffer in order while xqc_send_packet_check_cc (window and xqc_pacing_can_write) allows,
    # leaving the rest there; only closing or freezing the path (xqc_path_immediate_close,
    # xqc_set_application_path_status) or a socket error (xqc_path_send_buffer_clear) takes it back
    path_buffer=True,
    packet_bytes=XQC_PAYLOAD,
    header_bytes=XQC_HEADER_BYTES,
    cc_mss_packets=XQC_MSS_PACKETS,
    # xqc_new_reno.c, xqc_cubic.c, xqc_bbr.c, xqc_bbr2.c; lia, olia, balia: the coupled rules on
    # XQUIC's NewReno, this repo's bindings/src/mps_coupled.c (the live `cc=lia|olia|balia`)
    ccs=("reno", "cubic", "bbr", "bbr2", "lia", "olia", "balia"),
    cc_defaults={
        # initial window: bindings/ sets cc_params.customize_on with init_cwnd 32 packets (mps_xquic.c
        # settings()), which xqc_new_reno.c xqc_reno_init, xqc_cubic.c xqc_cubic_init, xqc_bbr.c
        # xqc_bbr_init (its initial_congestion_window: also its target before a min RTT and its first
        # pacing rate, xqc_bbr_init_pacing_rate) and mps_coupled.c coupled_init (lia, olia, balia) take in place of RFC 9002's 10;
        # BBRv2 starts at its own XQC_BBR2_INITIAL_WINDOW, 32 packets, below. Every such window, and
        # every packet-counted constant below, is in XQC_MSS (the init_cwnd parameter times XQC_MSS;
        # mps_coupled.c CPL_MSS), the unit the CCs get as ``mss`` under this stack (cc_mss_packets).
        # xqc_new_reno.c: congestion avoidance adds XQC_kMaxDatagramSize (XQC_MSS) per window
        # acknowledged, a reduction leaves at least XQC_kMinimumWindow, 2 * XQC_MSS; persistent
        # congestion (xqc_send_ctl.c) calls xqc_reno_reset_cwnd (mps_coupled.c coupled_reset_cwnd):
        # cwnd to XQC_kMinimumWindow, ssthresh kept, the recovery epoch cleared
        "reno": {"init_cwnd_packets": 32.0, "min_cwnd": 2.0, "reset_cwnd": 1.0},
        "lia": {"init_cwnd_packets": 32.0, "reset_cwnd": 1.0}, "olia": {"init_cwnd_packets": 32.0, "reset_cwnd": 1.0},
        "balia": {"init_cwnd_packets": 32.0, "reset_cwnd": 1.0},
        # xqc_cubic.c: a reduction leaves at least XQC_CUBIC_MIN_WIN (4 * XQC_CUBIC_MSS); slow start
        # ends only on loss (xqc_cubic_on_ack: no delay test); the Reno estimate tcp_cwnd grows one
        # XQC_CUBIC_MSS per tcp_cwnd bytes acknowledged; W(t)'s C, XQC_CUBIC_C 410 / 1024, is per
        # XQC_CUBIC_MSS (delta *= XQC_CUBIC_MSS in xqc_cubic_update), which sets cwnd to the target,
        # at most acked / 2 above cwnd; xqc_cubic_reset_cwnd on persistent congestion (envs/cc/cubic.py)
        "cubic": {"min_cwnd": 4.0, "init_cwnd_packets": 32.0, "hystart": 0.0, "reno_alpha": 1.0,
                  "jump_to_target": 1.0},
        # xqc_bbr.c: xqc_bbr_high_gain 2.885, xqc_bbr_cwnd_gain 2.5, xqc_bbr_probertt_time_us 100000,
        # xqc_bbr_minrtt_win_size 10 s, xqc_bbr_fullbw_thresh 1.1, xqc_bbr_extra_ack_gain 2,
        # xqc_bbr_max_extra_ack_time 0.2 s, xqc_bbr2_extra_ack_in_startup 1 (used by xqc_bbr.c),
        # xqc_bbr_probe_rtt_cwnd: ProbeRTT holds max(min_cwnd, xqc_bbr_probe_rtt_gain 0.75 x BDP) at the
        # min_rtt just taken afresh (xqc_bbr_update_min_rtt), not tcp_bbr.c's 4 packets;
        # xqc_bbr_modulate_cwnd_for_recovery: packet conservation in an episode every loss extends
        # (xqc_bbr_on_lost refreshes recovery_start_time), the cut per lost packet "#if 0"'d;
        # xqc_bbr_update_lt_bw_sampling only with cc_params.bbr_enable_lt_bw, unset in bindings/;
        # xqc_bbr_target_cwnd: gain x BDP (at least min_cwnd), no quantization budget;
        # persistent congestion (xqc_send_ctl.c) calls xqc_bbr_reset_cwnd: cwnd to min_cwnd, recovery cancelled
        "bbr": {"high_gain": 2.885, "cwnd_gain": 2.5, "probe_rtt_s": 0.1, "rtprop_window_s": 10.0,
                "full_bw_thresh": 1.1, "extra_acked_gain": 2.0, "extra_acked_max_s": 0.2,
                "extra_acked_in_startup": 1.0, "conservation": 2.0, "loss_cwnd_cut": 0.0, "lt_bw": 0.0,
                "init_cwnd_packets": 32.0, "probe_rtt_cwnd_gain": 0.75, "cwnd_quanta_packets": 0.0,
                "reset_cwnd": 1.0},
        # xqc_bbr2.c: xqc_bbr2_high_gain 2.885, xqc_bbr2_cwnd_gain 2.0, xqc_bbr2_loss_thresh 0.02,
        # xqc_bbr2_inflight_lo_beta 0.3 (bounds keep 0.7), xqc_bbr2_inflight_headroom 0.15,
        # xqc_bbr2_probertt_time_us 200000, xqc_bbr2_probe_minrtt_win_size_us 2500000 (ProbeRTT
        # every 2.5 s), xqc_bbr2_minrtt_win_size_us 2500000, xqc_bbr2_bw_probe_base_us 2 s,
        # xqc_bbr2_extra_ack_gain 1, xqc_bbr2_max_extra_ack_time 0.1 s, xqc_bbr2_extra_ack_in_startup 1;
        # xqc_bbr2_is_inflight_too_high: lost_pkts > (uint32_t)(tx_in_flight / XQC_MSS * loss_thresh),
        # lost packets against XQC_MSS in flight (loss_thresh_packets: XQC_MSS_PACKETS packets to one);
        # xqc_bbr2_startup_cwnd_gain 2 (Startup and Drain), xqc_bbr2_drain_gain 0.75,
        # xqc_bbr2_probe_rtt_gain 0.75, no quantization budget in xqc_bbr2_set_cwnd,
        # XQC_BBR2_INITIAL_WINDOW 32 packets, and its RECOVERY / LOSS modes (xqc_bbr2_on_lost,
        # xqc_bbr2_update_recovery_mode, xqc_bbr2_reset_cwnd; envs/cc/bbr2.py)
        "bbr2": {"high_gain": 2.885, "cwnd_gain": 2.0, "loss_thresh": 0.02, "beta": 0.7, "headroom": 0.15,
                 "probe_rtt_s": 0.2, "probe_rtt_interval_s": 2.5, "probe_wait_base_s": 2.0,
                 "min_rtt_window_s": 2.5, "extra_acked_gain": 1.0, "extra_acked_max_s": 0.1,
                 "extra_acked_in_startup": 1.0, "loss_thresh_packets": XQC_MSS_PACKETS, "startup_cwnd_gain": 2.0,
                 "drain_gain": 0.75, "probe_rtt_cwnd_gain": 0.75, "cwnd_quanta_packets": 0.0,
                 "init_cwnd_packets": 32.0, "recovery_modes": 1.0},
    },
)

LINUX = StackProfile(
    name="linux",
    description="Linux TCP/MPTCP (RACK-TLP loss detection, DSACK undo)",
    rule="rack",  # net/ipv4/tcp_recovery.c tcp_rack_detect_loss (RFC 8985)
    # RACK marks a packet lost once a later-sent one is delivered and the window has passed; the
    # duplicate-ACK threshold (tcp_reordering, 3) only applies before any reordering was seen
    packet_threshold=1,
    time_threshold=0.0,
    # tcp_recovery.c tcp_rack_reo_wnd: min(min_rtt / 4 * reo_wnd_steps, srtt) once reordering
    # was seen (with jittery paths, from the first reordered packet on)
    reo_wnd=0.25,
    reo_wnd_adapt=True,  # tcp_rack_update_reo_wnd: +1 step per DSACK, at most once per round trip
    reo_wnd_persist=16,  # include/net/tcp.h TCP_RACK_RECOVERY_THRESH
    # tcp_input.c tcp_try_undo_dsack / tcp_try_undo_recovery (Eifel, timestamps on by default):
    # a reduction whose retransmissions all proved unnecessary is undone (tcp_undo_cwnd_reduction)
    undo=True,
    # reno and cubic do not ask for pacing (tcp_needs_internal_pacing: only when the CC sets
    # sk_pacing_status, as tcp_bbr.c does), so tcp_write_xmit sends what each ACK frees at once
    unpaced_trains=False,
    # tcp_input.c tcp_clean_rtx_queue times the oldest newly acknowledged segment not acknowledged
    # before by SACK (first_ackt; else sack->first_sackt), which reordering makes late, not early:
    # not modelled, the segments' own samples stand for it (docs/transport.md, "Reordering")
    rtt_from_largest=False,
    # MPTCP's options take precedence over SACK in the 40 bytes of TCP options (tcp_output.c
    # tcp_established_options): timestamps 12 (TCPOLEN_TSTAMP_ALIGNED) and the DSS option with its
    # 64-bit data ACK 12 (net/mptcp/options.c: TCPOLEN_MPTCP_DSS_BASE 4 + TCPOLEN_MPTCP_DSS_ACK64 8)
    # leave (16 - TCPOLEN_SACK_BASE_ALIGNED 4) / TCPOLEN_SACK_PERBLOCK 8 = 1 block; tcp_input.c
    # __tcp_ack_snd_check compresses SACKs by net.ipv4.tcp_comp_sack_delay_ns (1 ms), at most
    # the receiver's RTT / 20. Competing flows are plain TCP, whose ACKs carry three (kernel.py)
    one_sack_block=True,
    comp_sack_delay=0.001,
    comp_sack_rtt=0.05,
    # tcp_output.c tcp_pacing_check: a high-resolution timer to the next packet's own departure
    # time (tcp_wstamp_ns), one packet's time at the pacing rate
    pacer_delay=0.0,
    # tcp_input.c tcp_rtt_estimator / tcp_output.c __tcp_set_rto: rto = srtt + max(4 mdev,
    # tcp_rto_min); include/net/tcp.h TCP_RTO_MIN = HZ / 5 (200 ms)
    rto_mult=1.0,
    rto_var_floor=0.2,
    rto_ack_delay=0.0,
    rto_min=0.2,
    # net/mptcp/protocol.c mptcp_rcv_space_adjust (tcp_input.c tcp_rcv_space_adjust at the
    # connection level, with the largest subflow RTT) and mptcp_rcvbuf_grow: DRS, capped by
    # tcp_rmem[2] (net.ipv4.tcp_rmem, 6 MiB by default)
    window_rule="drs",
    receive_window=None,  # the live testbed sizes tcp_rmem from the scenario's (RFC 6182's) buffer
    # RFC 8684 sec. 3.2: net/mptcp/options.c check_fully_established (the first DSS ACK of data),
    # pm_kernel.c mptcp_pm_create_subflow_or_signal_addr (every subflow endpoint at once), and a
    # joining subflow waits for the fourth ACK: one round trip of path 0, then two of the path's own
    path_setup="mp_join",
    path_sample_delay=0.0,  # the SYN-ACK answers the MP_JOIN SYN at once (tcp_synack_rtt_meas)
    unsampled_rtt=None,
    # the simulator's rule as it was before XQUIC's path buffer was modelled: a paced subflow
    # without pacing credit is blocked (docs/transport.md, "The blocked decision")
    path_buffer=False,
    packet_bytes=LINUX_PAYLOAD,
    header_bytes=LINUX_HEADER_BYTES,
    cc_mss_packets=1.0,  # tcp_sock's snd_cwnd counts segments
    # tcp_cong.c reno, tcp_cubic.c, tcp_bbr.c; the coupled CCs are the multipath-tcp.org kernel's
    # (mptcp_coupled.c, mptcp_olia.c, mptcp_balia.c, mptcp_wvegas.c) that MPTCP-TUT and KATO ran
    ccs=("reno", "cubic", "bbr", "lia", "olia", "balia", "wvegas"),
    cc_defaults={
        # tcp_bbr.c: bbr_high_gain BBR_UNIT * 2885 / 1000 + 1, bbr_cwnd_gain BBR_UNIT * 2,
        # bbr_probe_rtt_mode_ms 200, bbr_min_rtt_win_sec 10, bbr_full_bw_thresh BBR_UNIT * 5 / 4,
        # bbr_extra_acked_gain BBR_UNIT, bbr_extra_acked_max_us 100 ms, used once bbr_full_bw_reached;
        # bbr_set_cwnd_to_recover_or_restore (packet conservation, cwnd -= rs->losses) and
        # bbr_lt_bw_sampling, always on
        "bbr": {"high_gain": 2.885, "cwnd_gain": 2.0, "probe_rtt_s": 0.2, "rtprop_window_s": 10.0,
                "full_bw_thresh": 1.25, "extra_acked_gain": 1.0, "extra_acked_max_s": 0.1,
                "extra_acked_in_startup": 0.0, "conservation": 1.0, "loss_cwnd_cut": 1.0, "lt_bw": 1.0},
        # mptcp_coupled.c, mptcp_olia.c, mptcp_balia.c step snd_cwnd_cnt once per ACK (envs/cc/coupled.py
        # counted); a Linux receiver ACKs every second full segment (tcp_input.c __tcp_ack_snd_check)
        "lia": {"segments_per_ack": 2.0}, "olia": {"segments_per_ack": 2.0}, "balia": {"segments_per_ack": 2.0},
    },
)

PROFILES: dict[str, StackProfile] = {p.name: p for p in (XQUIC, LINUX)}
STACKS = tuple(PROFILES)
BUILTIN_CCS = frozenset(cc for p in PROFILES.values() for cc in p.ccs)
# the live backend each stack is measured on, and back (evaluate.py compare=[sim,live])
LIVE_BACKEND = {"xquic": "xquic", "linux": "mptcp"}
BACKEND_STACK = {backend: stack for stack, backend in LIVE_BACKEND.items()}


def profile(name: str) -> StackProfile:
    """The profile of stack ``name``; an unknown name lists the valid ones."""
    if name not in PROFILES:
        raise unknown_name("stack", name, STACKS)
    return PROFILES[name]


def check_ccs(stack: str, ccs: Iterable[str]) -> None:
    """Refuse a CC the stack does not have (bbr2 on Linux), listing the ones it has."""
    prof = profile(stack)
    for cc in ccs:
        if not prof.offers(cc):
            others = "; ".join(f"stack={p.name} has {', '.join(p.ccs)}" for p in PROFILES.values() if p is not prof)
            raise ConfigError(f"cc {cc!r} is not in stack {stack!r}; valid: {', '.join(prof.ccs)} ({others})")


def stack_vector(prof: StackProfile, packet: float | None = None) -> np.ndarray:
    """The profile as the core reads it (``kernel.Constants.stack``, columns ``STK_*``), for a flow
    whose packet is ``packet`` payload bytes (None: the stack's, ``packet_bytes``)."""
    v = np.zeros(N_STK)
    v[STK_PKT_THRESHOLD] = prof.packet_threshold
    v[STK_TIME_THRESHOLD] = prof.time_threshold
    v[STK_REO_WND] = prof.reo_wnd
    v[STK_REO_ADAPT] = float(prof.reo_wnd_adapt)
    v[STK_REO_PERSIST] = prof.reo_wnd_persist
    v[STK_UNDO] = float(prof.undo)
    v[STK_TRAINS] = float(prof.unpaced_trains)
    v[STK_RTT_LARGEST] = float(prof.rtt_from_largest)
    v[STK_ONE_SACK] = float(prof.one_sack_block)
    v[STK_COMP_SACK_DELAY] = prof.comp_sack_delay
    v[STK_COMP_SACK_RTT] = prof.comp_sack_rtt
    v[STK_PACER_DELAY] = prof.pacer_delay
    v[STK_RTO_MULT] = prof.rto_mult
    v[STK_RTO_VAR_FLOOR] = prof.rto_var_floor
    v[STK_RTO_ACK_DELAY] = prof.rto_ack_delay
    v[STK_RTO_MIN] = prof.rto_min
    v[STK_RULE] = RULES.index(prof.rule)
    v[STK_WINDOW_DRS] = float(WINDOW_RULES.index(prof.window_rule))
    v[STK_PATH_BUFFER] = float(prof.path_buffer)
    v[STK_CC_MSS] = prof.cc_mss_packets
    v[STK_PACKET] = prof.packet_bytes if packet is None else packet
    return v


def path_open_steps(rule: str, rtt: Sequence[float] | np.ndarray) -> np.ndarray:
    """The step at which each path may first carry data under path-setup ``rule`` (one of
    PATH_SETUPS), from the paths' round trips ``rtt`` (steps; each path's handshake sample, as
    ``kernel.reset_connection`` gives it). Time zero is the end of the handshake on path 0, where
    a simulated episode and the live runs start; path 0 is open from it.

    ``xquic`` (XQUIC d67938db705c as ``bindings/`` drives it): the client's handshake is confirmed
    when the server's HANDSHAKE_DONE arrives, one round trip after the client finished, with the
    server's MP_NEW_CONNECTION_ID frames; only then does the client issue its own
    (``xqc_conn.c`` ``xqc_conn_try_add_new_conn_id`` needs ``xqc_conn_is_handshake_confirmed``), and a
    path ID is available once one of them is acknowledged, a second round trip
    (``xqc_conn_get_available_path_id``: an unused DCID and an acknowledged unused SCID). Then
    ``ready_to_create_path_notify`` makes ``bindings/`` create the path, whose ``xqc_path_init``
    sends PATH_CHALLENGE; the path is ACTIVE, and offered to the scheduler, when PATH_RESPONSE
    returns one round trip of its own later (``xqc_frame.c`` ``xqc_process_path_response_frame``,
    ``xqc_multipath.c`` ``xqc_path_validate``). Connection IDs are issued for the next unused path
    ID only, so path k + 1 waits for path k: the client issues its IDs once it created path k, and
    they are acknowledged one round trip of the fastest path then open later; the server issues
    its own once the PATH_CHALLENGE created path k there, half a round trip of path k later, and
    they reach the client half a round trip of that fastest path after that.

    ``mp_join`` (Linux MPTCP, RFC 8684 sec. 3.2): the client's connection is fully established when
    the first ACK of its data returns with a DSS option, one round trip of path 0
    (``net/mptcp/options.c`` ``check_fully_established``); the in-kernel path manager then opens a
    subflow from every ``subflow`` endpoint at once (``net/mptcp/pm_kernel.c``
    ``mptcp_pm_create_subflow_or_signal_addr``), and a joining subflow sends data only after the
    fourth ACK, two round trips of its own (SYN / SYN-ACK, then the third ACK with MP_JOIN's HMAC
    and its ACK; ``options.c``: "MP_JOIN client subflow must wait for 4th ack before sending any
    data")."""
    if rule not in PATH_SETUPS:
        raise unknown_name("path setup", rule, PATH_SETUPS)
    r = np.asarray(rtt, dtype=float)
    opens = np.zeros(len(r))
    if rule == "mp_join":
        opens[1:] = r[0] + 2.0 * r[1:]
        return opens
    created = 2.0 * r[0]
    for k in range(1, len(r)):
        opens[k] = created + r[k]
        carrier = min(r[j] for j in range(k) if opens[j] <= created)
        created += max(carrier, (r[k] + carrier) / 2.0)
    return opens


def cc_overrides(stack: str | StackProfile, cc: str, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """The parameter overrides of CC ``cc`` under ``stack`` (a name or a profile): the stack's
    constants, then the user's."""
    prof = profile(stack) if isinstance(stack, str) else stack
    return {**prof.cc_defaults.get(cc, {}), **(overrides or {})}
