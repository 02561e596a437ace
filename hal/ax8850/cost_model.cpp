#include "hal/ax8850/cost_model.h"

#include <algorithm>
#include <cmath>

namespace laya::hal::ax8850 {
namespace {

uint64_t pad(int64_t v, int m) {
  const int64_t mm = std::max(1, m);
  return static_cast<uint64_t>((std::max<int64_t>(v, 0) + mm - 1) / mm * mm);
}

uint64_t u(int64_t v) {
  return static_cast<uint64_t>(std::max<int64_t>(v, 0));
}

bool present(const ir::Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != ir::kNoValue;
}

// Bytes of a weight's elements [0, count) of dtype d (i8 1, bf16 / f16 2, f32 4, blocks).
uint64_t weight_bytes(const ir::Value& w, int64_t count) {
  Result<uint64_t> b = ir::dtype_bytes(w.dtype, count);
  return b.is_ok() ? *b : 0;
}

}  // namespace

uint64_t kv_write_bytes(const ir::Graph& g, const ir::Node& n, const ir::Extents* ext) {
  return weight_bytes(g.values[n.inputs[0]], ext[n.inputs[1]].count());
}

uint64_t device_bytes(const ir::Graph& g, ir::ValueId v, const ir::Extents& e) {
  const uint64_t n = u(e.count());
  const ir::Value& val = g.values[v];
  if (val.dtype == ir::DType::kI32) return 4 * n;
  if (ir::aliased_state(g, v) != ir::kNoValue) return weight_bytes(val, e.count());
  return 2 * n;
}

OpCost npu_op_cost(const Params& p, const ir::Graph& g, const ir::Node& n, const ir::Extents* ext,
                   Part part, const OpContext& ctx) {
  OpCost c;
  c.unit = op_rule(n.op).unit;
  const int rg = std::max(1, ctx.resource_groups);
  // Activation bytes read for input slot i (0 when resident or a weight), times num / den (the
  // part's share of a split node).
  auto in_bytes = [&](size_t i, int64_t num = 1, int64_t den = 1) -> uint64_t {
    if (!present(n, i)) return 0;
    const ir::ValueId id = n.inputs[i];
    const ir::Value& v = g.values[id];
    if (v.kind == ir::ValueKind::kWeight) return 0;
    if ((ctx.resident_inputs >> i) & 1u) return 0;
    return device_bytes(g, id, ext[id]) * u(num) / std::max<uint64_t>(1, u(den));
  };
  auto out_bytes = [&](int64_t num = 1, int64_t den = 1) -> uint64_t {
    if (ctx.output_resident) return 0;
    uint64_t b = 0;
    for (ir::ValueId o : n.outputs) b += device_bytes(g, o, ext[o]);
    return b * u(num) / std::max<uint64_t>(1, u(den));
  };
  auto param_bytes = [&](size_t i) -> uint64_t {
    if (!present(n, i)) return 0;
    const ir::Value& v = g.values[n.inputs[i]];
    return v.kind == ir::ValueKind::kWeight ? v.nbytes : 0;
  };
  bool bf16_rate = true;
  uint64_t dram = 0;
  switch (n.op) {
    case ir::Op::kMatMul: {
      const ir::Value& w = g.values[n.inputs[1]];
      const int64_t rows_n = w.shape.dims[0].c, k = w.shape.dims[1].c;
      const int64_t n0 = part.whole() ? 0 : part.begin, n1 = part.whole() ? rows_n : part.end;
      const int64_t np = n1 - n0;
      const int64_t m = ext[n.inputs[0]].rows();
      c.macs = pad(m, p.tile_m) * pad(np, p.tile_n) * pad(k, p.tile_k);
      uint64_t wb = weight_bytes(w, np * k);
      if (w.dtype == ir::DType::kI8) wb += 4 * u(np);  // scales
      if (present(n, 2)) wb += 4 * u(np);              // bias
      const uint64_t x_full = 2 * u(m) * u(k);
      dram = wb + in_bytes(0) + out_bytes(np, rows_n);
      const uint64_t avail = static_cast<uint64_t>(rg) * p.ocm_bytes / 2;
      if (avail > 0 && std::min(wb, x_full) > avail) {
        const uint64_t tiles_w = (wb + avail - 1) / avail, tiles_x = (x_full + avail - 1) / avail;
        c.spill_bytes = std::min(x_full * (tiles_w - 1), wb * (tiles_x - 1));
        dram += c.spill_bytes;
      }
      bf16_rate = ctx.bf16 || w.dtype != ir::DType::kI8;
      break;
    }
    case ir::Op::kAttention: {
      const ir::Extents &q = ext[n.inputs[0]], &k = ext[n.inputs[1]];
      const int64_t heads = n.attrs.n_heads, kv_heads = n.attrs.n_kv_heads;
      const int64_t h0 = part.whole() ? 0 : part.begin, h1 = part.whole() ? heads : part.end;
      const int64_t hq = h1 - h0;
      const int64_t group = kv_heads > 0 ? heads / kv_heads : 1;
      const int64_t kv_part = std::max<int64_t>(1, (hq + group - 1) / group);
      const int64_t b = q.d[0], s = q.d[1], t = k.d[1];
      c.macs =
          u(b) * u(hq) * 2 * pad(s, p.tile_m) * pad(t, p.tile_n) * pad(n.attrs.head_dim, p.tile_k);
      c.vector_elems = u(b) * u(hq) * u(s) * u(t);
      dram = in_bytes(0, hq, heads) + in_bytes(1, kv_part, kv_heads) +
             in_bytes(2, kv_part, kv_heads) + out_bytes(hq, heads);
      for (size_t i = 3; i < n.inputs.size(); ++i)
        dram += in_bytes(i);  // masks, positions, seq ids
      break;
    }
    case ir::Op::kEmbedding: {
      const ir::Value& t = g.values[n.inputs[0]];
      const int64_t ids = ext[n.inputs[1]].count(), d = t.shape.dims[1].c;
      dram = weight_bytes(t, ids * d) + in_bytes(1) + out_bytes();
      break;
    }
    case ir::Op::kSplit:
      c.vector_elems = u(ext[n.inputs[0]].count());
      dram = in_bytes(0) + out_bytes();
      break;
    case ir::Op::kKvWrite:  // SDMA: the rows read and written into their cells, not the cache
      dram = in_bytes(1) + in_bytes(2) + kv_write_bytes(g, n, ext);
      break;
    default: {
      for (ir::ValueId o : n.outputs) c.vector_elems += u(ext[o].count());
      for (size_t i = 0; i < n.inputs.size(); ++i) dram += in_bytes(i) + param_bytes(i);
      dram += out_bytes();
      break;
    }
  }
  dram += ctx.extra_dram_bytes;
  c.dram_bytes = dram;
  const double mac_rate = static_cast<double>(rg) * p.mac_per_s_per_group(bf16_rate);
  const double vec_rate = static_cast<double>(rg) * p.vector_elems_per_s_per_group();
  c.compute_ms = 0;
  if (c.macs > 0 && mac_rate > 0) c.compute_ms += static_cast<double>(c.macs) / mac_rate * 1e3;
  if (c.vector_elems > 0 && vec_rate > 0)
    c.compute_ms += static_cast<double>(c.vector_elems) / vec_rate * 1e3;
  const double bw = p.dram_bytes_per_s() * std::clamp(ctx.bw_share, 1e-3, 1.0);
  c.dma_ms = bw > 0 ? static_cast<double>(dram) / bw * 1e3 : 0;
  c.overhead_ms = p.op_overhead_ms();
  c.modelled_ms = c.overhead_ms + std::max(c.compute_ms, c.dma_ms);
  return c;
}

double host_op_ms(const Params& p, const ir::Graph& g, const ir::Node& n, const ir::Extents* ext) {
  double flops = 0, bytes = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!present(n, i)) continue;
    const ir::Value& v = g.values[n.inputs[i]];
    bytes += v.kind == ir::ValueKind::kWeight ? static_cast<double>(v.nbytes)
                                              : 4.0 * static_cast<double>(ext[n.inputs[i]].count());
  }
  double out = 0;
  for (ir::ValueId o : n.outputs) out += static_cast<double>(ext[o].count());
  bytes += 4.0 * out;
  switch (n.op) {
    case ir::Op::kMatMul: {
      const ir::Value& w = g.values[n.inputs[1]];
      flops = 2.0 * static_cast<double>(ext[n.inputs[0]].rows()) *
              static_cast<double>(w.shape.dims[0].c) * static_cast<double>(w.shape.dims[1].c);
      break;
    }
    case ir::Op::kAttention: {
      const ir::Extents &q = ext[n.inputs[0]], &k = ext[n.inputs[1]];
      flops = 4.0 * static_cast<double>(q.d[0]) * n.attrs.n_heads * static_cast<double>(q.d[1]) *
              static_cast<double>(k.d[1]) * n.attrs.head_dim;
      break;
    }
    case ir::Op::kEmbedding:
      bytes -= static_cast<double>(g.values[n.inputs[0]].nbytes);  // only the gathered rows
      bytes += 4.0 * out;
      break;
    default:
      flops = 5.0 * out;
      break;
  }
  return flops / (p.host_gflops * 1e9) * 1e3 + bytes / (p.host_gbs * 1e9) * 1e3 +
         p.host_op_us / 1e3;
}

Result<CallTiming> model_call(const Params& p, const ir::Graph& g, std::span<const Step> steps,
                              const ir::Extents* ext, bool bf16,
                              std::span<const uint8_t> on_device) {
  const std::vector<int> sizes = p.group_sizes();
  const int ng = static_cast<int>(sizes.size());
  const size_t nv = g.values.size(), nn = g.nodes.size();
  std::vector<uint8_t> in_call(nn, 0);
  std::vector<int> parts_left(nn, 0), parts_total(nn, 0);
  for (const Step& s : steps) {
    if (s.node >= nn)
      return status_error(StatusCode::kInvalidArgument, "ax8850 call: node %u out of range",
                          s.node);
    if (s.group >= ng)
      return status_error(StatusCode::kInvalidArgument,
                          "ax8850 call: node %u on group %d, the %s mode has %d", s.node, s.group,
                          vnpu_mode_name(p.vnpu), ng);
    const ir::Node& n = g.nodes[s.node];
    if (!s.part.whole()) {
      int64_t limit = 0;
      if (n.op == ir::Op::kAttention) limit = n.attrs.n_heads;
      if (n.op == ir::Op::kMatMul) limit = g.values[n.inputs[1]].shape.dims[0].c;
      if (limit == 0 || s.part.begin < 0 || s.part.end > limit || s.part.begin >= s.part.end)
        return status_error(StatusCode::kInvalidArgument,
                            "ax8850 call: part [%lld, %lld) of %s '%s' is not a valid split",
                            static_cast<long long>(s.part.begin),
                            static_cast<long long>(s.part.end), ir::op_name(n.op), n.name.c_str());
    }
    in_call[s.node] = 1;
    ++parts_left[s.node];
    ++parts_total[s.node];
  }
  auto device_node = [&](ir::NodeId id) {
    return on_device.empty() ? in_call[id] != 0 : (id < on_device.size() && on_device[id] != 0);
  };
  // Consumers of each value: inside the call, elsewhere on the device, on the host.
  std::vector<uint8_t> read_outside(nv, 0), read_by_host(nv, 0);
  for (ir::NodeId id = 0; id < nn; ++id)
    for (ir::ValueId v : g.nodes[id].inputs) {
      if (v == ir::kNoValue) continue;
      if (!in_call[id]) read_outside[v] = 1;
      if (!device_node(id)) read_by_host[v] = 1;
    }
  for (ir::ValueId v : g.outputs) read_outside[v] = read_by_host[v] = 1;

  CallTiming ct;
  ct.group_busy_ms.assign(static_cast<size_t>(ng), 0.0);
  std::vector<double> clock(static_cast<size_t>(ng), 0.0);
  std::vector<std::vector<std::pair<double, double>>> busy(static_cast<size_t>(ng));
  std::vector<double> ready(nv, 0.0);
  std::vector<int> holder(nv, -1);  // group whose OCM holds the value, -1: DRAM
  std::vector<double> split_end(nn, 0.0);
  std::vector<uint8_t> seen_in(nv, 0);  // call inputs already counted for the link
  auto ocm_avail = [&](int grp) {
    return static_cast<uint64_t>(sizes[static_cast<size_t>(grp)]) * p.ocm_bytes / 2;
  };

  for (const Step& s : steps) {
    const ir::Node& n = g.nodes[s.node];
    double inputs_ready = 0;
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue) inputs_ready = std::max(inputs_ready, ready[v]);
    int grp = s.group;
    if (grp < 0) {  // the group free first; ties: the one holding the most inputs, then the lowest
      double best = 0;
      int best_held = -1;
      for (int h = 0; h < ng; ++h) {
        const double t = std::max(clock[static_cast<size_t>(h)], inputs_ready);
        int held = 0;
        for (ir::ValueId v : n.inputs)
          if (v != ir::kNoValue && holder[v] == h) ++held;
        if (grp < 0 || t < best - 1e-12 || (std::abs(t - best) <= 1e-12 && held > best_held)) {
          grp = h;
          best = t;
          best_held = held;
        }
      }
    }
    const size_t gi = static_cast<size_t>(grp);
    const double start = std::max(clock[gi], inputs_ready);
    int concurrent = 0;
    for (int h = 0; h < ng; ++h) {
      if (h == grp) continue;
      for (const auto& [b, e] : busy[static_cast<size_t>(h)])
        if (b <= start + 1e-12 && e > start + 1e-12) {
          ++concurrent;
          break;
        }
    }
    // The parts of a split node start together and share the bandwidth from the start.
    if (!s.part.whole()) concurrent = std::max(concurrent, parts_total[s.node] - 1);
    OpContext ctx;
    ctx.resource_groups = sizes[gi];
    ctx.bw_share = 1.0 / (1.0 + concurrent);
    ctx.bf16 = bf16;
    for (size_t i = 0; i < n.inputs.size() && i < 32; ++i) {
      const ir::ValueId v = n.inputs[i];
      if (v == ir::kNoValue) continue;
      const ir::Value& val = g.values[v];
      if (holder[v] == grp) {
        ctx.resident_inputs |= 1u << i;
      } else if (holder[v] >= 0) {
        ctx.extra_dram_bytes += device_bytes(g, v, ext[v]);  // the other group writes it back
      }
      const bool from_host = val.kind == ir::ValueKind::kInput ||
                             (val.kind == ir::ValueKind::kActivation &&
                              val.producer != ir::kNoNode && !device_node(val.producer));
      if (from_host && !seen_in[v]) {
        seen_in[v] = 1;
        ct.h2d_bytes += device_bytes(g, v, ext[v]);
      }
    }
    bool small = true, inside = true;
    for (ir::ValueId o : n.outputs) {
      small = small && device_bytes(g, o, ext[o]) <= ocm_avail(grp);
      inside = inside && !read_outside[o];
    }
    // A KV cache (kv_write's output) lives in DRAM, never in a group's OCM.
    ctx.output_resident = s.part.whole() && small && inside && n.op != ir::Op::kKvWrite;
    StepTiming st;
    st.cost = npu_op_cost(p, g, n, ext, s.part, ctx);
    st.start_ms = start;
    st.group = grp;
    const double end = start + st.cost.modelled_ms;
    clock[gi] = end;
    busy[gi].emplace_back(start, end);
    ct.group_busy_ms[gi] += st.cost.modelled_ms;
    ct.makespan_ms = std::max(ct.makespan_ms, end);
    const bool last_part = --parts_left[s.node] == 0;
    if (s.part.whole()) {
      for (ir::ValueId o : n.outputs) {
        ready[o] = end;
        holder[o] = ctx.output_resident ? grp : -1;
      }
    } else {
      split_end[s.node] = std::max(split_end[s.node], end);
      if (last_part)
        for (ir::ValueId o : n.outputs) {
          ready[o] = split_end[s.node] + p.group_sync_us / 1e3;
          holder[o] = -1;
          ct.makespan_ms = std::max(ct.makespan_ms, ready[o]);
        }
    }
    if (n.op == ir::Op::kKvWrite) {
      // The cache stays on the device; the rows written go through to the host's copy too
      // (hal.h "States"), whoever reads it.
      if (p.host == Host::kPcie) ct.d2h_bytes += kv_write_bytes(g, n, ext);
    } else if (last_part) {
      for (ir::ValueId o : n.outputs)
        if (read_by_host[o]) ct.d2h_bytes += device_bytes(g, o, ext[o]);
    }
    ct.steps.push_back(st);
  }
  ct.overhead_ms = p.call_overhead_ms();
  if (p.host == Host::kPcie) {
    ct.overhead_ms += p.pcie_round_trip_us / 1e3 +
                      static_cast<double>(ct.h2d_bytes + ct.d2h_bytes) / (p.pcie_gbs * 1e9) * 1e3;
  } else {
    ct.h2d_bytes = ct.d2h_bytes = 0;  // shared DRAM: nothing crosses a link
  }
  ct.total_ms = ct.overhead_ms + ct.makespan_ms;
  return ct;
}

}  // namespace laya::hal::ax8850
