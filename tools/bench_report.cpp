// Tables, JSON and plots of `qcoll bench`; see bench_report.hpp.
#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cli_error.hpp"

namespace qcoll::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// JSON has no NaN: nlohmann writes null, and null reads back as NaN.
double num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return kNaN;
  return it->get<double>();
}
std::vector<double> nums(const nlohmann::json& j, const char* key) {
  std::vector<double> v;
  auto it = j.find(key);
  if (it != j.end() && it->is_array())
    for (const auto& e : *it) v.push_back(e.is_null() ? kNaN : e.get<double>());
  return v;
}

const char* kLegacyFp32 = "mpi-fp32";
const char* kLegacyBf16 = "mpi-bf16";

double peer_s(const BenchRow& r, const char* name) {
  const PeerTime* p = r.peer(name);
  return p ? p->s : kNaN;
}

nlohmann::json row_json(const BenchRow& r) {
  nlohmann::json j;
  j["op"] = r.op;
  j["bs"] = r.bs;
  j["h"] = r.h;
  j["n"] = r.n;
  j["transport"] = r.transport;
  j["mode"] = r.mode;
  j["input"] = r.input;
  j["qcoll_path"] = r.qcoll_path;
  j["out_dtype"] = r.out_dtype;
  j["label"] = r.label;
  j["link_bits_per_s"] = r.link_bits_per_s;
  j["qcoll_s"] = r.qcoll_s;
  j["qcoll_samples"] = r.qcoll_samples;
  j["quant_s"] = r.quant_s;
  j["qcoll_rel_err"] = r.qcoll_rel_err;
  j["peers"] = nlohmann::json::array();
  for (const PeerTime& p : r.peers)
    j["peers"].push_back(
        {{"name", p.name}, {"input", p.input}, {"s", p.s}, {"samples", p.samples}, {"rel_err", p.rel_err}});
  // The MPI peers under the names of earlier versions (null where not measured).
  const PeerTime* f = r.peer(kLegacyFp32);
  const PeerTime* b = r.peer(kLegacyBf16);
  j["fp32_s"] = f ? f->s : kNaN;
  j["bf16_s"] = b ? b->s : kNaN;
  j["fp32_samples"] = f ? f->samples : std::vector<double>{};
  j["bf16_samples"] = b ? b->samples : std::vector<double>{};
  j["bf16_rel_err"] = b ? b->rel_err : kNaN;
  j["logical_bytes"] = r.logical_bytes;
  j["wire_bytes_qcoll"] = r.wire_qcoll;
  j["wire_bytes_fp32"] = r.wire_fp32;
  j["wire_bytes_bf16"] = r.wire_bf16;
  // Derived, for readers of the file (ignored when read back).
  const PeerTime* fastest = r.fastest_peer();
  j["fastest_peer"] = fastest ? nlohmann::json(fastest->name) : nlohmann::json(nullptr);
  j["speedup_vs_fastest_peer"] = r.speedup(fastest);
  j["speedup_vs"] = nlohmann::json::object();
  for (const PeerTime& p : r.peers) j["speedup_vs"][p.name] = r.speedup(&p);
  j["speedup_vs_fp32"] = r.speedup(f);
  j["speedup_vs_bf16"] = r.speedup(b);
  j["logical_gb_per_s"] = r.logical_bytes / r.qcoll_s / 1e9;
  j["ps_per_logical_byte"] = r.qcoll_s / r.logical_bytes * 1e12;
  if (r.link_bits_per_s > 0) {
    j["qcoll_over_wire_bound"] = r.over_bound(r.qcoll_s, r.wire_qcoll);
    for (const PeerTime& p : r.peers) j["over_wire_bound"][p.name] = r.over_bound(p.s, r.wire(p));
    j["fp32_over_wire_bound"] = r.over_bound(peer_s(r, kLegacyFp32), r.wire_fp32);
    j["bf16_over_wire_bound"] = r.over_bound(peer_s(r, kLegacyBf16), r.wire_bf16);
  }
  return j;
}

BenchRow row_from_json(const nlohmann::json& j) {
  BenchRow r;
  r.op = j.at("op").get<std::string>();
  r.bs = j.at("bs").get<int64_t>();
  r.h = j.at("h").get<int64_t>();
  r.n = j.at("n").get<int>();
  r.transport = j.value("transport", "");
  r.mode = j.at("mode").get<std::string>();
  r.input = j.value("input", "quantized");
  r.qcoll_path = j.value("qcoll_path", "operator");
  r.out_dtype = j.value("out_dtype", "");
  r.label = j.value("label", "");
  r.link_bits_per_s = j.value("link_bits_per_s", 0.0);
  r.qcoll_s = num(j, "qcoll_s");
  r.qcoll_samples = nums(j, "qcoll_samples");
  r.quant_s = num(j, "quant_s");
  r.qcoll_rel_err = num(j, "qcoll_rel_err");
  if (j.contains("peers")) {
    for (const auto& p : j.at("peers"))
      r.peers.push_back({p.at("name").get<std::string>(), p.at("input").get<std::string>(), num(p, "s"),
                         nums(p, "samples"), num(p, "rel_err")});
  } else {  // earlier versions: the MPI peers only
    if (std::isfinite(num(j, "fp32_s")))
      r.peers.push_back({kLegacyFp32, "fp32", num(j, "fp32_s"), nums(j, "fp32_samples"), 0.0});
    if (std::isfinite(num(j, "bf16_s")))
      r.peers.push_back({kLegacyBf16, "bf16", num(j, "bf16_s"), nums(j, "bf16_samples"), num(j, "bf16_rel_err")});
  }
  r.logical_bytes = num(j, "logical_bytes");
  r.wire_qcoll = num(j, "wire_bytes_qcoll");
  r.wire_fp32 = num(j, "wire_bytes_fp32");
  r.wire_bf16 = num(j, "wire_bytes_bf16");
  return r;
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

const PeerTime* BenchRow::peer(const std::string& name) const {
  for (const PeerTime& p : peers)
    if (p.name == name) return &p;
  return nullptr;
}

const PeerTime* BenchRow::fastest_peer() const {
  const PeerTime* best = nullptr;
  for (const PeerTime& p : peers) {
    if (input != "quantized" && p.input != input) continue;
    if (std::isfinite(p.s) && (best == nullptr || p.s < best->s)) best = &p;
  }
  return best;
}

double BenchRow::speedup(const PeerTime* p) const { return p ? p->s / qcoll_s : kNaN; }

double BenchRow::over_bound(double t, double wire) const {
  if (!(link_bits_per_s > 0) || !(wire > 0)) return kNaN;
  return t / (wire * 8.0 / link_bits_per_s);
}

nlohmann::json to_json(const BenchRun& run) {
  nlohmann::json j;
  j["format"] = "qcoll-bench-1";
  j["meta"] = run.meta;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : run.rows) j["rows"].push_back(row_json(r));
  return j;
}

std::vector<BenchRun> runs_from_json(const nlohmann::json& j, const std::string& path) {
  std::vector<BenchRun> runs;
  try {
    if (j.contains("runs")) {
      for (const auto& r : j.at("runs")) {
        auto sub = runs_from_json(r, path);
        runs.insert(runs.end(), sub.begin(), sub.end());
      }
      return runs;
    }
    if (j.value("format", "") != "qcoll-bench-1")
      throw CliError(ErrorKind::File, path + ": not a qcoll bench result (expected \"format\": \"qcoll-bench-1\")");
    BenchRun run;
    run.meta = j.value("meta", nlohmann::json::object());
    for (const auto& r : j.at("rows")) run.rows.push_back(row_from_json(r));
    runs.push_back(std::move(run));
  } catch (const nlohmann::json::exception& e) {
    throw CliError(ErrorKind::File, path + ": malformed qcoll bench result: " + e.what());
  }
  return runs;
}

nlohmann::json merged_json(const std::vector<BenchRun>& runs) {
  if (runs.size() == 1) return to_json(runs.front());
  nlohmann::json j;
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) j["runs"].push_back(to_json(r));
  return j;
}

// The names of the peers in any row, in the order first seen, and whether each reduces bf16.
std::vector<std::pair<std::string, bool>> peer_columns(const std::vector<BenchRow>& rows) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& r : rows)
    for (const PeerTime& p : r.peers)
      if (std::none_of(out.begin(), out.end(), [&](const auto& c) { return c.first == p.name; }))
        out.emplace_back(p.name, p.input == "bf16");
  return out;
}

namespace {

// The columns of a markdown table: the peers (name, measured from bf16), a run label column,
// and the columns against the link's bound (shaped links).
struct TableColumns {
  std::vector<std::pair<std::string, bool>> peers;
  bool labels = false;
  bool shaped = false;
};

std::string markdown_header(const TableColumns& c) {
  std::ostringstream o, rule;
  o << "| op | BS x H | n | transport |" << (c.labels ? " run |" : "") << " mode | input | qcoll ms |";
  rule << "|---|---|---|---|" << (c.labels ? "---|" : "") << "---|---|---:|";
  for (const auto& [name, bf16] : c.peers) {
    o << " " << name << " ms |";
    rule << "---:|";
  }
  if (!c.peers.empty()) {
    o << " fastest peer | x fastest |";
    rule << "---|---:|";
  }
  o << " GB/s | ps/B | quant ms |";
  rule << "---:|---:|---:|";
  if (!c.peers.empty()) {
    o << " err qcoll |";
    rule << "---:|";
    for (const auto& [name, bf16] : c.peers)
      if (bf16) {
        o << " err " << name << " |";
        rule << "---:|";
      }
  }
  if (c.shaped) {
    o << " qcoll/bound |";
    rule << "---:|";
    for (const auto& [name, bf16] : c.peers) {
      o << " " << name << "/bound |";
      rule << "---:|";
    }
  }
  o << "\n" << rule.str() << "\n";
  return o.str();
}

// The error and bound columns of one row.
void markdown_row_tail(std::ostringstream& o, const BenchRow& r, const TableColumns& c) {
  if (!c.peers.empty()) {
    o << " " << fmt("%.2e", r.qcoll_rel_err) << " |";
    for (const auto& pc : c.peers)
      if (pc.second) {
        const PeerTime* p = r.peer(pc.first);
        o << " " << fmt("%.2e", p ? p->rel_err : kNaN) << " |";
      }
  }
  if (c.shaped) {
    o << " " << fmt("%.2f", r.over_bound(r.qcoll_s, r.wire_qcoll)) << " |";
    for (const auto& pc : c.peers) {
      const PeerTime* p = r.peer(pc.first);
      o << " " << fmt("%.2f", p ? r.over_bound(p->s, r.wire(*p)) : kNaN) << " |";
    }
  }
}

std::string markdown_row(const BenchRow& r, const TableColumns& c) {
  std::ostringstream o;
  o << "| " << r.op << " | " << r.bs << " x " << r.h << " | " << r.n << " | " << r.transport << " | ";
  if (c.labels) o << r.label << " | ";
  o << r.mode << " | " << r.input << " | " << fmt("%.3f", r.qcoll_s * 1e3) << " |";
  for (const auto& pc : c.peers) {
    const PeerTime* p = r.peer(pc.first);
    o << " " << fmt("%.3f", p ? p->s * 1e3 : kNaN) << " |";
  }
  if (!c.peers.empty()) {
    const PeerTime* f = r.fastest_peer();
    o << " " << (f ? f->name : "-") << " | " << fmt("%.2f", r.speedup(f)) << " |";
  }
  o << " " << fmt("%.2f", r.logical_bytes / r.qcoll_s / 1e9) << " | " << fmt("%.1f", r.qcoll_s / r.logical_bytes * 1e12)
    << " | " << fmt("%.3f", r.quant_s * 1e3) << " |";
  markdown_row_tail(o, r, c);
  o << "\n";
  return o.str();
}

// Series: (op, mode, input, n, label) -> points (MiB, speedup vs the fastest peer, GB/s).
using SeriesKey = std::tuple<std::string, std::string, std::string, int, std::string>;
using SeriesIndex = std::vector<std::pair<SeriesKey, int>>;  // gnuplot data block of each series

// Writes the data file, one gnuplot block per series; returns the blocks and the modes.
SeriesIndex write_plot_data(const std::vector<BenchRow>& rows, const std::string& dat, std::set<std::string>& modes) {
  std::map<SeriesKey, std::vector<const BenchRow*>> series;
  for (const auto& r : rows) series[{r.op, r.mode, r.input, r.n, r.label}].push_back(&r);
  std::ofstream d(dat);
  if (!d) throw CliError(ErrorKind::File, dat + ": cannot write");
  d << "# MiB_per_rank speedup_vs_fastest_peer logical_GB/s BS H\n";
  SeriesIndex index;
  int block = 0;
  for (auto& [key, pts] : series) {
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->logical_bytes < b->logical_bytes; });
    d << "# " << std::get<0>(key) << " " << std::get<1>(key) << " " << std::get<2>(key) << " n=" << std::get<3>(key)
      << " " << std::get<4>(key) << "\n";
    for (const BenchRow* p : pts)
      d << p->logical_bytes / 1048576.0 << " " << fmt("%.4f", p->speedup(p->fastest_peer())) << " "
        << fmt("%.4f", p->logical_bytes / p->qcoll_s / 1e9) << " " << p->bs << " " << p->h << "\n";
    d << "\n\n";
    index.emplace_back(key, block++);
    modes.insert(std::get<1>(key));
  }
  return index;
}

// The plot clause of one series.
std::string series_plot(const SeriesKey& key, int blk, const std::string& dat, int column, int color) {
  const int n = std::get<3>(key);
  const std::string& input = std::get<2>(key);
  return "'" + dat + "' index " + std::to_string(blk) + " using 1:" + std::to_string(column) + " with linespoints lc " +
         std::to_string(color) + " pt " +
         std::to_string(n == 2   ? 5
                        : n == 4 ? 7
                        : n == 8 ? 9
                                 : 1) +
         " dt " +
         std::to_string(input == "quantized" ? 1
                        : input == "bf16"    ? 2
                                             : 3) +
         " title '" + std::get<1>(key) + (input == "quantized" ? "" : " from " + input) + " n=" + std::to_string(n) +
         (std::get<4>(key).empty() ? "" : " " + std::get<4>(key)) + "'";
}

// One panel of the plot: the series of `op`.
void plot_panel(std::ofstream& g, const char* op, bool have_peers, const SeriesIndex& index, const std::string& dat,
                std::map<std::string, int>& mode_color) {
  if (have_peers)
    g << "set title '" << op << ": vs the fastest peer'\nset ylabel 'speedup'\n";
  else
    g << "set title '" << op << "'\nset ylabel 'GB/s of fp32 logical data'\n";
  const int column = have_peers ? 2 : 3;
  std::string plot;
  for (const auto& [key, blk] : index) {
    if (std::get<0>(key) != op) continue;
    if (!plot.empty()) plot += ", \\\n  ";
    plot += series_plot(key, blk, dat, column, mode_color[std::get<1>(key)]);
  }
  if (plot.empty())
    g << "set key off\nplot 1 title 'no data'\nset key on\n";
  else
    g << "plot " << plot << (have_peers ? ", 1 with lines lc 'black' dt 2 notitle" : "") << "\n";
}

}  // namespace

std::string markdown_table(const std::vector<BenchRow>& rows) {
  TableColumns c;
  c.peers = peer_columns(rows);
  c.shaped = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.link_bits_per_s > 0; });
  c.labels = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return !r.label.empty(); });
  std::string out = markdown_header(c);
  for (const auto& r : rows) out += markdown_row(r, c);
  return out;
}

void plot_speedup(const std::vector<BenchRow>& rows, const std::string& png) {
  const std::string dat = png + ".dat", gp = png + ".gp";
  std::set<std::string> modes;
  const SeriesIndex index = write_plot_data(rows, dat, modes);
  std::map<std::string, int> mode_color;
  for (const auto& m : modes) mode_color[m] = static_cast<int>(mode_color.size()) + 1;
  std::ofstream g(gp);
  if (!g) throw CliError(ErrorKind::File, gp + ": cannot write");
  g << "set terminal pngcairo size 1600,700 noenhanced font ',10'\n"
    << "set output '" << png << "'\n"
    << "set datafile missing '-'\n"
    << "set logscale x 2\nset logscale y 2\nset grid\nset key outside right top font ',8'\n"
    << "set xlabel 'message size: fp32 logical input per rank (MiB)'\n";
  // Without peers (thread ranks) there is no speedup: plot qcoll's logical GB/s instead.
  const bool have_peers = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.fastest_peer(); });
  if (have_peers)
    g << "set multiplot layout 1,2 title 'qcoll speedup over the fastest peer of each row (peer time / qcoll "
         "time; >1: qcoll faster)'\n";
  else
    g << "set multiplot layout 1,2 title 'qcoll throughput (peers not measured: thread ranks)'\n";
  for (const char* op : {"reduce-scatter", "all-reduce"}) plot_panel(g, op, have_peers, index, dat, mode_color);
  g << "unset multiplot\n";
  g.close();
  const std::string cmd = "gnuplot '" + gp + "' 2>&1";
  if (std::system(cmd.c_str()) != 0)
    throw CliError(ErrorKind::File, png + ": gnuplot failed (is gnuplot-nox installed? script: " + gp + ")");
}

}  // namespace qcoll::cli
