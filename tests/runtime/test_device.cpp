// runtime/device.h: sessions of one model on one device share packed weights (the cache counts
// them), get the device's threads, and run at once from several threads with the results of a
// session alone.
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/device.h"
#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

using runtime::Device;
using runtime::DeviceOptions;
using runtime::WeightCacheStats;

// The cores this process may use (the cap the device applies).
int cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  return CPU_COUNT(&set);
}

std::shared_ptr<Device> make_device(int threads, bool share) {
  DeviceOptions o;
  o.n_threads = threads;
  o.share_weights = share;
  auto d = Device::create(o);
  REQUIRE_MESSAGE(d.is_ok(), d.status().to_string());
  return *d;
}

// A tiny encoder with q4_0 matmul weights (packing rearranges them: a real pack, not a copy).
ir::Graph model(uint64_t seed, ir::DType dtype = ir::DType::kQ4_0) {
  tools::TinyModelConfig cfg;
  cfg.matmul_dtype = dtype;
  auto g = tools::make_tiny_encoder(cfg, seed);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return *g;
}

runtime::SessionOptions options(const std::shared_ptr<Device>& dev,
                                const std::string& kernels = "auto", int threads = 0) {
  runtime::SessionOptions o = cpu_options(kernels, threads);
  o.device = dev;
  return o;
}

// Distinct matmul weights of a graph: the entries one session of it puts in the cache.
uint64_t matmul_weights(const ir::Graph& g) {
  std::vector<ir::ValueId> seen;
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::Op::kMatMul && std::find(seen.begin(), seen.end(), n.inputs[1]) == seen.end())
      seen.push_back(n.inputs[1]);
  return seen.size();
}

// The bytes the cpu backend copies into persistent: each norm weight, 64-byte rounded
// (hal/cpu/README.md, "Norm weights").
uint64_t norm_weight_bytes(const ir::Graph& g) {
  uint64_t bytes = 0;
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::Op::kRmsNorm || n.op == ir::Op::kLayerNorm)
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (n.inputs[i] != ir::kNoValue && g.values[n.inputs[i]].kind == ir::ValueKind::kWeight)
          bytes += (g.values[n.inputs[i]].nbytes + 63) / 64 * 64;
  return bytes;
}

std::vector<float> run(TinyRun& r, const TinyInputs& in) {
  std::vector<float> out;
  Status st = run_tiny(r, in, &out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return out;
}

TEST_CASE("device: two live sessions of one model share packed weights; the last one frees them") {
  const ir::Graph g = model(1);
  const uint64_t n_weights = matmul_weights(g);
  REQUIRE(n_weights > 0);
  const TinyInputs in = tiny_inputs(2, 9, 101, 2);

  // The reference: one session on a device that does not share, packing into its own region.
  auto solo_dev = make_device(0, false);
  TinyRun solo = make_run(g, options(solo_dev));
  CHECK(solo.session->requirements().shared_bytes == 0);
  CHECK(solo.session->requirements().persistent_bytes > 0);
  CHECK(solo_dev->weight_stats().entries == 0);
  const std::vector<float> want = run(solo, in);

  auto dev = make_device(0, true);
  auto a = std::make_unique<TinyRun>(make_run(g, options(dev)));
  const runtime::MemoryRequirements& req = a->session->requirements();
  // Every packed weight is in the cache; persistent holds the copied norm weights alone.
  REQUIRE(norm_weight_bytes(g) > 0);
  CHECK(req.persistent_bytes == norm_weight_bytes(g));
  CHECK(req.shared_bytes >= solo.session->requirements().persistent_bytes / 2);
  WeightCacheStats st = dev->weight_stats();
  CHECK(st.entries == n_weights);
  CHECK(st.misses == n_weights);
  CHECK(st.hits == 0);
  CHECK(st.references == n_weights);
  CHECK(st.bytes == req.shared_bytes);
  const uint64_t bytes_one = st.bytes;

  auto b = std::make_unique<TinyRun>(make_run(g, options(dev)));
  st = dev->weight_stats();
  CHECK(st.entries == n_weights);  // nothing packed again ...
  CHECK(st.misses == n_weights);
  CHECK(st.hits == n_weights);   // ... every weight found
  CHECK(st.bytes == bytes_one);  // and no memory added
  CHECK(st.references == 2 * n_weights);

  CHECK(run(*a, in) == want);
  CHECK(run(*b, in) == want);

  // A rebind takes the same entries again (no packing, no new bytes).
  {
    Status s =
        a->session->bind_memory(a->buffers.persistent.region(), a->buffers.activations.region(),
                                a->buffers.scratch.region());
    REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    st = dev->weight_stats();
    CHECK(st.references == 2 * n_weights);
    CHECK(st.misses == n_weights);
    CHECK(st.bytes == bytes_one);
    CHECK(run(*a, in) == want);
  }

  a.reset();
  st = dev->weight_stats();
  CHECK(st.entries == n_weights);  // b still holds them
  CHECK(st.references == n_weights);
  CHECK(run(*b, in) == want);
  // The only holder rebinds: it keeps its entries (nothing freed and packed again).
  Status rebind = b->session->bind_memory(
      b->buffers.persistent.region(), b->buffers.activations.region(), b->buffers.scratch.region());
  REQUIRE_MESSAGE(rebind.is_ok(), rebind.to_string());
  st = dev->weight_stats();
  CHECK(st.misses == n_weights);
  CHECK(st.references == n_weights);
  CHECK(run(*b, in) == want);
  b.reset();
  st = dev->weight_stats();
  CHECK(st.entries == 0);
  CHECK(st.bytes == 0);
  CHECK(st.references == 0);
}

TEST_CASE("device: other models, dtypes and kernel targets do not share") {
  auto dev = make_device(0, true);
  const ir::Graph g1 = model(1), g2 = model(2), g1_q8 = model(1, ir::DType::kQ8_0);
  const ir::Graph g1_again = model(1);  // the same weights made again: other bytes, no sharing
  const TinyInputs in = tiny_inputs(1, 7, 101);
  TinyRun r1 = make_run(g1, options(dev));
  const uint64_t n = matmul_weights(g1);
  TinyRun r2 = make_run(g2, options(dev));
  TinyRun r3 = make_run(g1_q8, options(dev));
  TinyRun r4 = make_run(g1_again, options(dev));
  TinyRun r5 = make_run(g1, options(dev, "ref"));  // the same weights, packed by another table
  WeightCacheStats st = dev->weight_stats();
  CHECK(st.hits == 0);
  CHECK(st.misses == 5 * n);
  CHECK(st.entries == 5 * n);
  // Each still computes its own model: equal to a session of it on a device that does not share.
  auto solo_dev = make_device(0, false);
  for (auto [r, g, kernels] : {std::tuple{&r1, &g1, "auto"}, std::tuple{&r2, &g2, "auto"},
                               std::tuple{&r3, &g1_q8, "auto"}, std::tuple{&r5, &g1, "ref"}}) {
    TinyRun solo = make_run(*g, options(solo_dev, kernels));
    CHECK(run(*r, in) == run(solo, in));
  }
  CHECK(run(r4, in) == run(r1, in));
}

TEST_CASE("device: sessions get the device's threads and run at once from two threads") {
  const int n = cores();
  auto dev = make_device(0, true);
  CHECK(dev->n_threads() == n);
  CHECK(dev->arena_threads() == n);
  const ir::Graph g = model(3);
  TinyRun a = make_run(g, options(dev));
  TinyRun b = make_run(g, options(dev));
  // Both sessions' CPU backends split work for every thread of the device (before the device, the
  // second session's arena had no worker and fell back to one thread).
  CHECK(a.session->backend("cpu")->capabilities().n_groups == static_cast<uint32_t>(n));
  CHECK(b.session->backend("cpu")->capabilities().n_groups == static_cast<uint32_t>(n));
  // The arena's workers run (bind_memory waited for them once), for whichever session posts a job.
  CHECK(dev->arena_workers_running() == n - 1);

  const TinyInputs in_a = tiny_inputs(2, 17, 101, 3, 1), in_b = tiny_inputs(1, 29, 101, 0, 2);
  const std::vector<float> want_a = run(a, in_a), want_b = run(b, in_b);
  constexpr int kRounds = 40;
  std::vector<float> out_a, out_b;
  int bad_a = 0, bad_b = 0;
  Status err_a, err_b;
  std::thread ta([&] {
    for (int i = 0; i < kRounds; ++i) {
      Status s = run_tiny(a, in_a, &out_a);
      if (!s.is_ok()) err_a = s;
      bad_a += out_a != want_a;
    }
  });
  std::thread tb([&] {
    for (int i = 0; i < kRounds; ++i) {
      Status s = run_tiny(b, in_b, &out_b);
      if (!s.is_ok()) err_b = s;
      bad_b += out_b != want_b;
    }
  });
  ta.join();
  tb.join();
  CHECK_MESSAGE(err_a.is_ok(), err_a.to_string());
  CHECK_MESSAGE(err_b.is_ok(), err_b.to_string());
  CHECK(bad_a == 0);
  CHECK(bad_b == 0);
}

TEST_CASE("device: two sessions binding the same model at once pack each weight once") {
  auto dev = make_device(0, true);
  const ir::Graph g = model(4);
  const uint64_t n = matmul_weights(g);
  auto pa = runtime::Session::prepare(g, options(dev));
  auto pb = runtime::Session::prepare(g, options(dev));
  REQUIRE(pa.is_ok());
  REQUIRE(pb.is_ok());
  auto ba = runtime::session_buffers_alloc(**pa);
  auto bb = runtime::session_buffers_alloc(**pb);
  REQUIRE(ba.is_ok());
  REQUIRE(bb.is_ok());
  Status sa, sb;
  std::thread ta([&] {
    sa =
        (*pa)->bind_memory(ba->persistent.region(), ba->activations.region(), ba->scratch.region());
  });
  std::thread tb([&] {
    sb =
        (*pb)->bind_memory(bb->persistent.region(), bb->activations.region(), bb->scratch.region());
  });
  ta.join();
  tb.join();
  REQUIRE_MESSAGE(sa.is_ok(), sa.to_string());
  REQUIRE_MESSAGE(sb.is_ok(), sb.to_string());
  const WeightCacheStats st = dev->weight_stats();
  CHECK(st.misses == n);
  CHECK(st.hits == n);
  CHECK(st.entries == n);
  CHECK(st.references == 2 * n);
  const TinyInputs in = tiny_inputs(1, 5, 101);
  std::vector<float> oa, ob;
  REQUIRE(run_tiny(**pa, in, &oa).is_ok());
  REQUIRE(run_tiny(**pb, in, &ob).is_ok());
  CHECK(oa == ob);
}

TEST_CASE("device: threads are capped at the cores and at the device's count") {
  const int n = cores();
  CHECK(make_device(1000, true)->n_threads() == n);
  CHECK(make_device(1, true)->n_threads() == 1);
  CHECK(Device::create(DeviceOptions{-1, true}).status().code() == StatusCode::kInvalidArgument);
  const ir::Graph g = model(5);
  // A session asking more threads than the device has gets the device's; fewer, its own count.
  auto one = make_device(1, true);
  auto s = runtime::Session::prepare(g, options(one, "auto", 8));
  REQUIRE(s.is_ok());
  CHECK((*s)->backend("cpu")->capabilities().n_groups == 1);
  auto all = make_device(0, true);
  s = runtime::Session::prepare(g, options(all, "auto", 1000));
  REQUIRE(s.is_ok());
  CHECK((*s)->backend("cpu")->capabilities().n_groups == static_cast<uint32_t>(n));
  s = runtime::Session::prepare(g, options(all, "auto", 1));
  REQUIRE(s.is_ok());
  CHECK((*s)->backend("cpu")->capabilities().n_groups == 1);
}

TEST_CASE("device: a session without one uses the process default") {
  const ir::Graph g = model(6);
  runtime::SessionOptions o = cpu_options("auto", 0);
  auto s1 = runtime::Session::prepare(g, o);
  auto s2 = runtime::Session::prepare(g, o);
  REQUIRE(s1.is_ok());
  REQUIRE(s2.is_ok());
  CHECK(&(*s1)->device() == Device::process_default().get());
  CHECK(&(*s2)->device() == &(*s1)->device());
  CHECK(Device::process_default()->shares_weights());
}

// The cache's memory: entries below 2 MiB share 2 MiB-aligned slabs (huge pages for a model's
// many small matrices), 64-byte aligned, packed front to back without overlap; a slab lives while
// any of its entries does, and its neighbours' bytes survive one being released. Larger entries
// get their own 2 MiB-aligned block.
TEST_CASE("device: small packed weights share huge-page slabs") {
  auto dev = make_device(1, true);
  hal::WeightCache* cache = dev->shared()->weights;
  REQUIRE(cache != nullptr);
  struct Fill {
    uint8_t value;
    uint64_t bytes;
  };
  const hal::PackFn fill = [](void* ctx, void* dst) {
    const Fill* f = static_cast<const Fill*>(ctx);
    std::memset(dst, f->value, f->bytes);
  };
  const uint64_t kSlab = hal::kHugePageBytes;
  static const uint8_t sources[8] = {};
  const uint64_t sizes[8] = {700'000, 700'000, 100, 600'000, 5'000'000, 900'000, 1, 2'000'000};
  std::vector<const uint8_t*> got;
  for (int i = 0; i < 8; ++i) {
    Fill f{static_cast<uint8_t>(i + 1), sizes[i]};
    hal::PackedWeightKey key{&sources[i], 1, "test", {}};
    Result<const void*> p = cache->acquire(key, sizes[i], fill, &f);
    REQUIRE_MESSAGE(p.is_ok(), p.status().to_string());
    got.push_back(static_cast<const uint8_t*>(*p));
    CHECK(reinterpret_cast<uintptr_t>(*p) % hal::persistent_alignment(sizes[i]) == 0);
  }
  auto slab = [&](int i) { return reinterpret_cast<uintptr_t>(got[i]) / kSlab; };
  // 700 000 + 700 000 + 128 + 600 000 go to one slab; 900 000 does not fit there: a second; 1 byte
  // still does (the first slab with room).
  CHECK(slab(1) == slab(0));
  CHECK(slab(2) == slab(0));
  CHECK(slab(3) == slab(0));
  CHECK(got[1] == got[0] + 700'032);  // 64-byte aligned, front to back
  CHECK(slab(5) != slab(0));
  CHECK(slab(6) == slab(0));
  CHECK(reinterpret_cast<uintptr_t>(got[4]) % kSlab == 0);  // 5 MB and 2 MB: their own blocks
  CHECK(reinterpret_cast<uintptr_t>(got[7]) % kSlab == 0);
  CHECK(dev->weight_stats().bytes ==
        700'000 + 700'000 + 100 + 600'000 + 5'000'000 + 900'000 + 1 + 2'000'000);
  auto intact = [&](int i) {
    return std::all_of(got[i], got[i] + sizes[i],
                       [&](uint8_t b) { return b == static_cast<uint8_t>(i + 1); });
  };
  for (int i = 0; i < 8; ++i) CHECK(intact(i));
  // Releasing some entries of a slab keeps the others' bytes; a new small entry still fits.
  cache->release(got[0]);
  cache->release(got[2]);
  CHECK(intact(1));
  CHECK(intact(3));
  Fill f{9, 300'000};
  Result<const void*> p = cache->acquire({&sources[0], 2, "test", {}}, 300'000, fill, &f);
  REQUIRE(p.is_ok());
  CHECK(intact(1));
  CHECK(intact(3));
  for (int i : {1, 3, 4, 5, 6, 7}) cache->release(got[i]);
  cache->release(*p);
  CHECK(dev->weight_stats().entries == 0);
  CHECK(dev->weight_stats().bytes == 0);
}

}  // namespace
}  // namespace laya::test
