// Python bindings of one multipath XQUIC transfer (mps_xquic.h) and of the C scheduler rules.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <arpa/inet.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "mps_xquic.h"

namespace py = pybind11;

static const char *MODES[] = {"minrtt", "backup", "rap", "rr", "ecf", "blest", "hsr", "lws", "lts", "kato", "wait_rule",
                               "policy"};
static const char *CCS[] = {"reno", "cubic", "bbr", "bbr2", "lia", "olia", "balia"};

template <size_t N>
static int index_of(const char *const (&names)[N], const std::string &name, const char *what) {
    for (size_t i = 0; i < N; ++i)
        if (name == names[i]) return static_cast<int>(i);
    std::string valid;
    for (size_t i = 0; i < N; ++i) valid += (i ? ", " : "") + std::string(names[i]);
    throw py::value_error("unknown " + std::string(what) + " '" + name + "'; valid: " + valid);
}

static sockaddr_in to_addr(const py::tuple &a) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(a[1].cast<uint16_t>());
    if (inet_pton(AF_INET, a[0].cast<std::string>().c_str(), &s.sin_addr) != 1)
        throw py::value_error("not an IPv4 address: " + a[0].cast<std::string>());
    return s;
}

static py::dict records(const std::vector<mps_record> &r, int n_paths) {
    size_t n = r.size();
    py::array_t<double> t(n);
    py::array_t<int32_t> mode(n), chosen(n);
    py::array_t<uint64_t> dec(n);
    py::array_t<uint64_t> obs({n, (size_t)n_paths, (size_t)MPS_N_OBS});
    py::array_t<uint64_t> cobs({n, (size_t)MPS_N_COBS});
    py::array_t<bool> active({n, (size_t)n_paths});
    py::array_t<uint64_t> cc_bw({n, (size_t)n_paths});
    auto T = t.mutable_unchecked<1>();
    auto M = mode.mutable_unchecked<1>();
    auto C = chosen.mutable_unchecked<1>();
    auto D = dec.mutable_unchecked<1>();
    auto O = obs.mutable_unchecked<3>();
    auto CO = cobs.mutable_unchecked<2>();
    auto A = active.mutable_unchecked<2>();
    auto B = cc_bw.mutable_unchecked<2>();
    for (size_t i = 0; i < n; ++i) {
        T(i) = r[i].t;
        M(i) = r[i].mode;
        C(i) = r[i].chosen;
        D(i) = r[i].decisions;
        for (int p = 0; p < n_paths; ++p) {
            A(i, p) = r[i].active[p] != 0;
            B(i, p) = r[i].cc_bw[p];
            for (int k = 0; k < MPS_N_OBS; ++k) O(i, p, k) = r[i].obs[p][k];
        }
        for (int k = 0; k < MPS_N_COBS; ++k) CO(i, k) = r[i].cobs[k];
    }
    py::dict d;
    d["t"] = t; d["mode"] = mode; d["chosen"] = chosen; d["decisions"] = dec;
    d["obs"] = obs; d["cobs"] = cobs; d["active"] = active; d["cc_bw"] = cc_bw;
    return d;
}

class Transfer {
  public:
    Transfer(std::vector<int> client_fds, std::vector<py::tuple> client_addrs, int server_fd, py::tuple server_addr,
             uint64_t size_bytes, const std::string &cc, const std::string &scheduler, py::object policy_lib,
             const std::string &cert_file, const std::string &key_file, double time_limit_s, double ecf_beta,
             double blest_lambda_step, uint32_t decision_every, double interval_ms, uint32_t ring_capacity,
             int pacing, double blest_lambda, double blest_lambda_max, double kato_alpha, double wait_k, uint64_t seed,
             bool revalidate_paths, uint32_t drop_new_path_datagrams, std::vector<std::string> policy_modes,
             double policy_interval_ms) {
        if (client_fds.empty() || client_fds.size() > MPS_MAX_PATHS || client_fds.size() != client_addrs.size())
            throw py::value_error("one client socket and address per path, 1 to 8 paths");
        mps_config c{};
        c.n_paths = static_cast<int>(client_fds.size());
        for (int i = 0; i < c.n_paths; ++i) {
            c.client_fds[i] = client_fds[i];
            c.client_addrs[i] = to_addr(client_addrs[i]);
        }
        c.server_fd = server_fd;
        c.server_addr = to_addr(server_addr);
        c.size_bytes = size_bytes;
        c.time_limit_s = time_limit_s;
        c.cc = index_of(CCS, cc, "XQUIC congestion control");
        c.mode = index_of(MODES, scheduler, "XQUIC scheduler");
        c.pacing = pacing;
        std::string lib = policy_lib.is_none() ? "" : policy_lib.cast<std::string>();
        if (c.mode == MPS_POLICY && lib.empty()) throw py::value_error("scheduler 'policy' needs policy_lib");
        c.policy_lib = lib.empty() ? nullptr : lib.c_str();
        if (policy_modes.size() > MPS_MAX_POLICY_MODES)
            throw py::value_error("an interval policy has at most " + std::to_string(MPS_MAX_POLICY_MODES) + " modes");
        c.n_policy_modes = static_cast<int>(policy_modes.size());
        for (int i = 0; i < c.n_policy_modes; ++i) {
            c.policy_modes[i] = index_of(MODES, policy_modes[i], "interval policy mode");
            if (c.policy_modes[i] == MPS_POLICY) throw py::value_error("an interval policy's mode cannot be 'policy'");
        }
        if (c.n_policy_modes && !(policy_interval_ms > 0))
            throw py::value_error("policy_interval_ms must be > 0 for an interval policy");
        c.policy_interval_ms = policy_interval_ms;
        c.cert_file = cert_file.c_str();
        c.key_file = key_file.c_str();
        c.ecf_beta = ecf_beta;
        c.blest_lambda = blest_lambda;
        c.blest_lambda_step = blest_lambda_step;
        c.blest_lambda_max = blest_lambda_max;
        c.kato_alpha = kato_alpha;
        c.wait_k = wait_k;
        c.seed = seed;
        c.decision_every = decision_every;
        c.interval_ms = interval_ms;
        c.ring_capacity = ring_capacity;
        c.revalidate_paths = revalidate_paths ? 1 : 0;
        c.drop_new_path_datagrams = drop_new_path_datagrams;
        n_paths_ = c.n_paths;
        char err[512] = {0};
        t_ = mps_create(&c, err, sizeof err);
        if (!t_) throw std::runtime_error(std::string("XQUIC: ") + err);
    }
    ~Transfer() { mps_destroy(t_); }

    bool run() {
        int rc;
        {
            py::gil_scoped_release release;
            rc = mps_run(t_);
        }
        return rc == 0;
    }
    void stop() { mps_stop(t_); }
    void set_mode(const std::string &m) { mps_set_mode(t_, index_of(MODES, m, "XQUIC scheduler")); }
    bool started() { return mps_started(t_) != 0; }
    double elapsed() { return mps_elapsed(t_); }

    py::dict read(const std::string &which) {
        int w = which == "intervals" ? 0 : which == "decisions" ? 1 : -1;
        if (w < 0) throw py::value_error("read('intervals') or read('decisions')");
        std::vector<mps_record> out;
        std::vector<mps_record> buf(1024);
        uint64_t lost = 0;
        for (;;) {
            uint64_t dropped = 0;
            int n = mps_read(t_, w, buf.data(), static_cast<int>(buf.size()), &dropped);
            lost += dropped;
            out.insert(out.end(), buf.begin(), buf.begin() + n);
            if (n < static_cast<int>(buf.size())) break;
        }
        py::dict d = records(out, n_paths_);
        d["dropped"] = lost;  // records the ring overwrote before this read
        return d;
    }

    py::dict result() {
        mps_result r;
        mps_get_result(t_, &r);
        auto vec = [&](const uint64_t *v) {
            py::list l;
            for (int i = 0; i < n_paths_; ++i) l.append(v[i]);
            return l;
        };
        py::dict d;
        d["finished"] = r.finished != 0;
        d["ooo_abort"] = r.ooo_abort != 0;
        d["timed_out"] = r.timed_out != 0;
        d["stalled"] = r.stalled != 0;
        d["completion_s"] = r.completion_s;
        d["handshake_s"] = r.handshake_s;
        d["delivered"] = r.delivered;
        d["path_sent"] = vec(r.path_sent);
        d["path_recv"] = vec(r.path_recv);
        d["path_acked"] = vec(r.path_acked);
        d["lost_pkts"] = r.lost_pkts;
        d["sent_pkts"] = r.sent_pkts;
        d["decisions"] = r.decisions;
        d["policy_errors"] = r.policy_errors;
        d["paths_created"] = r.paths_created + 1;
        d["policy_ns"] = r.policy_ns;
        py::list intervals;  // an interval policy's decisions per mode index
        for (int i = 0; i < MPS_MAX_POLICY_MODES; ++i) intervals.append(r.policy_intervals[i]);
        d["policy_intervals"] = intervals;
        d["client_errno"] = r.client_errno;
        d["server_errno"] = r.server_errno;
        d["path_error"] = r.path_error;
        d["cids_counted"] = r.cids_counted;
        d["loss_timers_rearmed"] = r.loss_timers_rearmed;
        d["sends_resumed"] = r.sends_resumed;
        d["challenges_resent"] = r.challenges_resent;
        d["recv_reads"] = py::make_tuple(r.recv_reads[0], r.recv_reads[1]);  // client, server
        d["recv_datagrams"] = py::make_tuple(r.recv_datagrams[0], r.recv_datagrams[1]);
        py::list states, created, validated;
        for (int i = 0; i < n_paths_; ++i) {
            states.append(py::make_tuple(r.path_state[0][i], r.path_state[1][i]));
            created.append(r.path_created_s[i]);
            validated.append(r.path_validated_s[i]);
        }
        d["path_state"] = states;  // per path: (client, server) XQUIC path state, -1: none
        d["path_created_s"] = created;
        d["path_validated_s"] = validated;
        d["errors"] = std::string(r.errors);
        d["close_report"] = py::make_tuple(std::string(r.close_report[0]), std::string(r.close_report[1]));
        return d;
    }

  private:
    mps_transfer *t_ = nullptr;
    int n_paths_ = 0;
};

class Rules {
  public:
    Rules(double ecf_beta, double blest_lambda_step, double blest_lambda, double blest_lambda_max, double kato_alpha,
          double wait_k, uint64_t seed) {
        mps_rule_init(&s_, ecf_beta, blest_lambda, blest_lambda_step, blest_lambda_max, kato_alpha, wait_k, seed);
    }
    int pick(const std::string &mode, py::array_t<uint64_t, py::array::c_style | py::array::forcecast> obs,
             py::array_t<uint64_t, py::array::c_style | py::array::forcecast> cobs, uint64_t mss) {
        int m = index_of(MODES, mode, "rule");
        if (m == MPS_BACKUP || m == MPS_RAP || m == MPS_POLICY)
            throw py::value_error("C rules: minrtt, rr, ecf, blest, hsr, lws, lts, kato, wait_rule");
        if (obs.ndim() != 2 || obs.shape(1) != MPS_N_OBS || obs.shape(0) < 1 || obs.shape(0) > MPS_MAX_PATHS ||
            cobs.size() != MPS_N_COBS)
            throw py::value_error("obs [P, " + std::to_string(MPS_N_OBS) + "] (1-8 paths) and cobs [" + std::to_string(MPS_N_COBS) + "] in transport units");
        return mps_rule_pick(&s_, m, static_cast<int>(obs.shape(0)),
                             reinterpret_cast<const uint64_t(*)[MPS_N_OBS]>(obs.data()), cobs.data(), mss);
    }
    double blest_lambda() const { return s_.blest_lambda; }
    bool ecf_waiting() const { return s_.ecf_waiting != 0; }

  private:
    mps_rule_state s_{};
};

// The coupled CCs' rules (mps_coupled.c) on given windows, RTTs and (OLIA) loss intervals, for tests
static int coupled_paths(const std::vector<double> &cwnd, const std::vector<double> &srtt_us, int i) {
    if (cwnd.empty() || cwnd.size() > MPS_MAX_PATHS || cwnd.size() != srtt_us.size())
        throw py::value_error("one window and one srtt per path, 1 to 8 paths");
    if (i < 0 || i >= static_cast<int>(cwnd.size()))
        throw py::value_error("path index i must be in 0.." + std::to_string(cwnd.size() - 1));
    return static_cast<int>(cwnd.size());
}

static double lia_increase(const std::vector<double> &cwnd, const std::vector<double> &srtt_us, int i, double acked,
                           double mss) {
    return mps_lia_increase(coupled_paths(cwnd, srtt_us, i), cwnd.data(), srtt_us.data(), i, acked, mss);
}

static double olia_increase(const std::vector<double> &cwnd, const std::vector<double> &srtt_us,
                            const std::vector<double> &loss_bytes, int i, double acked, double mss) {
    int n = coupled_paths(cwnd, srtt_us, i);
    if (loss_bytes.size() != cwnd.size()) throw py::value_error("one loss interval per path");
    return mps_olia_increase(n, cwnd.data(), srtt_us.data(), loss_bytes.data(), i, acked, mss);
}

static double balia_increase(const std::vector<double> &cwnd, const std::vector<double> &srtt_us, int i, double acked,
                             double mss) {
    return mps_balia_increase(coupled_paths(cwnd, srtt_us, i), cwnd.data(), srtt_us.data(), i, acked, mss);
}

static double balia_alpha(const std::vector<double> &cwnd, const std::vector<double> &srtt_us, int i) {
    return mps_balia_alpha(coupled_paths(cwnd, srtt_us, i), cwnd.data(), srtt_us.data(), i);
}

PYBIND11_MODULE(mpsched_xquic, m) {
    m.doc() = "Multipath XQUIC transfers with the workbench's schedulers inside XQUIC";
    py::list modes, ccs;
    for (auto s : MODES) modes.append(s);
    for (auto s : CCS) ccs.append(s);
    m.attr("MODES") = py::tuple(modes);
    m.attr("CCS") = py::tuple(ccs);
    m.attr("OBS_NAMES") = MPS_OBS_NAMES;
    m.attr("COBS_NAMES") = MPS_COBS_NAMES;
    m.attr("BACKLOG") = MPS_BACKLOG;
    m.attr("RESUMES_STUCK_SEND") = true;  /* the event loop's resume_stuck_send (mps_xquic.c) */
    m.attr("REVALIDATES_PATHS") = true;  /* the event loop's revalidate_paths (mps_xquic.c) */
    m.attr("INTERVAL_POLICIES") = true;  /* policy_modes: an exported interval policy (mps_xquic.c, interval_decide) */
    m.attr("MAX_PATHS") = MPS_MAX_PATHS;
    m.attr("XQUIC_COMMIT") = MPS_XQUIC_COMMIT;
    py::class_<Transfer>(m, "Transfer")
        .def(py::init<std::vector<int>, std::vector<py::tuple>, int, py::tuple, uint64_t, const std::string &,
                      const std::string &, py::object, const std::string &, const std::string &, double, double,
                      double, uint32_t, double, uint32_t, int, double, double, double, double, uint64_t, bool, uint32_t,
                      std::vector<std::string>, double>(),
             py::arg("client_fds"), py::arg("client_addrs"), py::arg("server_fd"), py::arg("server_addr"),
             py::arg("size_bytes"), py::arg("cc"), py::arg("scheduler") = "minrtt", py::arg("policy_lib") = py::none(),
             py::arg("cert_file"), py::arg("key_file"), py::arg("time_limit_s") = 600.0, py::arg("ecf_beta") = 0.25,
             py::arg("blest_lambda_step") = 0.1, py::arg("decision_every") = 0, py::arg("interval_ms") = 0.0,
             py::arg("ring_capacity") = 4096, py::arg("pacing") = -1, py::arg("blest_lambda") = 1.0,
             py::arg("blest_lambda_max") = 1.3, py::arg("kato_alpha") = 0.5, py::arg("wait_k") = 1.0,
             py::arg("seed") = 0, py::arg("revalidate_paths") = true, py::arg("drop_new_path_datagrams") = 0,
             py::arg("policy_modes") = std::vector<std::string>{}, py::arg("policy_interval_ms") = 0.0)
        .def("run", &Transfer::run, "Run the event loop until the file is delivered, stop() or the time limit")
        .def("stop", &Transfer::stop)
        .def("set_mode", &Transfer::set_mode)
        .def_property_readonly("started", &Transfer::started)
        .def_property_readonly("elapsed", &Transfer::elapsed)
        .def("read", &Transfer::read, py::arg("which") = "intervals")
        .def("result", &Transfer::result);
    py::class_<Rules>(m, "Rules")
        .def(py::init<double, double, double, double, double, double, uint64_t>(), py::arg("ecf_beta") = 0.25,
             py::arg("blest_lambda_step") = 0.1, py::arg("blest_lambda") = 1.0, py::arg("blest_lambda_max") = 1.3,
             py::arg("kato_alpha") = 0.5, py::arg("wait_k") = 1.0, py::arg("seed") = 0)
        .def("pick", &Rules::pick, py::arg("mode"), py::arg("obs"), py::arg("cobs"), py::arg("mss") = 1200)
        .def_property_readonly("blest_lambda", &Rules::blest_lambda)
        .def_property_readonly("ecf_waiting", &Rules::ecf_waiting);
    m.def("lia_increase", &lia_increase, py::arg("cwnd"), py::arg("srtt_us"), py::arg("i"), py::arg("acked"),
          py::arg("mss") = 1200.0,
          "LIA's window increase (bytes) of path i for acked bytes in congestion avoidance (RFC 6356, section 3)");
    m.def("olia_increase", &olia_increase, py::arg("cwnd"), py::arg("srtt_us"), py::arg("loss_bytes"), py::arg("i"),
          py::arg("acked"), py::arg("mss") = 1200.0,
          "OLIA's window change (bytes) of path i for acked bytes in congestion avoidance (Khalili et al. 2012)");
    m.def("balia_increase", &balia_increase, py::arg("cwnd"), py::arg("srtt_us"), py::arg("i"), py::arg("acked"),
          py::arg("mss") = 1200.0,
          "BALIA's window increase (bytes) of path i for acked bytes in congestion avoidance (Peng et al. 2016)");
    m.def("balia_alpha", &balia_alpha, py::arg("cwnd"), py::arg("srtt_us"), py::arg("i"),
          "BALIA's alpha_i = max_r x_r / x_i (x = cwnd / srtt), which sets its increase and decrease");
}
